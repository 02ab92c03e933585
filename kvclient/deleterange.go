package kvclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// ErrDeleteRangeRefused: a store refused a DeleteRange request as malformed.
var ErrDeleteRangeRefused = errors.New("kvclient: delete range refused")

// DeleteRangeStats is what DeleteRange did.
type DeleteRangeStats struct {
	// Regions is the number of per-region requests that succeeded.
	Regions int
	// ApproximateBytes sums the leaders' estimates of the disk space the
	// range took before the deletion.
	ApproximateBytes uint64
}

// DeleteRange removes every key of [start, end) (end not empty) from the
// stores, region by region: the range is cut at the region boundaries of the
// region cache and each piece goes to its region's leader as a KvDeleteRange
// request, which replicates one raft command of range deletions carrying
// safePoint (see kvrpcpb.DeleteRangeRequest). Region errors (NotLeader,
// EpochNotMatch, ...) are retried as for every other request, with the piece
// located again. The caller must guarantee that no reader at or above
// safePoint can see the range (the GC safe point passed the drop of the
// table or index it held). Deleting a range twice is harmless, so an error
// (ErrUndetermined among them) leaves the caller to run it again.
func (c *Client) DeleteRange(ctx context.Context, start, end []byte, safePoint uint64) (DeleteRangeStats, error) {
	var st DeleteRangeStats
	if len(end) == 0 || bytes.Compare(start, end) >= 0 {
		return st, fmt.Errorf("%w: [%x, %x) is empty or unbounded", ErrDeleteRangeRefused, start, end)
	}
	bo := c.NewBackoffer()
	key := bytes.Clone(start)
	for bytes.Compare(key, end) < 0 {
		r, err := c.Locate(ctx, bo, key)
		if err != nil {
			return st, fmt.Errorf("kvclient: delete range: locate %x: %w", key, err)
		}
		pieceEnd := end
		if re := r.EndKey(); len(re) > 0 && bytes.Compare(re, end) < 0 {
			pieceEnd = re
		}
		req := &Request{Cmd: &storepb.BatchCommandsRequest_Request_DeleteRange{DeleteRange: &kvrpcpb.DeleteRangeRequest{
			StartKey: key, EndKey: pieceEnd, GcSafePoint: safePoint,
		}}}
		resp, retry, err := c.SendRequest(ctx, bo, r, req)
		if err != nil {
			return st, fmt.Errorf("kvclient: delete range in region %d: %w", r.ID(), err)
		}
		if retry {
			continue
		}
		dr := resp.GetDeleteRange()
		if dr.GetError() != "" {
			return st, fmt.Errorf("%w: region %d: %s", ErrDeleteRangeRefused, r.ID(), dr.GetError())
		}
		st.Regions++
		st.ApproximateBytes += dr.GetApproximateSize()
		key = pieceEnd
	}
	return st, nil
}
