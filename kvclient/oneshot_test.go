package kvclient

// One-shot reads outside any transaction: no lock is resolved or waited
// for, so the product never uses them (transactions read through
// kvclient/txn's snapshot); the tests of routing, retries and batching
// here do.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// getState is the per-call request memory of Get, pooled: the request has
// been marshalled (unary) or answered (batched) by the time the call
// returns, so it can be reused.
type getState struct {
	req  kvrpcpb.GetRequest
	rctx kvrpcpb.Context
	cmd  storepb.BatchCommandsRequest_Request_Get
	wrap Request
}

var getPool = sync.Pool{New: func() any { return new(getState) }}

// Get reads the newest version of key committed at or before ts. The
// returned value is owned by the caller. found is false when the key has no
// live version at ts.
func (c *Client) Get(ctx context.Context, key []byte, ts uint64) (value []byte, found bool, err error) {
	st := getPool.Get().(*getState)
	st.req.Key, st.req.Version, st.req.Context = key, ts, &st.rctx
	st.cmd.Get = &st.req
	st.wrap.Cmd = &st.cmd
	bo := newBackoffer(c.cfg.BackoffBudget)
	for {
		r, err := c.locate(ctx, &bo, key)
		if err != nil {
			return nil, false, err
		}
		resp, retry, err := c.sendToRegion(ctx, &bo, r, &st.wrap)
		if err != nil {
			// A request abandoned in flight may still be read by the
			// transport: do not reuse its memory.
			return nil, false, err
		}
		if retry {
			continue
		}
		g := resp.GetGet()
		st.req.Key, st.req.Context = nil, nil
		st.rctx.RegionEpoch, st.rctx.Peer = nil, nil
		getPool.Put(st)
		if g.Error != nil {
			return nil, false, fmt.Errorf("kvclient: get %q: %w", key, keyError(g.Error))
		}
		if g.NotFound {
			return nil, false, nil
		}
		return g.Value, true, nil
	}
}

// Scan returns the pairs in [start, end) visible at ts, in key order, across
// regions. end nil or empty means +infinity; limit 0 means no limit. The
// returned pairs are owned by the caller.
func (c *Client) Scan(ctx context.Context, start, end []byte, ts uint64, limit int) ([]*kvrpcpb.KvPair, error) {
	if limit < 0 {
		return nil, fmt.Errorf("kvclient: scan: negative limit %d", limit)
	}
	if len(end) != 0 && bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	var (
		out  []*kvrpcpb.KvPair
		rctx kvrpcpb.Context
		req  = kvrpcpb.ScanRequest{Context: &rctx, Version: ts}
		wrap = Request{Cmd: &storepb.BatchCommandsRequest_Request_Scan{Scan: &req}}
	)
	bo := newBackoffer(c.cfg.BackoffBudget)
	cur := start
	for {
		r, err := c.locate(ctx, &bo, cur)
		if err != nil {
			return nil, err
		}
		regionEnd := r.EndKey()
		req.StartKey, req.EndKey = cur, end
		if len(regionEnd) != 0 && (len(end) == 0 || bytes.Compare(regionEnd, end) < 0) {
			req.EndKey = regionEnd
		}
		req.Limit = 0
		if limit > 0 {
			req.Limit = uint32(min(limit-len(out), math.MaxUint32))
		}
		sr, retry, err := c.sendToRegion(ctx, &bo, r, &wrap)
		if err != nil {
			return nil, err
		}
		if retry {
			continue
		}
		resp := sr.GetScan()
		if resp.Error != nil {
			return nil, fmt.Errorf("kvclient: scan [%q, %q) region %d: %w", cur, req.EndKey, r.ID(), keyError(resp.Error))
		}
		out = append(out, resp.Pairs...)
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
		if len(regionEnd) == 0 || (len(end) != 0 && bytes.Compare(regionEnd, end) >= 0) {
			return out, nil
		}
		cur = regionEnd
	}
}
