package kv

import "context"

// RegionAdmin is implemented by a Storage that can split and list the
// cluster's regions (SPLIT TABLE, SHOW TABLE ... REGIONS).
type RegionAdmin interface {
	// SplitRegions splits the regions holding keys so that each key starts
	// a region; a key already on a boundary is skipped. It returns how
	// many regions were created.
	SplitRegions(ctx context.Context, keys [][]byte) (int, error)
	// ScanRegions lists the regions overlapping [start, end) in key order
	// (an empty end: to the end of the key space).
	ScanRegions(ctx context.Context, start, end []byte) ([]RegionInfo, error)
}

// RegionInfo is one region as PD last heard of it.
type RegionInfo struct {
	ID               uint64
	StartKey, EndKey []byte
	// LeaderID and LeaderStoreID are 0 while no leader has reported.
	LeaderID, LeaderStoreID uint64
	PeerIDs                 []uint64
	// Statistics of the leader's last heartbeat.
	WrittenBytes, ReadBytes          uint64
	ApproximateSize, ApproximateKeys uint64
}
