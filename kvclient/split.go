package kvclient

import (
	"bytes"
	"context"
	"slices"

	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// SplitRegions splits the regions holding keys so that every key starts a
// region (TiKV's SplitRegion, one request per region with all its keys,
// sent to the region's leader). A key already on a region boundary is
// skipped. It returns the number of regions created. Region errors are
// retried with the failed region's keys regrouped; a request lost after
// it was sent fails with an error wrapping ErrUndetermined (some splits
// may be done: running the same split again is harmless).
func (c *Client) SplitRegions(ctx context.Context, keys [][]byte) (int, error) {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	bo := c.NewBackoffer()
	created := 0
	err := c.OnSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] },
		func(r *locate.Region, lo, hi int) (bool, error) {
			req := &Request{Cmd: &storepb.BatchCommandsRequest_Request_SplitRegion{SplitRegion: &kvrpcpb.SplitRegionRequest{SplitKeys: keys[lo:hi]}}}
			resp, retry, err := c.SendRequest(ctx, bo, r, req)
			if err != nil || retry {
				return retry, err
			}
			regions := resp.GetSplitRegion().GetRegions()
			if n := len(regions) - 1; n > 0 {
				created += n
				// r is stale now; the new regions' leaders start on the
				// store that split them: route there at once rather than
				// learn the new regions from errors.
				_, leader := r.Leader()
				c.cache.OnEpochNotMatch(r, regions, leader.GetStoreId())
			}
			return false, nil
		})
	return created, err
}
