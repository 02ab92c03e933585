// Package regionkeys checks user keys and ranges against a region's
// [start_key, end_key) (an empty end_key is +infinity) and builds the
// KeyNotInRegion region error. raftstore, store/txn and store/gc share it so that
// store/txn and store/gc need not import raftstore. Functions are pure and safe
// for concurrent use; returned slices alias the arguments or the region.
package regionkeys

import (
	"bytes"
	"fmt"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
)

// KeyIn reports whether start_key <= key < end_key.
func KeyIn(key []byte, region *metapb.Region) bool {
	return bytes.Compare(key, region.GetStartKey()) >= 0 &&
		(len(region.GetEndKey()) == 0 || bytes.Compare(key, region.GetEndKey()) < 0)
}

// CheckKey returns a KeyNotInRegion error when key is outside region.
func CheckKey(key []byte, region *metapb.Region) *errorpb.Error {
	if KeyIn(key, region) {
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

// CheckRange checks that [start, end) lies in region; an empty end means
// "to the region's end" and is always accepted.
func CheckRange(start, end []byte, region *metapb.Region) *errorpb.Error {
	if e := CheckKey(start, region); e != nil {
		return e
	}
	if len(end) == 0 || len(region.GetEndKey()) == 0 || bytes.Compare(end, region.GetEndKey()) <= 0 {
		return nil
	}
	return CheckKey(end, region)
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

// ClampStart returns the larger of start and the region's start key.
func ClampStart(start []byte, region *metapb.Region) []byte {
	if bytes.Compare(start, region.GetStartKey()) < 0 {
		return region.GetStartKey()
	}
	return start
}
