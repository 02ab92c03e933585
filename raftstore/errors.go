package raftstore

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
)

// Sentinel errors.
var (
	// ErrCorrupt means persisted raftstore state could not be decoded.
	ErrCorrupt = errors.New("raftstore: corrupt engine state")
	// ErrStopped is returned to requests when the store shuts down.
	ErrStopped = errors.New("raftstore: store stopped")
	// ErrNoStoreID means PD did not hand out a store id.
	ErrNoStoreID = errors.New("raftstore: no store id")
	// ErrUndetermined is returned (possibly wrapping the cause, e.g.
	// ErrStopped) for a proposal whose entry may or may not be applied:
	// it reached raft, and the store cannot tell whether it will commit.
	// Callers must not report it as "not written" (clients map it to an
	// undetermined outcome).
	ErrUndetermined = errors.New("raftstore: proposal outcome undetermined")
	// ErrAdminNotSupported is returned by Propose for admin commands (not
	// implemented yet).
	ErrAdminNotSupported = errors.New("raftstore: admin commands are not supported by Propose")

	errStoppedUndetermined = fmt.Errorf("%w: %w", ErrUndetermined, ErrStopped)
)

// RegionError wraps a protobuf region error as a Go error, for callers that
// prefer error values; use errors.As to recover it.
type RegionError struct{ Err *errorpb.Error }

func (e *RegionError) Error() string { return "raftstore: region error: " + e.Err.GetMessage() }

func errNotLeader(regionID uint64, leader *metapb.Peer) *errorpb.Error {
	return &errorpb.Error{
		Message:   fmt.Sprintf("peer of region %d is not leader", regionID),
		NotLeader: &errorpb.NotLeader{RegionId: regionID, Leader: leader},
	}
}

// errStopping answers a write this store refused without proposing it
// because it is shutting down: NotLeader without a hint, so the client tries
// another replica (and knows nothing was written).
func errStopping(regionID uint64) *errorpb.Error {
	return &errorpb.Error{
		Message:   fmt.Sprintf("store is stopping; region %d is served by another replica", regionID),
		NotLeader: &errorpb.NotLeader{RegionId: regionID},
	}
}

func errRegionNotFound(regionID uint64) *errorpb.Error {
	return &errorpb.Error{
		Message:        fmt.Sprintf("region %d not found", regionID),
		RegionNotFound: &errorpb.RegionNotFound{RegionId: regionID},
	}
}

func errEpochNotMatch(cur *metapb.Region) *errorpb.Error {
	return &errorpb.Error{
		Message:       fmt.Sprintf("epoch of region %d does not match", cur.GetId()),
		EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{proto.Clone(cur).(*metapb.Region)}},
	}
}

func errStaleCommand() *errorpb.Error {
	return &errorpb.Error{Message: "stale command", StaleCommand: &errorpb.StaleCommand{}}
}

// ErrServerIsBusy builds a ServerIsBusy region error.
func ErrServerIsBusy(reason string) *errorpb.Error {
	return &errorpb.Error{Message: "server is busy: " + reason, ServerIsBusy: &errorpb.ServerIsBusy{Reason: reason}}
}

// CheckKeyInRegion returns a KeyNotInRegion error when key is outside region.
func CheckKeyInRegion(key []byte, region *metapb.Region) *errorpb.Error {
	if KeyInRegion(key, region) {
		return nil
	}
	return &errorpb.Error{
		Message: fmt.Sprintf("key %q not in region %d", key, region.GetId()),
		KeyNotInRegion: &errorpb.KeyNotInRegion{
			Key: key, RegionId: region.GetId(),
			StartKey: region.GetStartKey(), EndKey: region.GetEndKey(),
		},
	}
}

// KeyInRegion reports whether start_key <= key < end_key (empty end = +inf).
func KeyInRegion(key []byte, region *metapb.Region) bool {
	return bytes.Compare(key, region.GetStartKey()) >= 0 &&
		(len(region.GetEndKey()) == 0 || bytes.Compare(key, region.GetEndKey()) < 0)
}

// CheckRangeInRegion checks that [start, end) lies in region; an empty end
// means "to the region's end" and is always accepted.
func CheckRangeInRegion(start, end []byte, region *metapb.Region) *errorpb.Error {
	if e := CheckKeyInRegion(start, region); e != nil {
		return e
	}
	if len(end) == 0 || len(region.GetEndKey()) == 0 || bytes.Compare(end, region.GetEndKey()) <= 0 {
		return nil
	}
	return CheckKeyInRegion(end, region)
}

// ClampEnd returns the smaller of end and the region's end key (empty = +inf).
func ClampEnd(end []byte, region *metapb.Region) []byte {
	re := region.GetEndKey()
	if len(end) == 0 {
		return re
	}
	if len(re) != 0 && bytes.Compare(end, re) > 0 {
		return re
	}
	return end
}

func epochMatches(req *metapb.RegionEpoch, cur *metapb.Region) bool {
	if req == nil {
		return true // requests without an epoch skip the check
	}
	e := cur.GetRegionEpoch()
	return req.GetVersion() == e.GetVersion() && req.GetConfVer() == e.GetConfVer()
}
