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

// AffinityAdmin keeps PD's data affinity groups: the tables whose regions
// PD places on the same stores with one leader store (TiDB's AFFINITY
// table option; pd/schedule/affinity.go).
type AffinityAdmin interface {
	// SetAffinityTables adds tables to and removes them from the groups
	// in one change.
	SetAffinityTables(ctx context.Context, add, remove []int64) error
	// AffinityGroups returns the groups of tableIDs, or of every
	// configured table when tableIDs is empty.
	AffinityGroups(ctx context.Context, tableIDs []int64) ([]AffinityGroup, error)
}

// AffinityGroup is one table's affinity group as PD reports it.
type AffinityGroup struct {
	TableID    int64
	Configured bool // the table is in PD's affinity tables
	// LeaderStoreID and VoterStoreIDs are the target (0 / nil while PD
	// has chosen none).
	LeaderStoreID       uint64
	VoterStoreIDs       []uint64
	Phase               string // pending, preparing or stable
	RegionCount         int
	AffinityRegionCount int // regions already on the target
}
