package kvclient

import (
	"bytes"
	"context"

	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// defaultCopStoreBatch is Config.CopStoreBatch's default (TiDB's
// tidb_store_batch_size).
const defaultCopStoreBatch = 4

// copCall is one Coprocessor call: the request every task sends and the
// responses of each task (results[i] for tasks[i], in scan order), which
// each task's worker alone appends to.
type copCall struct {
	data     []byte
	ts       uint64
	resolved []uint64
	desc     bool
	results  [][]*coprocessorpb.SelectResponse
}

// copTask is the part of a call's ranges in one region: task i of the
// call, its region as located when the task was built, and the ranges
// still to read (sorted, inside the region).
type copTask struct {
	i      int
	region *locate.Region
	ranges []*kvrpcpb.KeyRange
}

// add records task t's response and advances t past it; it reports
// whether t is finished (no resume_key, or nothing left after it).
func (cc *copCall) add(t *copTask, sr *coprocessorpb.SelectResponse) bool {
	cc.results[t.i] = append(cc.results[t.i], sr)
	if len(sr.ResumeKey) == 0 {
		t.ranges = nil
		return true
	}
	t.ranges = resumeRanges(t.ranges, sr.ResumeKey, cc.desc)
	return len(t.ranges) == 0
}

// storeBatches groups tasks (in key order) into units of at most
// cfg.CopStoreBatch tasks whose regions' leaders are on the same store
// (TiDB's store batching): a unit is sent as one RPC carrying the first
// task as the request's region and the others as StoreBatchTasks. Units
// keep key order among their tasks; each unit lists task indices.
func (c *Client) storeBatches(tasks []copTask) [][]copTask {
	n := c.cfg.CopStoreBatch
	if n == 0 {
		n = defaultCopStoreBatch
	}
	units := make([][]copTask, 0, len(tasks))
	open := make(map[uint64]int) // store id → its unit being filled
	for _, t := range tasks {
		_, p := t.region.Leader()
		if u, ok := open[p.GetStoreId()]; ok && n > 1 && len(units[u]) < n {
			units[u] = append(units[u], t)
			continue
		}
		open[p.GetStoreId()] = len(units)
		units = append(units, []copTask{t})
	}
	return units
}

// copUnit runs the tasks of one unit. While more than one task is left
// it sends them as one batched RPC to the first task's leader store;
// each batched task's answer is its own: data (a task whose page ended
// stays for the next round, over the rest of its ranges), a lock (the call
// fails with *LockedError, as an unbatched one does), or a region error,
// after which that task is retried alone (copRanges re-locates it and
// re-splits its ranges). A region error of the first task, or a store that
// did not answer the batch, leaves every task left to go on alone, so a
// response is recorded exactly once per range and page: a task's result
// is only ever appended from a response that the task's own region
// answered without error.
func (c *Client) copUnit(ctx context.Context, bo *backoffer, cc *copCall, unit []copTask) error {
	pending := unit
	var alone []copTask
	for len(pending) > 1 {
		first := &pending[0]
		_, lp := first.region.Leader()
		rctx := kvrpcpb.Context{ResolvedLocks: cc.resolved}
		req := kvrpcpb.CoprocessorRequest{Context: &rctx, Data: cc.data, StartTs: cc.ts, Ranges: first.ranges}
		batched := make([]copTask, 0, len(pending)-1)
		for _, t := range pending[1:] {
			_, p := t.region.Leader()
			if p.GetStoreId() != lp.GetStoreId() {
				// Its leader moved since the unit was built.
				alone = append(alone, t)
				continue
			}
			req.Tasks = append(req.Tasks, &kvrpcpb.StoreBatchTask{
				RegionId: t.region.ID(), RegionEpoch: t.region.Epoch(), Peer: p, Ranges: t.ranges})
			batched = append(batched, t)
		}
		if len(batched) == 0 {
			pending = pending[:1]
			break
		}
		copBatchedTasks.Add(float64(len(batched)))
		wrap := Request{Cmd: &storepb.BatchCommandsRequest_Request_Coprocessor{Coprocessor: &req}}
		resp, retry, err := c.sendToRegion(ctx, bo, first.region, &wrap)
		if err != nil {
			return err
		}
		if retry {
			// The first task's region moved: nothing of this RPC is used.
			pending = append(pending[:1], batched...)
			break
		}
		cr := resp.GetCoprocessor()
		sr, err := decodeCopResponse(cr, first.region.ID())
		if err != nil {
			return err
		}
		next := make([]copTask, 0, len(pending))
		if !cc.add(first, sr) {
			next = append(next, *first)
		}
		if len(cr.GetBatchResponses()) != len(batched) {
			// A store that does not serve store batching answered the
			// first task only.
			alone = append(alone, batched...)
			pending = next
			continue
		}
		for j := range batched {
			t, tr := &batched[j], cr.BatchResponses[j]
			if re := tr.GetRegionError(); re != nil {
				idx, p := t.region.Leader()
				if _, err := c.onRegionError(ctx, bo, t.region, idx, p, kindCop, re); err != nil {
					return err
				}
				alone = append(alone, *t)
				continue
			}
			sr, err := decodeCopResponse(&kvrpcpb.CoprocessorResponse{Locked: tr.Locked, OtherError: tr.OtherError, Data: tr.Data}, t.region.ID())
			if err != nil {
				return err
			}
			if !cc.add(t, sr) {
				next = append(next, *t)
			}
		}
		pending = next
	}
	for _, t := range append(pending, alone...) {
		if len(t.ranges) == 0 {
			continue
		}
		out, err := c.copRanges(ctx, bo, cc, t.ranges, cc.results[t.i])
		if err != nil {
			return err
		}
		cc.results[t.i] = out
	}
	return nil
}

// resumeRanges is what is left of sorted rs after a page that ended at
// resume (a store's resume_key): ascending, the parts at or after resume;
// descending (resume is an exclusive end), the parts before it. It never
// modifies rs or its elements.
func resumeRanges(rs []*kvrpcpb.KeyRange, resume []byte, desc bool) []*kvrpcpb.KeyRange {
	if desc {
		var out []*kvrpcpb.KeyRange
		for _, kr := range rs {
			if bytes.Compare(kr.Start, resume) >= 0 {
				break
			}
			if len(kr.End) == 0 || bytes.Compare(kr.End, resume) > 0 {
				kr = &kvrpcpb.KeyRange{Start: kr.Start, End: resume}
			}
			out = append(out, kr)
		}
		return out
	}
	for i, kr := range rs {
		if len(kr.End) != 0 && bytes.Compare(kr.End, resume) <= 0 {
			continue
		}
		if bytes.Compare(kr.Start, resume) >= 0 {
			return rs[i:]
		}
		return append([]*kvrpcpb.KeyRange{{Start: resume, End: kr.End}}, rs[i+1:]...)
	}
	return nil
}

// dagDesc reports whether dag scans in descending key order.
func dagDesc(dag *coprocessorpb.DAGRequest) bool {
	if len(dag.GetExecutors()) == 0 {
		return false
	}
	e := dag.GetExecutors()[0]
	return e.GetTblScan().GetDesc() || e.GetIdxScan().GetDesc()
}
