package executor

import (
	"bytes"
	"context"
	"math"
	"slices"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

// hashJoinOp is planner.HashJoin: Open reads the build side into a hash
// table keyed by its join keys (rows with a NULL key never match and are
// not kept), Next streams the probe side, emitting for each probe row its
// matches that pass the other conditions, or, for the outer side of an
// outer join, the row with NULLs for the other side when none does.
// Past the statement's memory quota it becomes a grace hash join: both
// sides are partitioned to disk by a hash of the join key and joined one
// partition at a time (joinspill.go).
type hashJoinOp struct {
	p            *planner.HashJoin
	build, probe Operator
	buildKeys    []expr.Expr
	probeKeys    []expr.Expr
	outerProbe   bool // the probe side is the outer side of an outer join

	table  map[string][][]datum
	all    [][]datum // every build row when there are no keys
	keyBuf []byte
	keyVal []datum
	// colls: the collation each key pair compares under (nil: all
	// bytewise); the hash key holds a string's sort key under it.
	colls []*collate.Collation

	in      *Chunk // the probe chunk being joined
	pos     int    // next probe row of in
	matches [][]datum
	mpos    int
	matched bool
	done    bool

	mem      *memory.Tracker
	probeSrc Operator   // the probe side, or the current partition's probe rows
	spilled  *joinSpill // nil: in memory
}

func newHashJoinOp(p *planner.HashJoin, build, probe Operator) *hashJoinOp {
	o := &hashJoinOp{p: p, build: build, probe: probe, buildKeys: p.LeftKeys, probeKeys: p.RightKeys}
	if p.BuildRight {
		o.buildKeys, o.probeKeys = p.RightKeys, p.LeftKeys
	}
	o.outerProbe = (p.Type == planner.LeftOuterJoin && p.BuildRight) || (p.Type == planner.RightOuterJoin && !p.BuildRight)
	if c := expr.Collations(p.LeftKeys); c != nil {
		o.colls = c
	}
	if c := expr.Collations(p.RightKeys); c != nil {
		if o.colls == nil {
			o.colls = c
		}
		for i := range o.colls {
			if o.colls[i] == nil {
				o.colls[i] = c[i]
			}
		}
	}
	return o
}

func (o *hashJoinOp) width() int { return o.p.LeftW + o.p.RightW }

func (o *hashJoinOp) Open(ctx context.Context) error {
	if err := o.build.Open(ctx); err != nil {
		return err
	}
	if err := o.probe.Open(ctx); err != nil {
		return err
	}
	o.table, o.all, o.in, o.pos, o.matches, o.mpos, o.done = nil, nil, nil, 0, nil, 0, false
	o.closeSpill()
	o.probeSrc = o.probe
	if len(o.buildKeys) > 0 {
		o.table = map[string][][]datum{}
	}
	err := collect(ctx, o.build, func(r []datum) error {
		if o.table == nil {
			o.all = append(o.all, r)
			return o.mem.Consume(rowSize(r))
		}
		k, null, err := o.key(o.buildKeys, r)
		if err != nil || null {
			return err
		}
		if o.spilled != nil {
			return o.spilled.write(o.spilled.build, 0, k, r)
		}
		o.table[string(k)] = append(o.table[string(k)], r)
		spillNow, err := o.mem.Grow(rowSize(r) + int64(len(k)) + mapEntrySize)
		if err != nil || !spillNow {
			return err
		}
		return o.spillBuild()
	})
	if err != nil || o.spilled == nil {
		return err
	}
	return o.spillProbe(ctx)
}

// key encodes the join key of row (null: some key is NULL, so the row
// matches nothing).
func (o *hashJoinOp) key(keys []expr.Expr, row []datum) ([]byte, bool, error) {
	o.keyVal = o.keyVal[:0]
	for _, k := range keys {
		d, err := k.Eval(row)
		if err != nil {
			return nil, false, err
		}
		if d.IsNull() {
			return nil, true, nil
		}
		o.keyVal = append(o.keyVal, d)
	}
	o.keyBuf = expr.AppendGroupKeyColl(o.keyBuf[:0], o.keyVal, o.colls)
	return o.keyBuf, false, nil
}

func (o *hashJoinOp) Close() error {
	err := o.build.Close()
	if perr := o.probe.Close(); err == nil {
		err = perr
	}
	o.table, o.all, o.in = nil, nil, nil
	o.closeSpill()
	o.mem.Release()
	return err
}

func (o *hashJoinOp) Next(ctx context.Context, ck *Chunk) error {
	ck.reset()
	// A join makes rows without waiting for the cluster, where a killed
	// statement would otherwise stop (KILL QUERY, max_execution_time, the
	// client gone): it checks its context once per chunk and per probe
	// chunk, so a cross join of large inputs stops with 1317.
	if err := ctx.Err(); err != nil {
		return err
	}
	for !ck.full() {
		if o.mpos < len(o.matches) {
			m := o.matches[o.mpos]
			o.mpos++
			row := ck.alloc()
			o.fill(row, o.in.rows[o.pos-1], m)
			ok, err := condAll(o.p.Other, row)
			if err != nil {
				return err
			}
			if !ok {
				ck.rows = ck.rows[:len(ck.rows)-1]
				continue
			}
			o.matched = true
			continue
		}
		if o.matches != nil && !o.matched && o.outerProbe {
			o.fill(ck.alloc(), o.in.rows[o.pos-1], nil)
		}
		o.matches, o.mpos, o.matched = nil, 0, false
		if o.in == nil || o.pos >= len(o.in.rows) {
			if o.done {
				return nil
			}
			if o.in == nil {
				o.in = newChunk(o.probe.width(), chunkRows)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := o.probeSrc.Next(ctx, o.in); err != nil {
				return err
			}
			o.pos = 0
			if len(o.in.rows) == 0 {
				if o.spilled != nil {
					more, err := o.nextPartition()
					if err != nil {
						return err
					}
					if more {
						continue
					}
				}
				o.done = true
				return nil
			}
		}
		r := o.in.rows[o.pos]
		o.pos++
		if o.table == nil {
			o.matches = o.all
		} else {
			k, null, err := o.key(o.probeKeys, r)
			if err != nil {
				return err
			}
			if !null {
				o.matches = o.table[string(k)]
			}
		}
		if o.matches == nil {
			o.matches = [][]datum{} // no match: the outer row is still emitted
		}
	}
	return nil
}

// fill writes the joined row of probe row pr and build row br (nil: the
// NULL row) into row, left side first.
func (o *hashJoinOp) fill(row, pr, br []datum) {
	lw := o.p.LeftW
	if o.p.BuildRight {
		copy(row[:lw], pr)
		if br == nil {
			clear(row[lw:])
		} else {
			copy(row[lw:], br)
		}
		return
	}
	copy(row[lw:], pr)
	if br == nil {
		clear(row[:lw])
	} else {
		copy(row[:lw], br)
	}
}

// indexJoinOp is planner.IndexJoin: per chunk of outer rows, the inner
// rows with the chunk's distinct key values are read in one batch (a
// BatchGet of row keys, or point ranges of an index), filtered, locked
// for FOR UPDATE, and joined with the chunk by a hashJoinOp.
type indexJoinOp struct {
	rc    *runCtx
	p     *planner.IndexJoin
	outer Operator

	oc   *Chunk
	cur  *hashJoinOp
	seen map[string]bool
	kbuf []byte
}

func (o *indexJoinOp) width() int { return o.p.Join.LeftW + o.p.Join.RightW }

func (o *indexJoinOp) Open(ctx context.Context) error {
	o.cur = nil
	if o.oc == nil {
		o.oc = newChunk(o.outer.width(), chunkRows)
	}
	return o.outer.Open(ctx)
}

func (o *indexJoinOp) Close() error {
	if o.cur != nil {
		o.cur.Close()
		o.cur = nil
	}
	return o.outer.Close()
}

func (o *indexJoinOp) Next(ctx context.Context, ck *Chunk) error {
	for {
		if o.cur != nil {
			if err := o.cur.Next(ctx, ck); err != nil || len(ck.rows) > 0 {
				return err
			}
			o.cur.Close()
			o.cur = nil
		}
		if err := o.outer.Next(ctx, o.oc); err != nil {
			return err
		}
		if len(o.oc.rows) == 0 {
			ck.reset()
			return nil
		}
		inner, err := o.lookup(ctx, o.oc.rows)
		if err != nil {
			return err
		}
		outerRows := o.oc.rows
		build := &rowsOp{w: len(o.p.Inner.Cols), load: func(context.Context) ([][]datum, error) { return inner, nil }}
		probe := &rowsOp{w: o.outer.width(), load: func(context.Context) ([][]datum, error) { return outerRows, nil }}
		o.cur = newHashJoinOp(o.p.Join, build, probe)
		if err := o.cur.Open(ctx); err != nil {
			return err
		}
	}
}

// lookup reads the inner rows matching the outer rows' keys.
func (o *indexJoinOp) lookup(ctx context.Context, outer [][]datum) ([][]datum, error) {
	p := o.p
	outerKeys := p.Join.LeftKeys
	if !p.InnerRight {
		outerKeys = p.Join.RightKeys
	}
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	clear(o.seen)
	var handles []int64
	var ranges []planner.Range
	vals := make([]datum, len(outerKeys))
	for _, r := range outer {
		null := false
		for j, k := range outerKeys {
			d, err := k.Eval(r)
			if err != nil {
				return nil, err
			}
			if d.IsNull() {
				null = true
				break
			}
			vals[j] = d
		}
		if null {
			continue
		}
		if p.HandleKey >= 0 {
			h, ok := handleValue(vals[p.HandleKey])
			if !ok {
				continue
			}
			o.kbuf = rowKey(o.kbuf[:0], vals[p.HandleKey:p.HandleKey+1])
			if !o.seen[string(o.kbuf)] {
				o.seen[string(o.kbuf)] = true
				handles = append(handles, h)
			}
			continue
		}
		pt := make([]datum, len(p.IndexKeys))
		for i, j := range p.IndexKeys {
			if j < 0 {
				pt[i] = p.Consts[-j-1]
			} else {
				pt[i] = vals[j]
			}
		}
		o.kbuf = rowKey(o.kbuf[:0], pt)
		if !o.seen[string(o.kbuf)] {
			o.seen[string(o.kbuf)] = true
			ranges = append(ranges, planner.Range{Low: pt, High: pt})
		}
	}
	var rows [][]datum
	var err error
	switch {
	case len(handles) > 0:
		rows, err = drain(ctx, &batchPointGetOp{rc: o.rc, p: &planner.BatchPointGet{Src: p.Inner, Handles: handles}}, nil)
	case len(ranges) > 0 && p.Unique:
		// Every column of a unique key: one BatchGet of the keys (batched
		// per region), not a request per key.
		vals := make([][]types.Datum, len(ranges))
		for i, r := range ranges {
			vals[i] = r.Low
		}
		rows, err = drain(ctx, &batchPointGetOp{rc: o.rc, p: &planner.BatchPointGet{Src: p.Inner, Index: p.Index, Values: vals}}, nil)
	case len(ranges) > 0 && p.Inner.Table.Clustered(p.Index):
		// A clustered PRIMARY KEY: the rows are read by their keys' ranges,
		// in key order as the stores want them.
		type keyed struct {
			r     planner.Range
			start []byte
		}
		ks := make([]keyed, len(ranges))
		for i, r := range ranges {
			ks[i].r = r
			ks[i].start, _ = planner.PKKeyRange(p.Inner.Table, r)
		}
		slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.start, b.start) })
		for i := range ks {
			ranges[i] = ks[i].r
		}
		rows, err = drain(ctx, &tableReaderOp{rc: o.rc, scan: &planner.TableScan{Src: p.Inner, PKRanges: ranges}}, nil)
	case len(ranges) > 0:
		scan := &planner.IndexScan{Src: p.Inner, Index: p.Index, Ranges: ranges}
		rows, err = drain(ctx, &indexLookUpOp{idx: indexReaderOp{rc: o.rc, scan: scan}}, nil)
	}
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	for _, f := range p.Filters {
		if rows, err = filterRows(f, rows); err != nil {
			return nil, err
		}
	}
	if p.Lock != nil && len(rows) > 0 {
		return o.rc.lockRows(ctx, p.Inner, p.Lock.Where, nil, p.Lock.NoWait, rows)
	}
	return rows, nil
}

// handleValue is an integer key as a handle (false: no row can have it).
func handleValue(d datum) (int64, bool) {
	switch d.Kind() {
	case types.KindInt64:
		return d.Int64(), true
	case types.KindUint64:
		if d.Uint64() <= math.MaxInt64 {
			return int64(d.Uint64()), true
		}
	}
	return 0, false
}
