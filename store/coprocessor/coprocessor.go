package coprocessor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// ErrUnsupported is returned for DAG shapes this store cannot execute.
var ErrUnsupported = errors.New("coprocessor: unsupported executor chain")

// ErrScanLimit is returned when a request scans more rows than its
// max_scan_rows (or DefaultMaxScanRows) allows.
var ErrScanLimit = errors.New("coprocessor: request scanned more rows than its limit; use a smaller page or narrower ranges")

// CodedError is an expression error carrying its MySQL code
// (sql/errno.Coded; sql/expr.RangeError is one): the store answers it as
// SelectResponse.error so that the client sees the code, not ERROR 1105.
type CodedError interface {
	error
	MySQLError() (code uint16, msg string)
}

// DefaultMaxScanRows bounds the rows one request may scan when it does not
// say (max_scan_rows 0): a pushed-down Selection that keeps nothing would
// otherwise read a whole region in one request.
const DefaultMaxScanRows = 4 << 20

// Range is one user key range [Start, End); an empty End means unbounded.
type Range struct {
	Start, End []byte
}

// RangesFromProto converts request ranges.
func RangesFromProto(rs []*kvrpcpb.KeyRange) []Range {
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = Range{Start: r.GetStart(), End: r.GetEnd()}
	}
	return out
}

// aggFunc is one expression-form aggregate.
type aggFunc struct {
	tp  coprocessorpb.AggFuncType
	arg expr.Expr // nil: COUNT(*)
}

type sortKey struct {
	e    expr.Expr
	desc bool
	ft   types.FieldType
}

// plan is a validated executor chain:
//
//	(TableScan | IndexScan) → Selection* → (Limit | TopN)* → Projection? → Aggregation?
//	IndexScan → IndexLookUp → Limit*
type plan struct {
	desc   bool
	tbl    *model.TableInfo // nil: rows are opaque
	idx    *model.IndexInfo // the source is an IndexScan of this index
	lookup bool             // IndexLookUp: each entry's row is read
	hasSel bool
	conds  []expr.Expr
	limit  int // 0 = none, -1 = LIMIT 0
	topN   []sortKey
	topK   int
	proj   []expr.Expr
	isAgg  bool
	legacy []coprocessorpb.AggFuncType // COUNT(*) over opaque rows
	aggs   []aggFunc
	group  []expr.Expr // GROUP BY keys (partial states per group)
	// groupColls: the collations of the group keys (nil: all bytewise);
	// strings group by their sort key, as on the SQL node.
	groupColls []*collate.Collation
	paging     int
	// pageRows and pageTime bound one response by rows scanned and by
	// execution time (DAGRequest.page_scan_rows, page_ms); 0: unbounded.
	pageRows int64
	pageTime time.Duration
	// stage of each executor, for summaries: rows an executor produced are
	// counted where it hands them on.
	nexec int
}

