package raftstore

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
)

// Engine key spaces (first byte). See doc.go for the full layout.
const (
	localPrefix byte = 0x01 // store ident, region local state
	raftPrefix  byte = 0x02 // raft hard state and log entries per region
	applyPrefix byte = 0x03 // apply state per region
)

// Suffixes inside the key spaces.
const (
	storeIdentSuffix  byte = 0x01
	regionStateSuffix byte = 0x02
	snapApplySuffix   byte = 0x03
	gcSafePointSuffix byte = 0x04
	formatSuffix      byte = 0x05
	hardStateSuffix   byte = 0x01
	entrySuffix       byte = 0x02
)

// Peer states stored in the region local state.
const (
	peerStateNormal    byte = 0
	peerStateTombstone byte = 1
	// peerStateApplying: a snapshot's raft state is persisted, its files
	// may not be ingested yet (snapinstall.go).
	peerStateApplying byte = 2
)

// Initial raft state shared by every replica of a region created by PD (like
// TiKV): the log starts "truncated" at index 5 / term 5 and the voters are the
// region's peers, so no conf-change entries are needed to form the group.
const (
	initIndex uint64 = 5
	initTerm  uint64 = 5
)

func storeIdentKey() []byte { return []byte{localPrefix, storeIdentSuffix} }

// formatKey holds the storage format of the engine's data (format.go).
func formatKey() []byte { return []byte{localPrefix, formatSuffix} }

func regionStateKey(regionID uint64) []byte {
	k := []byte{localPrefix, regionStateSuffix}
	return binary.BigEndian.AppendUint64(k, regionID)
}

func regionStateRange() (lower, upper []byte) {
	return []byte{localPrefix, regionStateSuffix}, []byte{localPrefix, regionStateSuffix + 1}
}

// snapApplyKey holds the record of a snapshot install in progress
// (snapinstall.go).
func snapApplyKey(regionID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{localPrefix, snapApplySuffix}, regionID)
}

func snapApplyRange() (lower, upper []byte) {
	return []byte{localPrefix, snapApplySuffix}, []byte{localPrefix, snapApplySuffix + 1}
}

// gcSafePointKey holds the newest GC safe point data was collected under
// on this store (gcsafepoint.go).
func gcSafePointKey() []byte { return []byte{localPrefix, gcSafePointSuffix} }

func hardStateKey(regionID uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{raftPrefix}, regionID)
	return append(k, hardStateSuffix)
}

func entryKey(regionID, index uint64) []byte {
	k := make([]byte, 0, 18)
	k = append(k, raftPrefix)
	k = binary.BigEndian.AppendUint64(k, regionID)
	k = append(k, entrySuffix)
	return binary.BigEndian.AppendUint64(k, index)
}

// entryRange bounds region regionID's log entries and nothing else (the
// next region's hard state sorts right after them).
func entryRange(regionID uint64) (lower, upper []byte) {
	lower = entryKey(regionID, 0)
	upper = binary.BigEndian.AppendUint64([]byte{raftPrefix}, regionID)
	return lower, append(upper, entrySuffix+1)
}

func entryIndexFromKey(k []byte) uint64 { return binary.BigEndian.Uint64(k[10:]) }

func applyStateKey(regionID uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{applyPrefix}, regionID)
}

// applyState is the per-region apply progress, written in the same batch as
// the data of the entries it covers.
type applyState struct {
	applied        uint64
	truncatedIndex uint64
	truncatedTerm  uint64
}

func (a applyState) encode() []byte {
	b := make([]byte, 0, 24)
	b = binary.BigEndian.AppendUint64(b, a.applied)
	b = binary.BigEndian.AppendUint64(b, a.truncatedIndex)
	return binary.BigEndian.AppendUint64(b, a.truncatedTerm)
}

func decodeApplyState(b []byte) (applyState, error) {
	if len(b) != 24 {
		return applyState{}, fmt.Errorf("%w: apply state of %d bytes", ErrCorrupt, len(b))
	}
	return applyState{
		applied:        binary.BigEndian.Uint64(b),
		truncatedIndex: binary.BigEndian.Uint64(b[8:]),
		truncatedTerm:  binary.BigEndian.Uint64(b[16:]),
	}, nil
}

// encodeRegionState is peer state byte | marshalled metapb.Region.
func encodeRegionState(state byte, r *metapb.Region) ([]byte, error) {
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("raftstore: marshal region %d: %w", r.GetId(), err)
	}
	return append([]byte{state}, b...), nil
}

func decodeRegionState(b []byte) (byte, *metapb.Region, error) {
	if len(b) < 1 {
		return 0, nil, fmt.Errorf("%w: empty region state", ErrCorrupt)
	}
	r := &metapb.Region{}
	if err := proto.Unmarshal(b[1:], r); err != nil {
		return 0, nil, fmt.Errorf("%w: region state: %v", ErrCorrupt, err)
	}
	return b[0], r, nil
}
