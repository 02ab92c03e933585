package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient/rpcstats"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
)

// chunkRows is the number of rows an operator passes up per Next; a chunk
// starts with room for firstChunkRows and doubles (TiDB: 32, then up to
// max_chunk_size), so small results stay small.
const (
	chunkRows      = 256
	firstChunkRows = 32
)

// Chunk is a batch of rows of one width. Rows returned by an operator's
// Next stay valid until its next Next call: a consumer that keeps rows
// copies them.
type Chunk struct {
	rows  [][]datum
	slab  []datum
	width int
	max   int
}

func newChunk(width, max int) *Chunk {
	return &Chunk{width: width, max: max}
}

func (c *Chunk) reset() { c.rows = c.rows[:0] }

// reserve sizes a chunk's first slab for the n rows its producer knows it
// will put there (TiDB's InitCap: a point get's one row, a batch point
// get's keys), instead of firstChunkRows: a one-row read of a wide table
// would otherwise allocate 32 rows of it. A chunk that already has a slab
// keeps it.
func (c *Chunk) reserve(n int) {
	if c.slab == nil && n > 0 {
		c.slab = make([]datum, min(n, c.max)*c.width)
	}
}

// alloc returns a zeroed row slot appended to c.
func (c *Chunk) alloc() []datum {
	i := len(c.rows)
	if len(c.slab) < (i+1)*c.width {
		n := min(c.max, max(firstChunkRows, 2*(i+1))) * c.width
		ns := make([]datum, n)
		copy(ns, c.slab[:i*c.width])
		for j := range c.rows { // re-point rows at the new slab
			c.rows[j] = ns[j*c.width : (j+1)*c.width : (j+1)*c.width]
		}
		c.slab = ns
	}
	r := c.slab[i*c.width : (i+1)*c.width : (i+1)*c.width]
	clear(r)
	c.rows = append(c.rows, r)
	return r
}

func (c *Chunk) full() bool { return len(c.rows) >= c.max }

// Operator is one node of a running plan. Open prepares it, Next fills
// ck (after resetting it) with at most ck.max rows and leaves it empty
// at the end, Close releases it. Operators run on the caller's goroutine.
type Operator interface {
	Open(ctx context.Context) error
	Next(ctx context.Context, ck *Chunk) error
	Close() error
	// width is the number of datums of the rows it produces.
	width() int
}

// runCtx is what operators of one statement share.
type runCtx struct {
	e   *Executor
	tx  TxnSource
	txn kv.Txn
	mem *memory.Statement // nil: untracked
	// rpcs counts the statement's coprocessor RPCs (rc.coprocessor puts
	// it in each call's context; observeRPCs records it at the end).
	rpcs rpcstats.Counter
	// warnings are the statement's (Result.Warnings); operators may add
	// them from their own goroutines.
	warnMu   sync.Mutex
	warnings []Warning
}

// warn adds a Warning-level message to the statement's result.
func (rc *runCtx) warn(code uint16, msg string) {
	rc.warnMu.Lock()
	rc.warnings = append(rc.warnings, Warning{Level: "Warning", Code: code, Msg: msg})
	rc.warnMu.Unlock()
}

// MemoryTracked is implemented by a TxnSource whose statements' memory is
// tracked (the session): operators that keep rows report them to it, and
// spill or fail with ERROR 8175 past tidb_mem_quota_query.
type MemoryTracked interface {
	StatementMemory() *memory.Statement
}

func newRunCtx(e *Executor, tx TxnSource, txn kv.Txn) *runCtx {
	rc := &runCtx{e: e, tx: tx, txn: txn}
	if m, ok := tx.(MemoryTracked); ok {
		rc.mem = m.StatementMemory()
	}
	return rc
}

// build turns a physical plan into operators; analyze wraps each in a
// statistics collector (EXPLAIN ANALYZE).
func (rc *runCtx) build(p planner.Plan, stats map[planner.Plan]*opStats) (Operator, error) {
	op, err := rc.buildOne(p, stats)
	if err != nil || stats == nil {
		return op, err
	}
	st := &opStats{}
	stats[p] = st
	if c, ok := op.(copStatsOp); ok {
		st.cop = &copStats{}
		c.setCopStats(st.cop)
	}
	return &statsOp{Operator: op, st: st}, nil
}

func (rc *runCtx) buildChild(p planner.Plan, stats map[planner.Plan]*opStats) (Operator, error) {
	return rc.build(p.Base().Children[0], stats)
}

