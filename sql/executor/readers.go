package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Paging of range reads (TiDB's coprocessor paging): the first request
// asks for minPage rows (or the pushed-down limit), each next one for
// twice as many, up to maxPage, so a LIMIT stops the scan early and a
// large scan holds at most maxPage rows of one request in memory. A
// reader with a pushed-down LIMIT hands its chunk over at the end of a
// page rather than asking for the next one to fill it
// (keyPager.handOver). Through
// the coprocessor a page is one request to one region (paging_size, the
// store's resume key) over every range left in it (keyPager.fetchCop),
// never a page from every region of the ranges.
const (
	minPage = 256
	maxPage = 8192
)

func decodeRowInto(src *planner.Source, key, val []byte, row []datum) error {
	if err := src.Table.DecodeRow(key, val, row); err != nil {
		return fmt.Errorf("decode row of %s: %w", src.Table.Name, err)
	}
	return nil
}

type dualOp struct {
	rows, w int
	done    bool
}

func (o *dualOp) Open(context.Context) error { o.done = false; return nil }
func (o *dualOp) Close() error               { return nil }
func (o *dualOp) width() int                 { return o.w }
func (o *dualOp) Next(_ context.Context, ck *Chunk) error {
	ck.reset()
	if !o.done {
		for range o.rows {
			ck.alloc()
		}
		o.done = true
	}
	return nil
}

// rowsOp returns rows computed when it opens (a MemTable's), padded to the
// source's row width (the hidden handle slot stays NULL).
type rowsOp struct {
	load func(ctx context.Context) ([][]datum, error)
	w    int
	rows [][]datum
	pos  int
}

func (o *rowsOp) Open(ctx context.Context) error {
	rows, err := o.load(ctx)
	o.rows, o.pos = rows, 0
	return err
}
func (o *rowsOp) Close() error { o.rows = nil; return nil }
func (o *rowsOp) width() int   { return o.w }
func (o *rowsOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	ck.reserve(len(o.rows) - o.pos)
	for o.pos < len(o.rows) && !ck.full() {
		copy(ck.alloc(), o.rows[o.pos])
		o.pos++
	}
	return ctx.Err()
}

// unionOp returns the rows of its children, one child after the other
// (UNION ALL); every child has the same width.
type unionOp struct {
	children []Operator
	cur      int
	opened   int // children opened so far (closed by Close)
}

func (o *unionOp) Open(ctx context.Context) error {
	o.cur, o.opened = 0, 0
	if len(o.children) == 0 {
		return nil
	}
	o.opened = 1
	return o.children[0].Open(ctx)
}

func (o *unionOp) Close() error {
	var first error
	for _, c := range o.children[:o.opened] {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.opened = 0
	return first
}

func (o *unionOp) width() int { return o.children[0].width() }

func (o *unionOp) Next(ctx context.Context, ck *Chunk) error {
	for o.cur < len(o.children) {
		if err := o.children[o.cur].Next(ctx, ck); err != nil {
			return err
		}
		if len(ck.rows) > 0 {
			return nil
		}
		o.cur++
		if o.cur < len(o.children) {
			o.opened = o.cur + 1
			if err := o.children[o.cur].Open(ctx); err != nil {
				return err
			}
		}
	}
	ck.reset()
	return nil
}

// padOp widens its child's rows to w datums (a derived table's rows get
// the source's hidden handle slot, NULL).
type padOp struct {
	child Operator
	w     int
	in    *Chunk
}

func (o *padOp) Open(ctx context.Context) error { return o.child.Open(ctx) }
func (o *padOp) Close() error                   { return o.child.Close() }
func (o *padOp) width() int                     { return o.w }
func (o *padOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	if o.in == nil || o.in.max != ck.max {
		o.in = newChunk(o.child.width(), ck.max)
	}
	if err := o.child.Next(ctx, o.in); err != nil {
		return err
	}
	for _, r := range o.in.rows {
		copy(ck.alloc(), r)
	}
	return nil
}

// pointGetOp reads one row by handle or unique index value.
type pointGetOp struct {
	rc   *runCtx
	p    *planner.PointGet
	done bool
}

func (o *pointGetOp) Open(context.Context) error { o.done = false; return nil }
func (o *pointGetOp) Close() error               { return nil }
func (o *pointGetOp) width() int                 { return len(o.p.Src.Cols) }

func (o *pointGetOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	if o.done {
		return nil
	}
	o.done = true
	ck.reserve(1)
	row := ck.alloc()
	found, err := o.rc.readPoint(ctx, o.p, row)
	if !found {
		ck.reset()
	}
	return err
}

// readPoint reads p's row into row (width len(p.Src.Cols)).
func (rc *runCtx) readPoint(ctx context.Context, p *planner.PointGet, row []datum) (bool, error) {
	tbl := p.Src.Table
	key := p.Key()
	if !p.ReadsRowKey() {
		v, found, err := rc.txn.Get(ctx, key)
		if err != nil || !found {
			return false, err
		}
		h, err := tablecodec.DecodeIndexHandle(tablecodec.Handle{}, false, v, tbl.CommonHandle)
		if err != nil {
			return false, err
		}
		key = tablecodec.AppendHandleRowKey(nil, tbl.ID, h)
	}
	val, found, err := rc.txn.Get(ctx, key)
	if err != nil || !found {
		if err == nil && !p.ReadsRowKey() {
			return false, inconsistent(p.Src, key)
		}
		return false, err
	}
	return true, decodeRowInto(p.Src, key, val, row)
}

// inconsistent is the error for an index entry whose row (key) is
// missing.
func inconsistent(src *planner.Source, key []byte) error {
	h := "?"
	if _, hd, err := tablecodec.DecodeHandleRowKey(key, src.Table.CommonHandle); err == nil {
		h = hd.String()
	}
	return errno.New(8133, "data inconsistency in table %s: an index entry points to row %s, which does not exist; run ADMIN CHECK TABLE", src.Table.Name, h)
}

// batchPointGetOp reads rows by several handles or unique index values in
// one BatchGet each.
type batchPointGetOp struct {
	rc   *runCtx
	p    *planner.BatchPointGet
	keys [][]byte // row keys, in output order
	vals map[string][]byte
	pos  int
}

func (o *batchPointGetOp) width() int   { return len(o.p.Src.Cols) }
func (o *batchPointGetOp) Close() error { return nil }

func (o *batchPointGetOp) Open(ctx context.Context) error {
	tbl := o.p.Src.Table
	o.pos = 0
	o.keys = o.keys[:0]
	switch {
	case o.p.Index == nil:
		for _, h := range o.p.Handles {
			o.keys = append(o.keys, tablecodec.RowKey(tbl.ID, h))
		}
	case tbl.Clustered(o.p.Index): // the values are the rows' keys
		for _, v := range o.p.Values {
			o.keys = append(o.keys, planner.UniqueKey(o.p.Src, o.p.Index, v))
		}
	default:
		ikeys := make([][]byte, len(o.p.Values))
		for i, v := range o.p.Values {
			ikeys[i] = planner.UniqueKey(o.p.Src, o.p.Index, v)
		}
		found, err := o.rc.txn.BatchGet(ctx, ikeys)
		if err != nil {
			return err
		}
		for _, k := range ikeys {
			v, ok := found[string(k)]
			if !ok {
				continue
			}
			h, err := tablecodec.DecodeIndexHandle(tablecodec.Handle{}, false, v, tbl.CommonHandle)
			if err != nil {
				return err
			}
			o.keys = append(o.keys, tablecodec.AppendHandleRowKey(nil, tbl.ID, h))
		}
	}
	if len(o.keys) == 0 {
		return nil
	}
	var err error
	o.vals, err = o.rc.txn.BatchGet(ctx, o.keys)
	return err
}

func (o *batchPointGetOp) Next(_ context.Context, ck *Chunk) error {
	ck.reset()
	ck.reserve(len(o.keys) - o.pos)
	for o.pos < len(o.keys) && !ck.full() {
		k := o.keys[o.pos]
		o.pos++
		v, ok := o.vals[string(k)]
		if !ok {
			if o.p.Index != nil && !o.p.Src.Table.Clustered(o.p.Index) {
				return inconsistent(o.p.Src, k)
			}
			continue
		}
		if err := decodeRowInto(o.p.Src, k, v, ck.alloc()); err != nil {
			return err
		}
	}
	return nil
}

// keyPager reads [start, end) ranges page by page, in order (or reversed).
type keyPager struct {
	rc      *runCtx
	ranges  [][2][]byte
	reverse bool
	cop     *coprocessorpb.DAGRequest // nil: read through the transaction
	page    int
	// oneShot: cop is bounded by itself (a TopN): one request over every
	// range, no paging.
	oneShot bool
	cs      *copStats // EXPLAIN ANALYZE
	// limited: the read has a pushed-down LIMIT, so its consumer wants
	// its first rows soon (handOver).
	limited bool

	ri       int
	cur      []byte // forward: next start; reverse: next end
	started  bool
	pairs    []kv.KvPair
	rows     []*coprocessorpb.Row
	pos      int
	finished bool
}

func (p *keyPager) reset(first int) {
	p.ri, p.started, p.pos, p.finished = 0, false, 0, false
	p.pairs, p.rows = p.pairs[:0], p.rows[:0]
	p.page = minPage
	p.limited = first > 0
	if first > 0 {
		p.page = min(first, maxPage)
	}
	if p.cop != nil {
		p.ranges = disjoint(p.ranges)
	}
}

// disjoint returns rs in key order with overlapping ranges merged, in
// place (the planner's ranges already are; an IndexJoin's point ranges
// are distinct values). A coprocessor page reads several ranges, which a
// store wants sorted and disjoint, and resumes by key (keyPager.resume).
func disjoint(rs [][2][]byte) [][2][]byte {
	if len(rs) < 2 {
		return rs
	}
	slices.SortStableFunc(rs, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if len(last[1]) > 0 && bytes.Compare(r[0], last[1]) >= 0 {
			out = append(out, r)
			continue
		}
		if len(last[1]) > 0 && (len(r[1]) == 0 || bytes.Compare(r[1], last[1]) > 0) {
			last[1] = r[1]
		}
	}
	return out
}

// nextRow returns the next row of a coprocessor pager (cop set); nil at
// the end.
func (p *keyPager) nextRow(ctx context.Context) (*coprocessorpb.Row, error) {
	for {
		if p.pos < len(p.rows) {
			r := p.rows[p.pos]
			p.pos++
			return r, nil
		}
		if p.finished {
			return nil, nil
		}
		if err := p.fetch(ctx); err != nil {
			return nil, err
		}
	}
}

// handOver reports whether a reader holding have rows in its chunk
// should hand them over rather than read on: the page read is used up,
// so the next row is another request. A consumer that needs only the
// first rows (a LIMIT, a locking read taking the first rows that still
// qualify, go-tpc Delivery's ORDER BY no_o_id LIMIT 1 FOR UPDATE) then
// stops after the pages it needs, where filling the chunk cost a request
// per page (9 for the first 256 rows of a scan whose first page is one
// row: 1 + 2 + 4 + ... + 256).
//
// Only a read with a pushed-down LIMIT hands over early: an unlimited
// scan's consumers (a join's outer side looking up a batch per chunk, a
// hash build) pay for small chunks, and TestJoinsMatchNestedLoop ran 10x
// longer when every reader did.
func (p *keyPager) handOver(have int) bool {
	if have == 0 || !p.limited {
		return false
	}
	if p.cop != nil {
		return p.pos >= len(p.rows)
	}
	return p.pos >= len(p.pairs)
}

// next returns the next pair; ok is false at the end.
func (p *keyPager) next(ctx context.Context) (key, val []byte, ok bool, err error) {
	for {
		if p.cop != nil && p.pos < len(p.rows) {
			r := p.rows[p.pos]
			p.pos++
			return r.Key, r.Value, true, nil
		}
		if p.cop == nil && p.pos < len(p.pairs) {
			kv := p.pairs[p.pos]
			p.pos++
			return kv.Key, kv.Value, true, nil
		}
		if p.finished {
			return nil, nil, false, nil
		}
		if err := p.fetch(ctx); err != nil {
			return nil, nil, false, err
		}
	}
}

func (p *keyPager) fetch(ctx context.Context) error {
	p.pos = 0
	p.pairs, p.rows = p.pairs[:0], p.rows[:0]
	if p.ri >= len(p.ranges) {
		p.finished = true
		return nil
	}
	if p.oneShot {
		p.finished = true
		krs := make([]*kvrpcpb.KeyRange, len(p.ranges))
		for i, r := range p.ranges {
			krs[i] = &kvrpcpb.KeyRange{Start: r[0], End: r[1]}
		}
		resps, err := p.rc.coprocessor(ctx, p.cop, krs, p.cs)
		if err != nil {
			return err
		}
		for _, r := range resps {
			p.rows = append(p.rows, r.Rows...)
		}
		return nil
	}
	page := p.page
	p.page = min(2*p.page, maxPage)
	if p.cop != nil {
		return p.fetchCop(ctx, page)
	}
	ri := p.ri
	if p.reverse {
		ri = len(p.ranges) - 1 - p.ri
	}
	start, end := p.ranges[ri][0], p.ranges[ri][1]
	if p.started {
		if p.reverse {
			end = p.cur
		} else {
			start = p.cur
		}
	}
	p.started = true
	pairs, err := p.rc.txn.Scan(ctx, start, end, page, p.reverse)
	if err != nil {
		return err
	}
	p.pairs = pairs
	n := len(pairs)
	if n < page {
		p.ri++
		p.started = false
	} else if p.reverse {
		p.cur = pairs[n-1].Key
	} else {
		p.cur = keyEnd(pairs[n-1].Key)
	}
	return nil
}

// fetchCop reads the next page of at most page rows through the
// coprocessor: one request to one region (kvclient with paging_size), over
// every range left in that region, up to max(page, minPage) ranges, so a
// read of many ranges (an IN list, sysbench's ranges OR-ed together) costs
// a request per region and page rather than one per range. The store
// stops after page rows and says where to go on (a descending scan pages
// from the last range's end backwards).
func (p *keyPager) fetchCop(ctx context.Context, page int) error {
	n := min(len(p.ranges)-p.ri, max(page, minPage))
	lo, hi := p.ri, p.ri+n // the ranges sent, in key order
	if p.reverse {
		lo, hi = len(p.ranges)-p.ri-n, len(p.ranges)-p.ri
	}
	krs := make([]*kvrpcpb.KeyRange, 0, n)
	for _, r := range p.ranges[lo:hi] {
		krs = append(krs, &kvrpcpb.KeyRange{Start: r[0], End: r[1]})
	}
	if p.started {
		if p.reverse {
			krs[n-1].End = p.cur
		} else {
			krs[0].Start = p.cur
		}
	}
	p.cop.PagingSize = uint64(page)
	resps, err := p.rc.coprocessor(ctx, p.cop, krs, p.cs)
	if err != nil {
		return err
	}
	var resume []byte
	for _, r := range resps {
		p.rows = append(p.rows, r.Rows...)
		resume = r.ResumeKey
	}
	p.resume(resume, lo, hi)
	return nil
}

// resume advances a coprocessor pager past the page that read ranges
// [lo, hi) up to resume (the response's resume_key: ascending, where the
// next page starts; descending, where it ends, exclusive; nil, every
// range sent is read).
func (p *keyPager) resume(resume []byte, lo, hi int) {
	p.started = false
	if resume == nil {
		p.ri += hi - lo
		return
	}
	if p.reverse {
		i := hi - 1
		for i >= lo && bytes.Compare(p.ranges[i][0], resume) >= 0 {
			i-- // wholly at or after the end: read
		}
		p.ri = len(p.ranges) - 1 - i
		if i >= lo && (len(p.ranges[i][1]) == 0 || bytes.Compare(resume, p.ranges[i][1]) < 0) {
			p.started, p.cur = true, resume
		}
		return
	}
	i := lo
	for i < hi && len(p.ranges[i][1]) > 0 && bytes.Compare(p.ranges[i][1], resume) <= 0 {
		i++ // wholly before the start: read
	}
	p.ri = i
	if i < hi && bytes.Compare(resume, p.ranges[i][0]) > 0 {
		p.started, p.cur = true, resume
	}
}

// tableReaderOp reads rows in handle ranges: through the coprocessor at
// the transaction's start_ts, or through the transaction itself when it
// has written there (the coprocessor cannot see its buffer), reads a fresh
// snapshot per statement, or scans backwards.
type tableReaderOp struct {
	rc    *runCtx
	scan  *planner.TableScan
	conds []expr.Expr   // pushed to the stores; applied here when reading directly
	topN  *planner.TopN // pushed to the stores; the root TopN applies it anyway
	sel   *coprocessorpb.Executor
	pager keyPager
}

func (o *tableReaderOp) width() int   { return len(o.scan.Src.Cols) }
func (o *tableReaderOp) Close() error { return nil }

func (o *tableReaderOp) Open(context.Context) error {
	tid := o.scan.Src.Table.ID
	o.pager.rc = o.rc
	o.pager.ranges = o.pager.ranges[:0]
	dirty := false
	for _, r := range o.scan.KeyRanges() {
		s, e := r[0], r[1]
		o.pager.ranges = append(o.pager.ranges, r)
		dirty = dirty || readDirect(o.rc.tx, o.rc.txn, s, e)
	}
	o.pager.reverse = o.scan.Desc
	o.pager.cop, o.pager.oneShot = nil, false
	if !dirty && !o.scan.Desc {
		ts := &coprocessorpb.TableScan{TableId: tid}
		execs := []*coprocessorpb.Executor{{Tp: coprocessorpb.ExecType_TypeTableScan, TblScan: ts}}
		if len(o.conds) > 0 || o.topN != nil {
			info, err := tableInfoPB(o.scan.Src.Table)
			if err != nil {
				return err
			}
			ts.TableInfo = info
		}
		if err := o.pager.setCop(execs, o.conds, &o.sel, o.topN); err != nil {
			return err
		}
	}
	o.pager.reset(int(o.scan.Limit))
	return nil
}

// setCop makes p read through the coprocessor: execs (the scan), then the
// Selection of conds (built once into *sel) and the TopN of topN (one
// request over every range, no paging) if any; otherwise it reads in
// pages (paging_size).
func (p *keyPager) setCop(execs []*coprocessorpb.Executor, conds []expr.Expr, sel **coprocessorpb.Executor, topN *planner.TopN) error {
	if len(conds) > 0 {
		if *sel == nil {
			s, err := selectionPB(conds)
			if err != nil {
				return err
			}
			*sel = s
		}
		execs = append(execs, *sel)
	}
	if topN != nil {
		top, err := topNPB(topN)
		if err != nil {
			return err
		}
		p.cop = &coprocessorpb.DAGRequest{Executors: append(execs, top)}
		if topN.Count <= minPage {
			// Each page answers the top rows of its part; the root TopN
			// keeps the best of them (at most count per page reach it).
			p.cop.PageMs = copPageMs
		}
		p.oneShot = true
		return nil
	}
	p.cop = &coprocessorpb.DAGRequest{Executors: execs, PageMs: copPageMs}
	return nil
}

// dropUnless removes ck's last row unless it meets every one of conds
// (pushed conditions applied by a reader that reads directly).
func dropUnless(ck *Chunk, conds []expr.Expr) error {
	if len(conds) == 0 {
		return nil
	}
	ok, err := condAll(conds, ck.rows[len(ck.rows)-1])
	if err == nil && !ok {
		ck.rows = ck.rows[:len(ck.rows)-1]
	}
	return err
}

// topNPB is the cop TopN of t (the planner pushed it, so its keys
// serialize).
func topNPB(t *planner.TopN) (*coprocessorpb.Executor, error) {
	top := &coprocessorpb.TopN{Limit: t.Count}
	for _, k := range t.Keys {
		pk, err := expr.ToPB(k.E)
		if err != nil {
			return nil, fmt.Errorf("executor: pushed ORDER BY: %w", err)
		}
		top.OrderBy = append(top.OrderBy, &coprocessorpb.ByItem{Expr: pk, Desc: k.Desc})
	}
	return &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeTopN, TopN: top}, nil
}

// selectionPB is the cop Selection of conds (the planner pushed them, so
// every one serializes).
func selectionPB(conds []expr.Expr) (*coprocessorpb.Executor, error) {
	sel := &coprocessorpb.Selection{}
	for _, c := range conds {
		pc, err := expr.ToPB(c)
		if err != nil {
			return nil, fmt.Errorf("executor: pushed condition: %w", err)
		}
		sel.Conditions = append(sel.Conditions, pc)
	}
	return &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeSelection, Selection: sel}, nil
}

