package raftstore

import (
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
	// ErrStorageFormat: the data directory holds a storage format this
	// binary cannot read (format.go).
	ErrStorageFormat = errors.New("raftstore: unreadable storage format")
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

func epochMatches(req *metapb.RegionEpoch, cur *metapb.Region) bool {
	if req == nil {
		return true // requests without an epoch skip the check
	}
	e := cur.GetRegionEpoch()
	return req.GetVersion() == e.GetVersion() && req.GetConfVer() == e.GetConfVer()
}
