package kvclient

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// copConcurrency bounds the RPCs one Coprocessor call has in flight.
const copConcurrency = 8

// Coprocessor sends dag once per region overlapping ranges, each time with
// the ranges clipped to that region, and returns the decoded responses in
// region (key) order. Regions whose leaders share a store go up to
// Config.CopStoreBatch per RPC (store batching, copbatch.go); the RPCs
// are sent in parallel, at most copConcurrency at a time, the caller's
// goroutine being one of the workers; the first error cancels the others
// and is returned. A store that ends a page (DAGRequest.page_ms) is asked
// again for the rest of its region's ranges, so a region may answer
// several responses, in scan order. ranges should not
// overlap; they are sorted by start key here (the caller's slice and ranges
// are not modified). A range with an empty end extends to +infinity.
//
// With dag.paging_size set, Coprocessor answers one page instead: it
// queries only the region holding the first range's start, with every
// range (part) in that region, and returns its one response, whose
// resume_key is where the next page starts (the store's, or the region's
// end when the region is exhausted and the ranges go on; unset when the
// ranges are exhausted). The caller resumes with the ranges clipped to
// start there. A descending scan pages from the other end: the region
// holding the last range's end, resume_key being where the next page
// ends (exclusive). So a scan holds one page in memory, a read of many
// ranges costs a request per region and page rather than per range, and
// no region is asked for rows that would be thrown away.
func (c *Client) Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error) {
	return c.CoprocessorResolved(ctx, dag, ranges, ts, nil)
}

// CoprocessorResolved is Coprocessor for a reader that resolved some locks
// already: resolved are the start_ts of transactions whose locks the
// stores read through (Context.resolved_locks). A lock met is returned as
// a *LockedError for the caller to resolve.
func (c *Client) CoprocessorResolved(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64, resolved []uint64) ([]*coprocessorpb.SelectResponse, error) {
	data, err := proto.Marshal(dag)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal dag: %w", ErrCoprocessor, err)
	}
	rs := make([]*kvrpcpb.KeyRange, 0, len(ranges))
	for _, kr := range ranges {
		if len(kr.End) == 0 || bytes.Compare(kr.Start, kr.End) < 0 {
			rs = append(rs, kr)
		}
	}
	slices.SortFunc(rs, func(a, b *kvrpcpb.KeyRange) int { return bytes.Compare(a.Start, b.Start) })

	bo := newBackoffer(c.cfg.BackoffBudget)
	if dag.GetPagingSize() > 0 && len(rs) > 0 {
		return c.copPage(ctx, &bo, data, ts, resolved, rs, dagDesc(dag))
	}
	// Split the ranges by region up front: one task per region.
	var tasks []copTask
	for rest := rs; len(rest) > 0; {
		r, err := c.locate(ctx, &bo, rest[0].Start)
		if err != nil {
			return nil, err
		}
		var in []*kvrpcpb.KeyRange
		in, rest = clipRanges(r.EndKey(), rest)
		tasks = append(tasks, copTask{i: len(tasks), region: r, ranges: in})
	}
	if len(tasks) == 0 {
		return nil, nil
	}
	cc := &copCall{data: data, ts: ts, resolved: resolved, desc: dagDesc(dag), results: make([][]*coprocessorpb.SelectResponse, len(tasks))}
	if units := c.storeBatches(tasks); len(units) == 1 {
		if err := c.copUnit(ctx, &bo, cc, units[0]); err != nil {
			return nil, err
		}
	} else if err := c.copUnits(ctx, &bo, cc, units); err != nil {
		return nil, err
	}
	n := 0
	for _, r := range cc.results {
		n += len(r)
	}
	out := make([]*coprocessorpb.SelectResponse, 0, n)
	for _, r := range cc.results {
		out = append(out, r...)
	}
	return out, nil
}

// copUnits runs units in parallel, at most copConcurrency at a time, the
// caller's goroutine being one of the workers; the first error cancels
// the others and is returned.
func (c *Client) copUnits(ctx context.Context, bo *backoffer, cc *copCall, units [][]copTask) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int32
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	worker := func(bo *backoffer) {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(units) || ctx.Err() != nil {
				return
			}
			if err := c.copUnit(ctx, bo, cc, units[i]); err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
				return
			}
		}
	}
	for range min(len(units), copConcurrency) - 1 {
		sub := bo.fork()
		wg.Go(func() { worker(sub) })
	}
	worker(bo.fork())
	wg.Wait()
	return firstErr
}

// copRanges runs the coprocessor request over sorted rs, one region at a
// time in key order (usually rs lies in one region; after a split it may
// not), and appends the responses to out. A response with a resume_key
// (the store ended a page: DAGRequest.page_ms, page_scan_rows) is
// followed by the same request over the rest of the region's ranges, so
// out may hold several responses per region, in scan order.
func (c *Client) copRanges(ctx context.Context, bo *backoffer, cc *copCall, rs []*kvrpcpb.KeyRange, out []*coprocessorpb.SelectResponse) ([]*coprocessorpb.SelectResponse, error) {
	var (
		rctx = kvrpcpb.Context{ResolvedLocks: cc.resolved}
		req  = kvrpcpb.CoprocessorRequest{Context: &rctx, Data: cc.data, StartTs: cc.ts}
		wrap = Request{Cmd: &storepb.BatchCommandsRequest_Request_Coprocessor{Coprocessor: &req}}
	)
	for len(rs) > 0 {
		r, err := c.locate(ctx, bo, rs[0].Start)
		if err != nil {
			return nil, err
		}
		in, rest := clipRanges(r.EndKey(), rs)
		req.Ranges = in
		resp, retry, err := c.sendToRegion(ctx, bo, r, &wrap)
		if err != nil {
			return nil, err
		}
		if retry {
			continue
		}
		sr, err := decodeCopResponse(resp.GetCoprocessor(), r.ID())
		if err != nil {
			return nil, err
		}
		out = append(out, sr)
		if len(sr.ResumeKey) > 0 {
			in = resumeRanges(in, sr.ResumeKey, cc.desc)
			rs = append(in[:len(in):len(in)], rest...)
			continue
		}
		rs = rest
	}
	return out, nil
}