func (rc *runCtx) buildOne(p planner.Plan, stats map[planner.Plan]*opStats) (Operator, error) {
	switch x := p.(type) {
	case *planner.TableDual:
		return &dualOp{rows: x.Rows, w: max(x.Width, 1)}, nil
	case *planner.Union:
		ops := make([]Operator, len(x.Children))
		for i, c := range x.Children {
			op, err := rc.build(c, stats)
			if err != nil {
				return nil, err
			}
			ops[i] = op
		}
		return &unionOp{children: ops}, nil
	case *planner.HashJoin:
		build, err := rc.build(x.Children[0], stats)
		if err != nil {
			return nil, err
		}
		probe, err := rc.build(x.Children[1], stats)
		if err != nil {
			return nil, err
		}
		o := newHashJoinOp(x, build, probe)
		o.mem = memory.NewTracker(rc.mem)
		return o, nil
	case *planner.IndexJoin:
		outer, err := rc.build(x.Children[0], stats)
		if err != nil {
			return nil, err
		}
		return &indexJoinOp{rc: rc, p: x, outer: outer}, nil
	case *planner.SubqueryScan:
		child, err := rc.buildChild(p, stats)
		if err != nil {
			return nil, err
		}
		return &padOp{child: child, w: len(x.Src.Cols)}, nil
	case *planner.SetOp:
		l, err := rc.build(x.Children[0], stats)
		if err != nil {
			return nil, err
		}
		r, err := rc.build(x.Children[1], stats)
		if err != nil {
			return nil, err
		}
		return &rowsOp{w: l.width(), load: func(ctx context.Context) ([][]datum, error) { return setOpRows(ctx, x, l, r) }}, nil
	case *planner.RecursiveCTE:
		return &rowsOp{w: x.Width, load: func(ctx context.Context) ([][]datum, error) { return rc.recursiveCTE(ctx, x, stats) }}, nil
	case *planner.CTETable:
		st := x.Storage
		return &rowsOp{w: x.Width, load: func(context.Context) ([][]datum, error) { return st.Rows, nil }}, nil
	case *planner.MemTableScan:
		mt, env := x.Src.Mem, x.Env
		return &rowsOp{w: len(x.Src.Cols), load: func(ctx context.Context) ([][]datum, error) { return mt.Rows(ctx, env) }}, nil
	case *planner.PointGet:
		return &pointGetOp{rc: rc, p: x}, nil
	case *planner.BatchPointGet:
		return &batchPointGetOp{rc: rc, p: x}, nil
	case *planner.TableReader:
		if x.Scan.CountOnly {
			return &countOp{rc: rc, src: x.Scan.Src}, nil
		}
		return &tableReaderOp{rc: rc, scan: x.Scan, conds: x.Conds, topN: x.TopN}, nil
	case *planner.IndexReader:
		return &indexReaderOp{rc: rc, scan: x.Scan, conds: x.Conds, topN: x.TopN}, nil
	case *planner.HashAgg:
		if x.PushedCount { // the stores count: the reader below is not run
			return &countOp{rc: rc, src: x.Children[0].(*planner.TableReader).Scan.Src}, nil
		}
		if x.PushedPartial { // the stores aggregate each region
			return &partialAggOp{rc: rc, p: x, reader: x.Children[0].(*planner.TableReader)}, nil
		}
	case *planner.IndexLookUp:
		return &indexLookUpOp{idx: indexReaderOp{rc: rc, scan: x.Index}, pushed: x.Pushed}, nil
	}
	child, err := rc.buildChild(p, stats)
	if err != nil {
		return nil, err
	}
	switch x := p.(type) {
	case *planner.Selection:
		return &selectionOp{child: child, conds: x.Conds}, nil
	case *planner.SelectLock:
		return &selectLockOp{rc: rc, child: child, p: x}, nil
	case *planner.HashAgg:
		return &hashAggOp{child: child, p: x, mem: memory.NewTracker(rc.mem), rc: rc}, nil
	case *planner.Sort:
		return &sortOp{child: child, keys: x.Keys, mem: memory.NewTracker(rc.mem)}, nil
	case *planner.TopN:
		return &sortOp{child: child, keys: x.Keys, topN: true, offset: x.Offset, count: x.Count, mem: memory.NewTracker(rc.mem)}, nil
	case *planner.Limit:
		return &limitOp{child: child, offset: x.Offset, count: x.Count}, nil
	case *planner.Projection:
		return &projectionOp{child: child, exprs: x.Exprs}, nil
	case *planner.Distinct:
		return &distinctOp{child: child, mem: memory.NewTracker(rc.mem), colls: outputCollations(x.Children[0])}, nil
	case *planner.Window:
		return &rowsOp{w: x.Width, load: func(ctx context.Context) ([][]datum, error) { return windowRows(ctx, x, child) }}, nil
	}
	return nil, fmt.Errorf("executor: no operator for plan %T", p)
}

// drain runs op to the end and returns its rows (copied). They count as
// the statement's memory (mem may be nil) until it ends, but not toward
// its quota: a result set is held until it is sent, it cannot spill.
func drain(ctx context.Context, op Operator, mem *memory.Statement) (rows [][]datum, err error) {
	w := op.width()
	var slab []datum
	tr := memory.NewResultTracker(mem)
	err = runOp(ctx, op, func(ck *Chunk) error {
		if err := tr.Consume(rowsSize(ck.rows)); err != nil {
			return err
		}
		if cap(slab)-len(slab) < len(ck.rows)*w {
			slab = make([]datum, 0, max(len(ck.rows)*w, 2*cap(slab)))
		}
		for _, r := range ck.rows {
			start := len(slab)
			slab = append(slab, r...)
			rows = append(rows, slab[start:len(slab):len(slab)])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// runOp opens op, hands each chunk it produces to each until it ends, and
// closes it.
func runOp(ctx context.Context, op Operator, each func(*Chunk) error) (err error) {
	if err := op.Open(ctx); err != nil {
		op.Close()
		return err
	}
	defer func() {
		if cerr := op.Close(); err == nil {
			err = cerr
		}
	}()
	ck := newChunk(op.width(), chunkRows)
	for {
		if err := op.Next(ctx, ck); err != nil {
			return err
		}
		if len(ck.rows) == 0 {
			return nil
		}
		if err := each(ck); err != nil {
			return err
		}
	}
}

// opStats are one operator's EXPLAIN ANALYZE numbers.
type opStats struct {
	rows  int64
	loops int64
	time  time.Duration
	cop   *copStats // the operator's coprocessor tasks, if it sends any
}

type statsOp struct {
	Operator
	st *opStats
}

func (s *statsOp) Open(ctx context.Context) error {
	t := time.Now()
	err := s.Operator.Open(ctx)
	s.st.time += time.Since(t)
	return err
}

func (s *statsOp) Next(ctx context.Context, ck *Chunk) error {
	t := time.Now()
	err := s.Operator.Next(ctx, ck)
	s.st.time += time.Since(t)
	s.st.loops++
	s.st.rows += int64(len(ck.rows))
	return err
}
