package executor

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// selectionOp keeps the rows satisfying every condition.
type selectionOp struct {
	child Operator
	conds []expr.Expr
}

func (o *selectionOp) Open(ctx context.Context) error { return o.child.Open(ctx) }
func (o *selectionOp) Close() error                   { return o.child.Close() }
func (o *selectionOp) width() int                     { return o.child.width() }

func (o *selectionOp) Next(ctx context.Context, ck *Chunk) error {
	for {
		if err := o.child.Next(ctx, ck); err != nil || len(ck.rows) == 0 {
			return err
		}
		kept := ck.rows[:0]
		for _, r := range ck.rows {
			ok, err := condAll(o.conds, r)
			if err != nil {
				return err
			}
			if ok {
				kept = append(kept, r)
			}
		}
		ck.rows = kept
		if len(kept) > 0 {
			return nil
		}
	}
}

func condAll(conds []expr.Expr, row []datum) (bool, error) {
	for _, c := range conds {
		if ok, err := cond(c, row); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func cond(e expr.Expr, row []datum) (bool, error) {
	d, err := e.Eval(row)
	if err != nil {
		return false, err
	}
	t, null := expr.IsTrue(d)
	return t && !null, nil
}

// limitOp skips offset rows and stops after count: its child is not asked
// for more, so the scan below stops.
type limitOp struct {
	child         Operator
	offset, count uint64
	skipped, sent uint64
}

func (o *limitOp) Open(ctx context.Context) error {
	o.skipped, o.sent = 0, 0
	return o.child.Open(ctx)
}
func (o *limitOp) Close() error { return o.child.Close() }
func (o *limitOp) width() int   { return o.child.width() }

func (o *limitOp) Next(ctx context.Context, ck *Chunk) error {
	for {
		if o.sent >= o.count {
			ck.reset()
			return nil
		}
		if err := o.child.Next(ctx, ck); err != nil || len(ck.rows) == 0 {
			return err
		}
		if skip := min(o.offset-o.skipped, uint64(len(ck.rows))); skip > 0 {
			o.skipped += skip
			n := copy(ck.rows, ck.rows[skip:])
			ck.rows = ck.rows[:n]
		}
		if rest := o.count - o.sent; uint64(len(ck.rows)) > rest {
			ck.rows = ck.rows[:rest]
		}
		o.sent += uint64(len(ck.rows))
		if len(ck.rows) > 0 {
			return nil
		}
	}
}

// projectionOp evaluates the select list.
type projectionOp struct {
	child Operator
	exprs []expr.Expr
	in    *Chunk
}

func (o *projectionOp) Open(ctx context.Context) error {
	if o.in == nil {
		o.in = newChunk(o.child.width(), chunkRows)
	}
	return o.child.Open(ctx)
}
func (o *projectionOp) Close() error { return o.child.Close() }
func (o *projectionOp) width() int   { return len(o.exprs) }

func (o *projectionOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	if err := o.child.Next(ctx, o.in); err != nil {
		return err
	}
	ck.reserve(len(o.in.rows))
	for _, r := range o.in.rows {
		out := ck.alloc()
		for j, e := range o.exprs {
			v, err := e.Eval(r)
			if err != nil {
				return err
			}
			out[j] = v
		}
	}
	return nil
}

// emitter returns materialized rows a chunk at a time.
type emitter struct {
	rows [][]datum
	pos  int
}

func (e *emitter) emit(ck *Chunk) {
	ck.reset()
	for e.pos < len(e.rows) && !ck.full() {
		ck.rows = append(ck.rows, e.rows[e.pos])
		e.pos++
	}
}

// collect copies every row of child.
func collect(ctx context.Context, child Operator, each func(row []datum) error) error {
	ck := newChunk(child.width(), chunkRows)
	for {
		if err := child.Next(ctx, ck); err != nil || len(ck.rows) == 0 {
			return err
		}
		w := child.width()
		slab := make([]datum, len(ck.rows)*w)
		for i, r := range ck.rows {
			row := slab[i*w : (i+1)*w : (i+1)*w]
			copy(row, r)
			if err := each(row); err != nil {
				return err
			}
		}
	}
}

// sortOp orders its input (stable; NULL first); as TopN it keeps at most
// 2*(offset+count) rows between sorts and returns rows [offset,
// offset+count). Past the statement's memory quota it writes what it
// holds as a sorted run to disk and, at the end, merges the runs
// (sortspill.go).
type sortOp struct {
	child         Operator
	keys          []planner.SortKey
	topN          bool
	offset, count uint64
	out           emitter
	mem           *memory.Tracker

	cmp   func(a, b keyedRow) int
	file  *spill.File // the runs, when it spilled
	runs  []sortRun
	merge *sortMerger
	sent  uint64 // rows the merge returned or skipped
}

type keyedRow struct {
	row  []datum
	keys []datum
}

func (o *sortOp) Close() error {
	o.closeSpill()
	o.out = emitter{}
	o.mem.Release()
	return o.child.Close()
}

func (o *sortOp) width() int { return o.child.width() }

// compareNullsFirst compares two values of type ft as ORDER BY does:
// NULL before everything else.
func compareNullsFirst(x, y datum, ft types.FieldType) int {
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return -1
	case y.IsNull():
		return 1
	}
	return expr.CompareAs(x, y, ft)
}

// compareKeys compares two rows' values a and b of keys (of types kts):
// NULL first, then as ORDER BY compares, reversed for DESC.
func compareKeys(keys []planner.SortKey, kts []types.FieldType, a, b []datum) int {
	for j, k := range keys {
		c := compareNullsFirst(a[j], b[j], kts[j])
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (o *sortOp) Open(ctx context.Context) error {
	if err := o.child.Open(ctx); err != nil {
		return err
	}
	o.closeSpill()
	o.sent = 0
	kts := make([]types.FieldType, len(o.keys))
	for j, k := range o.keys {
		kts[j] = k.E.Type()
	}
	o.cmp = func(a, b keyedRow) int { return compareKeys(o.keys, kts, a.keys, b.keys) }
	keep := planner.SatAdd(o.offset, o.count)
	var ks []keyedRow
	err := collect(ctx, o.child, func(row []datum) error {
		kr := keyedRow{row: row, keys: make([]datum, len(o.keys))}
		if err := o.evalKeys(kr); err != nil {
			return err
		}
		ks = append(ks, kr)
		if o.topN && uint64(len(ks)) > planner.SatAdd(planner.SatAdd(keep, keep), chunkRows) {
			slices.SortStableFunc(ks, o.cmp)
			clear(ks[keep:])
			ks = ks[:keep]
			o.mem.Release()
			for _, k := range ks {
				if _, err := o.mem.Grow(keyedRowSize(k)); err != nil {
					return err
				}
			}
		}
		spillNow, err := o.mem.Grow(keyedRowSize(kr))
		if err != nil || !spillNow {
			return err
		}
		err = o.spillRun(ks)
		clear(ks)
		ks = ks[:0]
		return err
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(ks, o.cmp)
	if o.topN {
		ks = ks[:min(keep, uint64(len(ks)))]
	}
	if o.file != nil {
		return o.startMerge(ks)
	}
	if o.topN {
		ks = ks[min(o.offset, uint64(len(ks))):]
	}
	rows := make([][]datum, len(ks))
	for i := range ks {
		rows[i] = ks[i].row
	}
	o.out = emitter{rows: rows}
	return nil
}

func (o *sortOp) evalKeys(kr keyedRow) error {
	for j, k := range o.keys {
		v, err := k.E.Eval(kr.row)
		if err != nil {
			return err
		}
		kr.keys[j] = v
	}
	return nil
}

func (o *sortOp) Next(_ context.Context, ck *Chunk) error {
	if o.merge != nil {
		return o.nextMerged(ck)
	}
	o.out.emit(ck)
	return nil
}

// distinctOp keeps the first of equal rows.
type distinctOp struct {
	child Operator
	seen  map[string]struct{}
	key   []byte
	mem   *memory.Tracker
	colls []*collate.Collation // of the columns (nil: all bytewise)
}

func (o *distinctOp) Open(ctx context.Context) error {
	o.seen = map[string]struct{}{}
	return o.child.Open(ctx)
}
func (o *distinctOp) Close() error {
	o.seen = nil
	o.mem.Release()
	return o.child.Close()
}
func (o *distinctOp) width() int { return o.child.width() }

func (o *distinctOp) Next(ctx context.Context, ck *Chunk) error {
	for {
		if err := o.child.Next(ctx, ck); err != nil || len(ck.rows) == 0 {
			return err
		}
		kept := ck.rows[:0]
		for _, r := range ck.rows {
			o.key = expr.AppendGroupKeyColl(o.key[:0], r, o.colls)
			if _, dup := o.seen[string(o.key)]; dup {
				continue
			}
			o.seen[string(o.key)] = struct{}{}
			if err := o.mem.Consume(int64(len(o.key)) + mapEntrySize); err != nil {
				return err
			}
			kept = append(kept, r)
		}
		ck.rows = kept
		if len(kept) > 0 {
			return nil
		}
	}
}

// hashAggOp groups its input and returns one row per group: the group's
// first input row followed by the aggregate values. Past the statement's
// memory quota it keeps aggregating the groups it holds and writes the
// rows of other groups to disk, partitioned by a hash of the group key;
// each partition is aggregated after the groups in memory are returned
// (aggspill.go).
type hashAggOp struct {
	child   Operator
	p       *planner.HashAgg
	out     emitter
	mem     *memory.Tracker
	pending []aggPart // spilled partitions still to aggregate, last first
	rc      *runCtx   // for warnings (nil: none)
	emitted int       // result rows so far (a warning names its row)
}

func (o *hashAggOp) Close() error {
	o.closeSpill()
	o.out = emitter{}
	o.mem.Release()
	return o.child.Close()
}

func (o *hashAggOp) width() int { return o.p.Width + len(o.p.Aggs) }

func (o *hashAggOp) Open(ctx context.Context) error {
	if err := o.child.Open(ctx); err != nil {
		return err
	}
	o.closeSpill()
	order, err := o.aggregate(func(each func([]datum) error) error { return collect(ctx, o.child, each) }, 0)
	if err != nil {
		return err
	}
	if len(order) == 0 && len(o.p.GroupBy) == 0 {
		// Aggregates over no rows still produce one row.
		order = append(order, &group{first: make([]datum, o.p.Width), aggs: make([]aggState, len(o.p.Aggs))})
	}
	o.out = emitter{rows: o.results(order)}
	return nil
}

// aggregate groups the rows feed passes; rows of groups it has no memory
// for go to partition files (pending), depth telling the partitioning
// seed.
func (o *hashAggOp) aggregate(feed func(each func([]datum) error) error, depth int) ([]*group, error) {
	p := o.p
	groups := map[string]*group{}
	var order []*group
	var keyBuf, scratch []byte
	var parts []*spill.File
	gvals := make([]datum, len(p.GroupBy))
	colls := expr.Collations(p.GroupBy)
	err := feed(func(r []datum) error {
		for i, g := range p.GroupBy {
			v, err := g.Eval(r)
			if err != nil {
				return err
			}
			gvals[i] = v
		}
		for level := len(gvals); level >= 0; level-- {
			keyBuf = expr.AppendGroupKeyColl(keyBuf[:0], gvals[:level], colls)
			if level < len(gvals) {
				keyBuf = append(keyBuf, 'R', byte(level))
			}
			gr, ok := groups[string(keyBuf)]
			if !ok {
				if parts != nil { // no memory for more groups (never WITH ROLLUP)
					return parts[maphash.Bytes(spillSeeds[depth], keyBuf)%spillFanout].Write(r)
				}
				gr = &group{first: r, aggs: make([]aggState, len(p.Aggs))}
				if len(p.Rollup) > 0 {
					gr.first = slices.Clone(r)
					for _, off := range p.Rollup[level:] {
						gr.first[off] = types.NullDatum
					}
					gr.vals, gr.level = slices.Clone(gvals), level
				}
				groups[string(keyBuf)] = gr
				order = append(order, gr)
				if err := o.growGroups(r, keyBuf, depth, &parts); err != nil {
					return err
				}
			}
			for i := range p.Aggs {
				var err error
				if scratch, err = gr.aggs[i].add(&p.Aggs[i], r, scratch); err != nil {
					return err
				}
			}
			if len(p.Rollup) == 0 {
				break
			}
		}
		return nil
	})
	if parts != nil {
		for i := len(parts) - 1; i >= 0; i-- {
			if err != nil || parts[i].Rows() == 0 {
				parts[i].Close()
				continue
			}
			o.pending = append(o.pending, aggPart{f: parts[i], depth: depth + 1})
		}
	}
	if err == nil && len(p.Rollup) > 0 {
		sortRollup(order, p.GroupBy)
	}
	return order, err
}

// results turns groups into result rows and releases their memory.
func (o *hashAggOp) results(order []*group) [][]datum {
	p := o.p
	w := o.width()
	rows := make([][]datum, len(order))
	slab := make([]datum, len(order)*w)
	for i, gr := range order {
		row := slab[i*w : (i+1)*w : (i+1)*w]
		copy(row, gr.first[:p.Width])
		for j := range p.Aggs {
			row[p.Width+j] = gr.aggs[j].result(&p.Aggs[j])
		}
		o.emitted++
		if o.rc != nil {
			warnCut(o.rc, gr.aggs, o.emitted)
		}
		rows[i] = row
	}
	o.mem.Release()
	return rows
}

// sortRollup orders WITH ROLLUP's groups as MySQL returns them: by the
// GROUP BY values (NULLs first), each super-aggregate after the groups it
// sums.
func sortRollup(groups []*group, keys []expr.Expr) {
	slices.SortStableFunc(groups, func(a, b *group) int {
		for i, k := range keys {
			ar, br := i >= a.level, i >= b.level
			switch {
			case ar && br:
				return 0
			case ar:
				return 1
			case br:
				return -1
			}
			if c := compareNullsFirst(a.vals[i], b.vals[i], k.Type()); c != 0 {
				return c
			}
		}
		return 0
	})
}

func (o *hashAggOp) Next(_ context.Context, ck *Chunk) error {
	for {
		o.out.emit(ck)
		if len(ck.rows) > 0 || len(o.pending) == 0 {
			return nil
		}
		if err := o.nextPartition(); err != nil {
			return err
		}
	}
}

// selectLockOp locks the rows its child read (SELECT ... FOR UPDATE): a
// point get by handle locks its key even when there is no row, so a
// concurrent insert of it waits. In pessimistic mode the rows are replaced
// by their latest committed values, which must still satisfy WHERE: the
// statement reads what it locked.
type selectLockOp struct {
	rc    *runCtx
	child Operator
	p     *planner.SelectLock
	out   emitter
	// lockOnly: the child was not run; the lock's latest row answered.
	lockOnly bool
}

func (o *selectLockOp) Close() error {
	if o.lockOnly {
		return nil
	}
	return o.child.Close()
}

func (o *selectLockOp) width() int { return o.child.width() }

func (o *selectLockOp) Open(ctx context.Context) error {
	if o.p.PointRow != nil && o.rc.tx.TxnOptions().Pessimistic && len(o.p.Children) == 1 && pointOnly(o.p.Children[0]) {
		// A point read of a row key: the lock returns the key's latest
		// value, which is the answer; the snapshot read is skipped
		// (readForWrite).
		o.lockOnly = true
		rows, err := o.rc.lockRows(ctx, o.p.Src, o.p.Where, o.p.PointRow.Key(), o.p.NoWait, nil)
		o.out = emitter{rows: rows}
		return err
	}
	if err := o.child.Open(ctx); err != nil {
		return err
	}
	if o.p.Limit > 0 && o.p.PointIndex == nil && o.p.PointRow == nil {
		rows, err := o.lockFirst(ctx, o.p.Limit)
		o.out = emitter{rows: rows}
		return err
	}
	var rows [][]datum
	if err := collect(ctx, o.child, func(r []datum) error { rows = append(rows, r); return nil }); err != nil {
		return err
	}
	if o.p.PointIndex != nil {
		done, err := o.lockUniqueKey(ctx, &rows)
		if err != nil || done {
			o.out = emitter{rows: rows}
			return err
		}
	}
	rows, err := o.rc.lockRows(ctx, o.p.Src, o.p.Where, pointKey(o.p.PointRow), o.p.NoWait, rows)
	if err != nil {
		return err
	}
	o.out = emitter{rows: rows}
	return nil
}

// errEnough stops collect once enough rows were taken.
var errEnough = errors.New("executor: enough rows")

// lockFirst locks rows of the child in its order until n of them (after
// the re-check against WHERE at for_update_ts) qualify: a row deleted or
// changed out of WHERE since the snapshot is skipped and the next one
// locked, as InnoDB's locking read does.
func (o *selectLockOp) lockFirst(ctx context.Context, n uint64) ([][]datum, error) {
	var out, pending [][]datum
	flush := func() error {
		locked, err := o.rc.lockRows(ctx, o.p.Src, o.p.Where, nil, o.p.NoWait, pending)
		pending = pending[:0]
		out = append(out, locked...)
		return err
	}
	err := collect(ctx, o.child, func(r []datum) error {
		pending = append(pending, r)
		if uint64(len(out)+len(pending)) < n {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if uint64(len(out)) >= n {
			return errEnough
		}
		return nil
	})
	switch {
	case errors.Is(err, errEnough):
		return out, nil
	case err != nil:
		return nil, err
	case len(pending) > 0:
		err = flush()
	}
	return out, err
}

// lockUniqueKey locks the unique index key of a point get (so a
// concurrent insert of that value waits even when no row has it) and, in
// pessimistic mode, replaces *rows by the row the key points to at
// for_update_ts, locked, if it still satisfies WHERE (done: nothing else
// to lock). In optimistic mode the rows read are then locked as usual.
func (o *selectLockOp) lockUniqueKey(ctx context.Context, rows *[][]datum) (done bool, err error) {
	pg := o.p.PointIndex // not a clustered key's, whose point is PointRow
	vals, pess, err := o.rc.e.lockKeys(ctx, o.rc.tx, o.rc.txn, o.p.NoWait, [][]byte{pg.Key()})
	if err != nil || !pess {
		return false, err
	}
	*rows = nil
	if vals[0] == nil {
		return true, nil
	}
	h, err := tablecodec.DecodeIndexHandle(tablecodec.Handle{}, false, vals[0], pg.Src.Table.CommonHandle)
	if err != nil {
		return true, err
	}
	*rows, err = o.rc.lockRows(ctx, pg.Src, o.p.Where, tablecodec.AppendHandleRowKey(nil, pg.Src.Table.ID, h), o.p.NoWait, nil)
	return true, err
}

func (o *selectLockOp) Next(_ context.Context, ck *Chunk) error {
	o.out.emit(ck)
	return nil
}

// pointKey is the row key pg reads (nil: no point read).
func pointKey(pg *planner.PointGet) []byte {
	if pg == nil {
		return nil
	}
	return pg.Key()
}

// lockRows locks the row keys of rows read from src (or pointKey, one
// row's key) and, when pessimistic, returns their latest values that
// satisfy where (nil: every row).
func (rc *runCtx) lockRows(ctx context.Context, src *planner.Source, where expr.Expr, pointKey []byte, nowait bool, rows [][]datum) ([][]datum, error) {
	var keys [][]byte
	if pointKey != nil {
		keys = [][]byte{pointKey}
	} else {
		keys = rowKeys(src, rows)
	}
	vals, pess, err := rc.e.lockKeys(ctx, rc.tx, rc.txn, nowait, keys)
	if err != nil || !pess {
		return rows, err
	}
	if rows, err = decodeLatest(src, keys, vals); err != nil || where == nil {
		return rows, err
	}
	return filterRows(where, rows)
}