// tableInfos caches the JSON schema sent with pushed-down scans: per table
// id, the encoding of the latest TableInfo seen (immutable once published;
// a schema change publishes a new one, which replaces it).
var tableInfos sync.Map // int64 -> cachedInfo

type cachedInfo struct {
	t *model.TableInfo
	b []byte
}

func tableInfoPB(t *model.TableInfo) ([]byte, error) {
	if c, ok := tableInfos.Load(t.ID); ok && c.(cachedInfo).t == t {
		return c.(cachedInfo).b, nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("executor: encode schema of %s: %w", t.Name, err)
	}
	tableInfos.Store(t.ID, cachedInfo{t: t, b: b})
	return b, nil
}

func (o *tableReaderOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	for !ck.full() && !o.pager.handOver(len(ck.rows)) {
		k, v, ok, err := o.pager.next(ctx)
		if err != nil || !ok {
			return err
		}
		row := ck.alloc()
		if err := decodeRowInto(o.scan.Src, k, v, row); err != nil {
			return err
		}
		if o.pager.cop == nil {
			if err := dropUnless(ck, o.conds); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexReaderOp reads index entries in ranges and produces rows holding
// the index's columns and the handle (the other columns are NULL).
type indexReaderOp struct {
	rc    *runCtx
	scan  *planner.IndexScan
	conds []expr.Expr   // pushed to the stores; applied here when reading directly
	topN  *planner.TopN // pushed to the stores; the root TopN applies it anyway
	sel   *coprocessorpb.Executor
	pager keyPager
}

func (o *indexReaderOp) width() int   { return len(o.scan.Src.Cols) }
func (o *indexReaderOp) Close() error { return nil }

func (o *indexReaderOp) Open(context.Context) error {
	_, err := o.open(false)
	return err
}

// open prepares the pager: through the coprocessor (an IndexScan, with
// lookup an IndexLookUp after it) unless the transaction must read
// directly (its own writes in the index, or with lookup in the table's
// rows; READ COMMITTED). It reports whether the pager uses the
// coprocessor.
func (o *indexReaderOp) open(lookup bool) (bool, error) {
	src := o.scan.Src
	tid := src.Table.ID
	o.pager.rc = o.rc
	o.pager.ranges = o.pager.ranges[:0]
	dirty := false
	for _, r := range o.scan.Ranges {
		s, e := planner.IndexKeyRange(tid, o.scan.Index.ID, r)
		o.pager.ranges = append(o.pager.ranges, [2][]byte{s, e})
		dirty = dirty || readDirect(o.rc.tx, o.rc.txn, s, e)
	}
	if lookup && !dirty {
		s, e := tablecodec.RecordRange(tid)
		dirty = readDirect(o.rc.tx, o.rc.txn, s, e)
	}
	o.pager.reverse = o.scan.Desc
	o.pager.cop, o.pager.oneShot = nil, false
	if !dirty {
		info, err := tableInfoPB(src.Table)
		if err != nil {
			return false, err
		}
		execs := []*coprocessorpb.Executor{{Tp: coprocessorpb.ExecType_TypeIndexScan, IdxScan: &coprocessorpb.IndexScan{
			TableId: tid, IndexId: o.scan.Index.ID, Desc: o.scan.Desc, TableInfo: info}}}
		if lookup {
			execs = append(execs, &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeIndexLookUp, IdxLookup: &coprocessorpb.IndexLookUp{TableId: tid}})
		}
		if err := o.pager.setCop(execs, o.conds, &o.sel, o.topN); err != nil {
			return false, err
		}
	}
	o.pager.reset(int(o.scan.Limit))
	return o.pager.cop != nil, nil
}

func (o *indexReaderOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	src := o.scan.Src
	tbl := src.Table
	ix := o.scan.Index
	for !ck.full() && !o.pager.handOver(len(ck.rows)) {
		k, v, ok, err := o.pager.next(ctx)
		if err != nil || !ok {
			return err
		}
		_, _, vals, kh, hasHandle, err := tablecodec.DecodeIndexKey(k, len(ix.Columns), tbl.CommonHandle)
		if err != nil {
			return err
		}
		h, err := tablecodec.DecodeIndexHandle(kh, hasHandle, v, tbl.CommonHandle)
		if err != nil {
			return err
		}
		row := ck.alloc()
		tbl.SetIndexRow(ix, vals, h, row)
		if o.pager.cop == nil {
			if err := dropUnless(ck, o.conds); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupRows counts the rows of pushed-down IndexLookUps by where their
// lookup finished: inside the index scan's coprocessor request (local) or
// in the SQL node's BatchGet afterwards (remote).
var lookupRows = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "distsql", Name: "index_lookup_rows_total",
	Help: "Rows of pushed-down IndexLookUps: read by the store that scanned the index (local) or fetched by the SQL node afterwards (remote).",
}, []string{"path"})

var lookupLocal, lookupRemote = lookupRows.WithLabelValues("local"), lookupRows.WithLabelValues("remote")

// indexLookUpOp reads handles from an index a chunk at a time and their
// rows with one BatchGet per chunk, returning rows in index order. When
// pushed (and the transaction need not read directly) the index scan's
// coprocessor requests carry an IndexLookUp: the stores return the rows
// they lead with the entries, and only the others are fetched here.
type indexLookUpOp struct {
	idx    indexReaderOp
	pushed bool // the plan pushes the lookup
	cop    bool // this execution does (set by Open)
	hck    *Chunk
	keys   [][]byte
	slots  []int // with cop: the chunk row of each key fetched here
}

func (o *indexLookUpOp) width() int   { return len(o.idx.scan.Src.Cols) }
func (o *indexLookUpOp) Close() error { return o.idx.Close() }

func (o *indexLookUpOp) Open(ctx context.Context) error {
	if o.pushed {
		var err error
		o.cop, err = o.idx.open(true)
		return err
	}
	o.cop = false
	if o.hck == nil {
		o.hck = newChunk(o.idx.width(), chunkRows)
	}
	return o.idx.Open(ctx)
}

// nextPushed fills ck from the stores' IndexLookUp rows, fetching the
// rows they left (remote) with one BatchGet, in index order.
func (o *indexLookUpOp) nextPushed(ctx context.Context, ck *Chunk) error {
	src := o.idx.scan.Src
	o.keys, o.slots = o.keys[:0], o.slots[:0]
	for !ck.full() && !o.idx.pager.handOver(len(ck.rows)) {
		r, err := o.idx.pager.nextRow(ctx)
		if err != nil {
			return err
		}
		if r == nil {
			break
		}
		row := ck.alloc()
		if r.Remote {
			o.keys = append(o.keys, r.RowKey)
			o.slots = append(o.slots, len(ck.rows)-1)
			continue
		}
		if err := decodeRowInto(src, r.RowKey, r.Value, row); err != nil {
			return err
		}
	}
	lookupLocal.Add(float64(len(ck.rows) - len(o.keys)))
	if len(o.keys) == 0 {
		return nil
	}
	lookupRemote.Add(float64(len(o.keys)))
	return o.fetchRows(ctx, func(i int) []datum { return ck.rows[o.slots[i]] })
}

// fetchRows reads the rows of o.keys with one BatchGet and decodes the
// i-th into dst(i) (called in order); a key without a row is an index
// inconsistency.
func (o *indexLookUpOp) fetchRows(ctx context.Context, dst func(i int) []datum) error {
	src := o.idx.scan.Src
	vals, err := o.idx.rc.txn.BatchGet(ctx, o.keys)
	if err != nil {
		return err
	}
	for i, k := range o.keys {
		v, ok := vals[string(k)]
		if !ok {
			return inconsistent(src, k)
		}
		if err := decodeRowInto(src, k, v, dst(i)); err != nil {
			return err
		}
	}
	return nil
}

func (o *indexLookUpOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	if o.cop {
		return o.nextPushed(ctx, ck)
	}
	if o.hck == nil {
		o.hck = newChunk(o.idx.width(), chunkRows)
	}
	if err := o.idx.Next(ctx, o.hck); err != nil || len(o.hck.rows) == 0 {
		return err
	}
	src := o.idx.scan.Src
	hOff := len(src.Table.Columns)
	o.keys = o.keys[:0]
	for _, r := range o.hck.rows {
		o.keys = append(o.keys, tablecodec.AppendHandleRowKey(nil, src.Table.ID, tablecodec.HandleOfDatum(r[hOff])))
	}
	return o.fetchRows(ctx, func(int) []datum { return ck.alloc() })
}

// countOp counts a table's rows as the transaction sees them (COUNT(*)
// pushed to the stores) and produces one aggregation row: width NULLs and
// the count.
type countOp struct {
	rc   *runCtx
	src  *planner.Source
	done bool
}

func (o *countOp) width() int                 { return len(o.src.Cols) + 1 }
func (o *countOp) Open(context.Context) error { o.done = false; return nil }
func (o *countOp) Close() error               { return nil }

func (o *countOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	if o.done {
		return nil
	}
	o.done = true
	n, err := o.rc.e.countRows(ctx, o.rc.tx, o.rc.txn, o.src.Table.ID)
	if err != nil {
		return err
	}
	ck.alloc()[len(o.src.Cols)] = types.NewInt(n)
	return nil
}