// copPage runs one page of a paging request: over the part of sorted rs
// in the region holding rs[0].Start (desc: the region holding the end of
// the last range, scanned backwards), and returns its response with
// resume_key set to where the next page starts (desc: where it ends,
// exclusive).
func (c *Client) copPage(ctx context.Context, bo *backoffer, data []byte, ts uint64, resolved []uint64, rs []*kvrpcpb.KeyRange, desc bool) ([]*coprocessorpb.SelectResponse, error) {
	var (
		rctx = kvrpcpb.Context{ResolvedLocks: resolved}
		req  = kvrpcpb.CoprocessorRequest{Context: &rctx, Data: data, StartTs: ts}
		wrap = Request{Cmd: &storepb.BatchCommandsRequest_Request_Coprocessor{Coprocessor: &req}}
	)
	for {
		var (
			r        *locate.Region
			err      error
			in, rest []*kvrpcpb.KeyRange
		)
		if desc {
			r, err = c.locateLast(ctx, bo, rs[len(rs)-1])
		} else {
			r, err = c.locate(ctx, bo, rs[0].Start)
		}
		if err != nil {
			return nil, err
		}
		if desc {
			rest, in = clipRangesBefore(r.StartKey(), rs)
		} else {
			in, rest = clipRanges(r.EndKey(), rs)
		}
		req.Ranges = in
		resp, retry, err := c.sendToRegion(ctx, bo, r, &wrap)
		if err != nil {
			return nil, err
		}
		if retry {
			continue
		}
		sr, err := decodeCopResponse(resp.GetCoprocessor(), r.ID())
		if err != nil {
			return nil, err
		}
		if len(sr.ResumeKey) == 0 && len(rest) > 0 {
			if desc {
				sr.ResumeKey = rest[len(rest)-1].End
			} else {
				sr.ResumeKey = rest[0].Start
			}
		}
		return []*coprocessorpb.SelectResponse{sr}, nil
	}
}

// locateLast is the region holding the last keys of range kr: the one
// holding its start, or after a split a later one, up to the one its end
// falls in.
func (c *Client) locateLast(ctx context.Context, bo *backoffer, kr *kvrpcpb.KeyRange) (*locate.Region, error) {
	r, err := c.locate(ctx, bo, kr.Start)
	for err == nil && len(r.EndKey()) > 0 && (len(kr.End) == 0 || bytes.Compare(r.EndKey(), kr.End) < 0) {
		r, err = c.locate(ctx, bo, r.EndKey())
	}
	return r, err
}

// clipRangesBefore splits sorted ranges rs, the last of which ends in a
// region starting at start, into the parts before start and those inside
// that region. Like clipRanges it allocates new KeyRanges for a split
// range and never modifies rs or its elements.
func clipRangesBefore(start []byte, rs []*kvrpcpb.KeyRange) (before, in []*kvrpcpb.KeyRange) {
	for i, kr := range rs {
		if len(kr.End) != 0 && bytes.Compare(kr.End, start) <= 0 {
			continue
		}
		if bytes.Compare(kr.Start, start) >= 0 {
			return rs[:i:i], rs[i:]
		}
		before = append(slices.Clip(rs[:i]), &kvrpcpb.KeyRange{Start: kr.Start, End: start})
		in = append([]*kvrpcpb.KeyRange{{Start: start, End: kr.End}}, rs[i+1:]...)
		return before, in
	}
	return rs, nil
}

// clipRanges splits sorted ranges rs, the first of which starts in a region
// ending at end (empty = +infinity), into the parts inside that region and
// the rest. It allocates new KeyRanges for split ranges and never modifies rs
// or its elements.
func clipRanges(end []byte, rs []*kvrpcpb.KeyRange) (in, rest []*kvrpcpb.KeyRange) {
	if len(end) == 0 {
		return rs, nil
	}
	for i, kr := range rs {
		if bytes.Compare(kr.Start, end) >= 0 {
			return rs[:i:i], rs[i:]
		}
		if len(kr.End) != 0 && bytes.Compare(kr.End, end) <= 0 {
			continue
		}
		in = append(slices.Clip(rs[:i]), &kvrpcpb.KeyRange{Start: kr.Start, End: end})
		rest = append([]*kvrpcpb.KeyRange{{Start: end, End: kr.End}}, rs[i+1:]...)
		return in, rest
	}
	return rs, nil
}

func decodeCopResponse(resp *kvrpcpb.CoprocessorResponse, regionID uint64) (*coprocessorpb.SelectResponse, error) {
	if resp.Locked != nil {
		return nil, fmt.Errorf("%w: region %d: %w", ErrCoprocessor, regionID, keyError(resp.Locked))
	}
	if resp.OtherError != "" {
		return nil, fmt.Errorf("%w: region %d: %s", ErrCoprocessor, regionID, resp.OtherError)
	}
	sr := new(coprocessorpb.SelectResponse)
	if err := proto.Unmarshal(resp.Data, sr); err != nil {
		return nil, fmt.Errorf("%w: region %d: decode response: %w", ErrCoprocessor, regionID, err)
	}
	if e := sr.GetError(); e != nil {
		return nil, &CopExprError{RegionID: regionID, Code: uint16(e.GetCode()), Msg: e.GetMsg()}
	}
	return sr, nil
}