func buildPlan(dag *coprocessorpb.DAGRequest, w expr.Warner) (plan, error) {
	var p plan
	execs := dag.GetExecutors()
	p.nexec = len(execs)
	switch {
	case len(execs) == 0:
		return p, fmt.Errorf("%w: the first executor must be a TableScan or an IndexScan", ErrUnsupported)
	case execs[0].GetTp() == coprocessorpb.ExecType_TypeIndexScan:
		if err := p.indexSource(execs[0].GetIdxScan()); err != nil {
			return p, err
		}
	case execs[0].GetTp() == coprocessorpb.ExecType_TypeTableScan:
		ts := execs[0].GetTblScan()
		p.desc = ts.GetDesc()
		if ti := ts.GetTableInfo(); len(ti) > 0 {
			t, err := schemaOf(ti)
			if err != nil {
				return p, err
			}
			p.tbl = t
		}
	default:
		return p, fmt.Errorf("%w: the first executor must be a TableScan or an IndexScan", ErrUnsupported)
	}
	width := 0
	if p.tbl != nil {
		width = p.tbl.RowWidth()
	}
	compile := func(e *coprocessorpb.Expr) (expr.Expr, error) {
		if p.tbl == nil {
			return nil, fmt.Errorf("%w: an expression over opaque rows (TableScan without table_info)", ErrUnsupported)
		}
		x, err := expr.FromPBWarn(e, width, w)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return x, nil
	}
	// stage: 0 selections, 1 limit/topN, 2 projection, 3 aggregation.
	stage, hasSel := 0, false
	for i, e := range execs[1:] {
		if p.lookup && e.GetTp() != coprocessorpb.ExecType_TypeLimit {
			return p, fmt.Errorf("%w: %v after IndexLookUp", ErrUnsupported, e.GetTp())
		}
		switch e.GetTp() {
		case coprocessorpb.ExecType_TypeIndexLookUp:
			if i != 0 || p.idx == nil {
				return p, fmt.Errorf("%w: IndexLookUp must follow an IndexScan", ErrUnsupported)
			}
			if e.GetIdxLookup().GetTableId() != p.tbl.ID {
				return p, fmt.Errorf("%w: IndexLookUp of table %d over an index of table %d", ErrUnsupported, e.GetIdxLookup().GetTableId(), p.tbl.ID)
			}
			p.lookup = true
		case coprocessorpb.ExecType_TypeSelection:
			if stage > 0 || hasSel {
				return p, fmt.Errorf("%w: Selection after executor %d", ErrUnsupported, i)
			}
			hasSel = true
			for _, c := range e.GetSelection().GetConditions() {
				x, err := compile(c)
				if err != nil {
					return p, err
				}
				p.conds = append(p.conds, x)
			}
		case coprocessorpb.ExecType_TypeLimit:
			if stage > 1 {
				return p, fmt.Errorf("%w: Limit after Projection or Aggregation", ErrUnsupported)
			}
			stage = 1
			// Several limits: the smallest wins; LIMIT 0 (-1 here) reads nothing.
			switch l := int(e.GetLimit().GetLimit()); {
			case l == 0:
				p.limit = -1
			case p.limit == 0 || (p.limit > 0 && l < p.limit):
				p.limit = l
			}
		case coprocessorpb.ExecType_TypeTopN:
			if stage > 1 || p.topN != nil || p.limit != 0 {
				return p, fmt.Errorf("%w: TopN must follow the scan and selections only", ErrUnsupported)
			}
			stage = 1
			tn := e.GetTopN()
			if len(tn.GetOrderBy()) == 0 {
				return p, fmt.Errorf("%w: TopN without ORDER BY", ErrUnsupported)
			}
			for _, by := range tn.GetOrderBy() {
				x, err := compile(by.GetExpr())
				if err != nil {
					return p, err
				}
				p.topN = append(p.topN, sortKey{e: x, desc: by.GetDesc(), ft: x.Type()})
			}
			p.topK = int(min(tn.GetLimit(), 1<<30))
			if p.topK == 0 {
				p.limit = -1
			}
		case coprocessorpb.ExecType_TypeProjection:
			if stage > 1 || p.proj != nil {
				return p, fmt.Errorf("%w: Projection after Aggregation or twice", ErrUnsupported)
			}
			stage = 2
			for _, pe := range e.GetProjection().GetExprs() {
				x, err := compile(pe)
				if err != nil {
					return p, err
				}
				p.proj = append(p.proj, x)
			}
		case coprocessorpb.ExecType_TypeAggregation:
			if p.isAgg {
				return p, fmt.Errorf("%w: two Aggregations", ErrUnsupported)
			}
			if p.topN != nil || p.proj != nil {
				return p, fmt.Errorf("%w: Aggregation after TopN or Projection", ErrUnsupported)
			}
			stage = 3
			p.isAgg = true
			a := e.GetAggregation()
			for _, f := range a.GetAggFunc() {
				if f != coprocessorpb.AggFuncType_Count {
					return p, fmt.Errorf("%w: aggregate function %v without an argument", ErrUnsupported, f)
				}
			}
			p.legacy = a.GetAggFunc()
			for _, f := range a.GetFuncs() {
				af := aggFunc{tp: f.GetTp()}
				if f.GetArg() != nil {
					x, err := compile(f.GetArg())
					if err != nil {
						return p, err
					}
					af.arg = x
				} else if f.GetTp() != coprocessorpb.AggFuncType_Count {
					return p, fmt.Errorf("%w: %v needs an argument", ErrUnsupported, f.GetTp())
				}
				p.aggs = append(p.aggs, af)
			}
			for _, g := range a.GetGroupBy() {
				x, err := compile(g)
				if err != nil {
					return p, err
				}
				p.group = append(p.group, x)
			}
			p.groupColls = expr.Collations(p.group)
			if len(p.legacy) > 0 && (len(p.aggs) > 0 || len(p.group) > 0) {
				return p, fmt.Errorf("%w: agg_func with funcs or group_by", ErrUnsupported)
			}
		default:
			return p, fmt.Errorf("%w: executor %d type %v", ErrUnsupported, i+1, e.GetTp())
		}
	}
	p.hasSel = hasSel
	if !p.isAgg && p.topN == nil {
		p.paging = int(min(dag.GetPagingSize(), 1<<30))
	}
	// A page may end anywhere but in a legacy COUNT (its answer is a bare
	// count) or under a Limit (the limit counts per request, and pages
	// would each return up to it).
	if len(p.legacy) == 0 && p.limit == 0 {
		p.pageRows = int64(min(dag.GetPageScanRows(), math.MaxInt64))
		p.pageTime = time.Duration(min(dag.GetPageMs(), math.MaxInt64/uint64(time.Millisecond))) * time.Millisecond
	}
	return p, nil
}

