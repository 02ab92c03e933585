package tso

// LogicalBits is the width of the logical part of a timestamp.
const LogicalBits = 18

// MaxLogical is the exclusive upper bound of the logical part.
const MaxLogical = int64(1) << LogicalBits

// ComposeTS packs physical milliseconds and a logical counter into a
// timestamp. logical must be in [0, MaxLogical).
func ComposeTS(physical, logical int64) uint64 {
	return uint64(physical)<<LogicalBits | uint64(logical)
}

// ParseTS splits a timestamp into physical milliseconds and logical counter.
func ParseTS(ts uint64) (physical, logical int64) {
	return int64(ts >> LogicalBits), int64(ts & uint64(MaxLogical-1))
}

// Physical is the physical part of ts: PD's clock in milliseconds.
func Physical(ts uint64) int64 { return int64(ts >> LogicalBits) }