// Scanner reads the live keys of a range at the request's timestamp
// (*mvcc.SnapshotReader): fn gets each key and value (nil with keyOnly),
// valid only during the call, in ascending order or with reverse
// descending, until it returns false. A lock that blocks the read ends the
// scan with its error (*mvcc.KeyError).
type Scanner interface {
	Scan(start, end []byte, keyOnly, reverse bool, fn func(key, value []byte) bool) error
}

// topRow is a TopN candidate: its sort keys (bytes owned) and its output.
type topRow struct {
	keys       []types.Datum
	key, value []byte
}

// run is the state of one Execute call.
type run struct {
	p        plan
	resp     *coprocessorpb.SelectResponse
	row      []types.Datum
	out      []types.Datum // projected values
	ids      []int64       // column ids 0..n-1 of an encoded projection
	produced []uint64      // rows handed on, per executor
	scanned  int64
	maxScan  int64
	emitted  int       // rows counted against limit / paging
	deadline time.Time // end of the page (pageTime); zero: none
	done     bool
	err      error
	tops     []topRow
	states   []aggState // without GROUP BY
	groups   groupTable
	// IndexLookUp
	rows    RowReader
	handle  tablecodec.Handle // the current index entry's handle
	pending []lookupRow
	keysBuf [][]byte
}

// Execute runs dag over ranges (in ascending key order, non-overlapping)
// read through r and returns the SelectResponse. An error from r (a lock
// met) is returned wrapped; so is an expression error (ERROR 1690 and the
// like, as the SQL node would raise it).
func Execute(r Scanner, dag *coprocessorpb.DAGRequest, ranges []Range) (*coprocessorpb.SelectResponse, error) {
	return ExecuteLookUp(r, nil, dag, ranges)
}

// ExecuteLookUp is Execute with rows reading the rows of an IndexLookUp
// (nil: every row is left to the SQL node).
func ExecuteLookUp(r Scanner, rows RowReader, dag *coprocessorpb.DAGRequest, ranges []Range) (*coprocessorpb.SelectResponse, error) {
	started := time.Now()
	warns := &warnings{}
	p, err := buildPlan(dag, warns)
	if err != nil {
		return nil, err
	}
	x := &run{p: p, resp: &coprocessorpb.SelectResponse{}, produced: make([]uint64, p.nexec),
		maxScan: int64(dag.GetMaxScanRows()), rows: rows}
	if x.maxScan == 0 {
		x.maxScan = DefaultMaxScanRows
	}
	if p.tbl != nil {
		x.row = make([]types.Datum, p.tbl.RowWidth())
	}
	if p.proj != nil {
		x.out = make([]types.Datum, len(p.proj))
		x.ids = tablecodec.SeqColumnIDs(len(p.proj))
	}
	if len(p.aggs) > 0 && len(p.group) == 0 {
		x.states = make([]aggState, len(p.aggs))
	}
	x.done = p.limit < 0
	if p.pageTime > 0 {
		x.deadline = started.Add(p.pageTime)
	}
	// COUNT(*) over opaque rows reads keys only.
	keyOnly := p.isAgg && p.tbl == nil
	n := len(ranges)
	for i := 0; i < n && !x.done; i++ {
		rg := ranges[i]
		if p.desc {
			rg = ranges[n-1-i]
		}
		err = r.Scan(rg.Start, rg.End, keyOnly, p.desc, x.visit)
		if x.err != nil {
			return nil, x.err
		}
		if err != nil {
			if p.idx != nil {
				return nil, fmt.Errorf("coprocessor: index scan: %w", err)
			}
			return nil, fmt.Errorf("coprocessor: table scan: %w", err)
		}
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	x.resp.ScannedRows = uint64(x.scanned)
	x.resp.Warnings, x.resp.WarningCount = warns.list, warns.n
	observe(dag, x.resp)
	if dag.GetCollectSummaries() {
		el := uint64(time.Since(started))
		for _, n := range x.produced {
			// The executors run as one pipeline: each one's time is the
			// request's (inclusive of the executors it reads from).
			x.resp.Summaries = append(x.resp.Summaries, &coprocessorpb.ExecutorSummary{NumProducedRows: n, NumIterations: 1, TimeProcessedNs: el})
		}
	}
	return x.resp, nil
}

// maxWarnings is how many warnings one response carries (all are
// counted in warning_count).
const maxWarnings = 64

// warnings collects the conditions a request's expressions raise, for the
// SQL node's statement (expr.Warner): the stores never decide what they
// mean, the statement's sql_mode does.
type warnings struct {
	mu   sync.Mutex
	list []*coprocessorpb.Error
	n    uint64
}

func (w *warnings) Warn(code uint16, msg string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if len(w.list) < maxWarnings {
		w.list = append(w.list, &coprocessorpb.Error{Code: uint32(code), Msg: msg})
	}
	return nil
}

func (x *run) fail(err error) bool {
	x.err = err
	return false
}

// visit handles one scanned row, then ends the page when its bounds
// (rows scanned, time) are reached: the rows up to and including k are
// in this response, so it resumes after k (ascending) or before k
// (descending).
func (x *run) visit(k, v []byte) bool {
	if !x.visitRow(k, v) {
		return false
	}
	p := &x.p
	if (p.pageRows > 0 && x.scanned >= p.pageRows) ||
		(!x.deadline.IsZero() && x.scanned&63 == 0 && time.Now().After(x.deadline)) {
		x.done = true
		x.resp.ResumeKey = resumeAfter(k, p.desc)
		return false
	}
	return true
}

// resumeAfter is the resume_key of a page whose last scanned key is k.
func resumeAfter(k []byte, desc bool) []byte {
	if desc {
		return bytes.Clone(k)
	}
	return append(bytes.Clone(k), 0)
}

func (x *run) visitRow(k, v []byte) bool {
	x.scanned++
	if x.scanned > x.maxScan {
		return x.fail(fmt.Errorf("%w (%d)", ErrScanLimit, x.maxScan))
	}
	p := &x.p
	x.produced[0]++
	if p.idx != nil {
		if err := x.decodeIndex(k, v); err != nil {
			return x.fail(err)
		}
	} else if p.tbl != nil {
		if err := p.tbl.DecodeRow(k, v, x.row); err != nil {
			return x.fail(fmt.Errorf("coprocessor: decode row of table %d: %w", p.tbl.ID, err))
		}
	}
	if p.hasSel {
		for _, c := range p.conds {
			d, err := c.Eval(x.row)
			if err != nil {
				return x.fail(err)
			}
			if t, null := expr.IsTrue(d); null || !t {
				return true
			}
		}
		x.produced[1]++
	}
	if p.topN != nil {
		return x.addTop(k, v)
	}
	if p.limit > 0 {
		x.emitted++
	}
	if p.isAgg {
		states := x.states
		if len(p.group) > 0 {
			var err error
			if states, err = x.groups.lookup(x, p); err != nil {
				return x.fail(err)
			}
		}
		if err := x.accumulate(states); err != nil {
			return x.fail(err)
		}
	} else if err := x.emit(k, v); err != nil {
		return x.fail(err)
	}
	if p.limit > 0 && x.emitted >= p.limit {
		x.done = true
		return false
	}
	if p.paging > 0 && len(x.resp.Rows)+len(x.pending) >= p.paging {
		x.done = true
		x.resp.ResumeKey = resumeAfter(k, p.desc)
		return false
	}
	return true
}

// emit appends one output row (the stored value, or the projected values
// encoded as a row).
func (x *run) emit(k, v []byte) error {
	if x.p.lookup {
		return x.queueLookup(k)
	}
	if x.p.proj == nil {
		x.resp.Rows = append(x.resp.Rows, &coprocessorpb.Row{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		return nil
	}
	for i, e := range x.p.proj {
		d, err := e.Eval(x.row)
		if err != nil {
			return err
		}
		x.out[i] = d
	}
	x.resp.Rows = append(x.resp.Rows, &coprocessorpb.Row{Key: bytes.Clone(k), Value: tablecodec.EncodeRow(nil, x.ids, x.out)})
	return nil
}

func cloneDatum(d types.Datum) types.Datum {
	return d.Clone()
}

func (x *run) cmpTop(a, b topRow) int {
	for j, k := range x.p.topN {
		p, q := a.keys[j], b.keys[j]
		var c int
		switch {
		case p.IsNull() && q.IsNull():
		case p.IsNull():
			c = -1
		case q.IsNull():
			c = 1
		default:
			c = expr.CompareAs(p, q, k.ft)
		}
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	// Ties keep scan order, so the SQL node's stable merge sees the same
	// rows whichever store answered.
	return 0
}

func (x *run) addTop(k, v []byte) bool {
	tr := topRow{keys: make([]types.Datum, len(x.p.topN))}
	for j, sk := range x.p.topN {
		d, err := sk.e.Eval(x.row)
		if err != nil {
			return x.fail(err)
		}
		tr.keys[j] = cloneDatum(d)
	}
	tr.key = bytes.Clone(k)
	if x.p.proj != nil {
		if err := x.emit(k, v); err != nil {
			return x.fail(err)
		}
		last := x.resp.Rows[len(x.resp.Rows)-1]
		x.resp.Rows = x.resp.Rows[:len(x.resp.Rows)-1]
		tr.value = last.Value
	} else {
		tr.value = bytes.Clone(v)
	}
	x.tops = append(x.tops, tr)
	if len(x.tops) >= 2*x.p.topK+64 {
		x.pruneTops()
	}
	return true
}

func (x *run) pruneTops() {
	slices.SortStableFunc(x.tops, x.cmpTop)
	if len(x.tops) > x.p.topK {
		clear(x.tops[x.p.topK:])
		x.tops = x.tops[:x.p.topK]
	}
}

func (x *run) finish() error {
	p := &x.p
	if p.topN != nil {
		x.pruneTops()
		for _, t := range x.tops {
			x.resp.Rows = append(x.resp.Rows, &coprocessorpb.Row{Key: t.key, Value: t.value})
		}
		x.countTail(len(x.tops))
		return nil
	}
	if !p.isAgg {
		if err := x.flushLookups(); err != nil {
			return err
		}
		x.countTail(len(x.resp.Rows))
		return nil
	}
	if len(p.legacy) > 0 {
		x.resp.AggValues = make([]int64, len(p.legacy))
		for i := range p.legacy {
			x.resp.AggValues[i] = x.scanned // COUNT(*) is the only legacy function.
		}
		if p.limit > 0 {
			for i := range x.resp.AggValues {
				x.resp.AggValues[i] = min(x.resp.AggValues[i], int64(x.emitted))
			}
		}
		x.produced[len(x.produced)-1] = 1
		return nil
	}
	if len(p.group) > 0 {
		x.resp.Rows = x.groups.rows(p)
		x.produced[len(x.produced)-1] = uint64(len(x.resp.Rows))
		return nil
	}
	vals := make([]types.Datum, 0, len(p.aggs)+1)
	for i, f := range p.aggs {
		vals = x.states[i].appendPartial(vals, f)
	}
	x.resp.AggRow = tablecodec.EncodeRow(nil, tablecodec.SeqColumnIDs(len(vals)), vals)
	x.produced[len(x.produced)-1] = 1
	return nil
}

// countTail fills the produced counts of the executors after the
// selections (Limit/TopN/Projection all hand on the final rows).
func (x *run) countTail(n int) {
	first := 1
	if len(x.p.conds) > 0 {
		first = 2
	}
	for i := first; i < len(x.produced); i++ {
		x.produced[i] = uint64(n)
	}
}

// schemas caches the decoded table_info of recent requests by its bytes: a
// short range read would otherwise spend more on the JSON than on its rows.
// Entries are immutable (DecodeRow is safe for concurrent use); the cache
// is emptied when it reaches maxSchemas (schema versions come and go).
var schemas struct {
	sync.Mutex
	m map[string]*model.TableInfo
}

const maxSchemas = 256

func schemaOf(info []byte) (*model.TableInfo, error) {
	schemas.Lock()
	t, ok := schemas.m[string(info)]
	schemas.Unlock()
	if ok {
		return t, nil
	}
	t = new(model.TableInfo)
	if err := json.Unmarshal(info, t); err != nil {
		return nil, fmt.Errorf("%w: table info: %v", ErrUnsupported, err)
	}
	t.Init()
	schemas.Lock()
	if schemas.m == nil || len(schemas.m) >= maxSchemas {
		schemas.m = make(map[string]*model.TableInfo)
	}
	schemas.m[string(info)] = t
	schemas.Unlock()
	return t, nil
}
