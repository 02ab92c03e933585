package planner

import (
	"fmt"
	"github.com/stratadb/strata/sql/tablecodec"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/types"
)

// Source is the table a statement reads, with its row layout: every
// column by offset, then the handle.
type Source struct {
	DB    *model.DBInfo
	Table *model.TableInfo
	Alias string
	Cols  []expr.SchemaColumn
	Hints []*ast.IndexHint
	// Mem, when set, is a system table read in memory (MemTableScan);
	// Table describes its columns only (no id, keys or indexes).
	Mem MemTable
	// Sub, when set, is a derived table's query (SubqueryScan); Table
	// describes its columns only.
	Sub *SelectPlan
	// AliasO is the alias (or table name) as the statement spells it, for
	// the table name of result columns.
	AliasO string
	// View, when set, is the view this derived table expands (Sub is its
	// query).
	View *model.TableInfo
	// Join, when set, is the join tree of a FROM clause with several
	// tables; Cols are every table's columns side by side and Table
	// describes nothing.
	Join *JoinInfo
	// Stats are the table's statistics from ANALYZE (nil: none, the
	// estimates are TiDB's pseudo ones).
	Stats *statistics.Table
	// RealtimeCount is the table's row count now, from the modify counts
	// (0: unknown, Stats.Count is used). Estimates from Stats, which
	// count the rows ANALYZE saw, are scaled to it (TiDB's increase
	// factor), so a table that grew since its ANALYZE is not taken for
	// its old size.
	RealtimeCount int64
}

// orgTable is the org_table of result columns: the table's name, none for
// a derived table.
func (s *Source) orgTable() string {
	if s.Sub != nil {
		return ""
	}
	return s.Table.Name
}

// DisplayName is the table name result columns carry: the alias as
// written.
func (s *Source) DisplayName() string {
	if s.AliasO != "" {
		return s.AliasO
	}
	return s.Alias
}

// HandleOffset is the row slot of the handle as a column: the integer
// primary key, or the hidden _tidb_rowid.
func (s *Source) HandleOffset() int {
	if s.Table.PKIsHandle {
		return s.Table.HandleOffset
	}
	return len(s.Table.Columns)
}

// columnOffset resolves a column name against the source (-1: not one of
// its columns).
func (s *Source) columnOffset(n *ast.ColumnName) int {
	if s.Join != nil {
		return s.Join.columnOffset(s.Cols, n)
	}
	if n.Table.L != "" && n.Table.L != s.Alias {
		return -1
	}
	if n.Schema.L != "" && !strings.EqualFold(n.Schema.O, s.DB.Name) {
		return -1
	}
	for i, c := range s.Cols {
		if strings.EqualFold(c.Name, n.Name.O) {
			return i
		}
	}
	return -1
}

func (s *Source) colName(off int) string {
	if s.Join != nil {
		return s.Join.colName(off)
	}
	if s.DB.Name == "" { // a derived table
		return s.Alias + "." + strings.ToLower(s.Cols[off].Name)
	}
	return strings.ToLower(s.DB.Name) + "." + s.Alias + "." + strings.ToLower(s.Cols[off].Name)
}

// ResultColumn describes one column of a result set.
type ResultColumn struct {
	DB, Table, OrgTable, Name, OrgName string
	Type                               types.FieldType
}

// Plan is a node of a physical plan.
type Plan interface {
	Base() *BasePlan
	// info returns the EXPLAIN "access object" and "operator info".
	info() (access, op string)
}

// BasePlan holds what every plan node has.
type BasePlan struct {
	ID       int
	Tp       string  // operator name, as EXPLAIN shows it
	EstRows  float64 // estimated output rows
	Task     string  // "root" (SQL node) or "cop[tikv]" (stores)
	Children []Plan
	// Label is "Build" / "Probe" for the sides of an IndexLookUp.
	Label string
}

// Base implements Plan.
func (b *BasePlan) Base() *BasePlan { return b }

// ExplainID is the operator's name and id, e.g. Point_Get_1.
func (b *BasePlan) ExplainID() string { return b.Tp + "_" + strconv.Itoa(b.ID) }

// AggSpec is one aggregate function call.
type AggSpec struct {
	Fn  string    // count, sum, avg, max, min, var_pop, var_samp, stddev_pop, stddev_samp, bit_and, bit_or, bit_xor, group_concat, json_arrayagg, json_objectagg
	Arg expr.Expr // nil: COUNT(*); the first argument when there are several
	// Args are every argument of COUNT(DISTINCT a, b, ...) and of
	// GROUP_CONCAT (nil for the others): a row with a NULL in any of them
	// is skipped, and DISTINCT compares them together. JSON_ARRAYAGG and
	// JSON_OBJECTAGG have theirs here too, and take NULLs as JSON nulls.
	Args     []expr.Expr
	Distinct bool
	Ft       types.FieldType
	Node     *ast.AggregateFuncExpr // for EXPLAIN; nil: count(1)
	// GROUP_CONCAT's ORDER BY (evaluated on the input row), SEPARATOR
	// and the statement's group_concat_max_len (bytes; longer results
	// are cut there, on a character boundary).
	Order  []SortKey
	Sep    []byte
	MaxLen int
}

// SortKey is one ORDER BY item.
type SortKey struct {
	E    expr.Expr
	Desc bool
	Node ast.ExprNode // for EXPLAIN
}

// TableDual produces Rows empty rows of width Width (1: SELECT without
// FROM; 0: a WHERE that is never true).
type TableDual struct {
	BasePlan
	Rows, Width int
	rebuild     *rangeSpec // a cached plan: the ranges that were empty
}

// PointGet reads one row by handle, or by the values of a unique index.
type PointGet struct {
	BasePlan
	Src    *Source
	Handle int64
	Index  *model.IndexInfo // nil: by handle
	Values []types.Datum    // index values
	// rebuild: a cached plan's key comes from parameters (cache.go).
	rebuild *rangeSpec
}

// ReadsRowKey reports whether p reads its row's key directly: by handle,
// or by the values of a clustered PRIMARY KEY, the row key's.
func (p *PointGet) ReadsRowKey() bool { return p.Index == nil || p.Src.Table.Clustered(p.Index) }

// Key is the key p reads first: its row's when ReadsRowKey, else its
// unique index entry's.
func (p *PointGet) Key() []byte {
	if p.Index != nil {
		return UniqueKey(p.Src, p.Index, p.Values)
	}
	return tablecodec.RowKey(p.Src.Table.ID, p.Handle)
}

// BatchPointGet reads rows by several handles or unique index values.
type BatchPointGet struct {
	BasePlan
	Src     *Source
	Handles []int64 // ascending, distinct
	Index   *model.IndexInfo
	Values  [][]types.Datum
	rebuild *rangeSpec
}

// TableScan reads row keys in handle ranges (cop task of a TableReader).
type TableScan struct {
	BasePlan
	Src    *Source
	Ranges []HandleRange
	// PKRanges, when set, replace Ranges: ranges over the columns of a
	// clustered PRIMARY KEY (a common-handle table), the row keys'.
	PKRanges  []Range
	Full      bool
	KeepOrder bool
	Desc      bool
	// Limit, when > 0, is pushed to the stores: at most Limit rows.
	Limit uint64
	// CountOnly: the stores count the rows (COUNT(*) without WHERE).
	CountOnly bool
	rebuild   *rangeSpec
}

// KeyRanges are the [start, end) row-key ranges s reads, in key order.
func (s *TableScan) KeyRanges() [][2][]byte {
	t := s.Src.Table
	if s.PKRanges != nil {
		out := make([][2][]byte, len(s.PKRanges))
		for i, r := range s.PKRanges {
			out[i][0], out[i][1] = PKKeyRange(t, r)
		}
		return out
	}
	out := make([][2][]byte, len(s.Ranges))
	for i, r := range s.Ranges {
		out[i][0], out[i][1] = r.Keys(t.ID)
	}
	return out
}

// TableReader is the root side of a table scan.
type TableReader struct {
	BasePlan
	Scan *TableScan
	// Conds are pushed to the stores (a cop[tikv] Selection between the
	// scan and the reader). A reader that reads through the transaction
	// instead (its own writes, READ COMMITTED) applies them itself.
	Conds []expr.Expr
	// Aggs, when set, are computed per region on the stores as partial
	// states (a cop[tikv] HashAgg), per group of GroupBy; the HashAgg
	// above (PushedPartial) merges them. FirstRow are the source columns
	// whose value in each group's first row the stores return too (the
	// columns the expressions above the aggregation read).
	Aggs     []AggSpec
	GroupBy  []expr.Expr
	FirstRow []int
	// TopN, when set, is computed per region on the stores (Count rows,
	// no offset); the root TopN above merges the regions' rows.
	TopN *TopN
}

// IndexScan reads index entries in ranges.
type IndexScan struct {
	BasePlan
	Src       *Source
	Index     *model.IndexInfo
	Ranges    []Range
	KeepOrder bool
	Desc      bool
	// Limit, when > 0: at most Limit entries are needed (the first page's
	// size).
	Limit   uint64
	rebuild *rangeSpec
}

// Full reports whether the scan reads the whole index.
func (s *IndexScan) Full() bool {
	return len(s.Ranges) == 1 && len(s.Ranges[0].Low) == 0 && len(s.Ranges[0].High) == 0
}

// IndexReader reads a covering index: the rows are the index values and
// the handle. Conds and TopN are pushed to the stores as for a
// TableReader.
type IndexReader struct {
	BasePlan
	Scan  *IndexScan
	Conds []expr.Expr
	TopN  *TopN
}

// TableRowIDScan reads rows by the handles an index scan found.
type TableRowIDScan struct {
	BasePlan
	Src *Source
}

// IndexLookUp reads handles from an index, then their rows in batches,
// in index order. Pushed: the stores read the rows of the index entries
// they find where they lead the row's region, in the index scan's
// request (one cop[tikv] IndexLookUp under this one, TiDB 8.5.5's index
// lookup pushdown); the SQL node fetches the others with one BatchGet per
// batch.
type IndexLookUp struct {
	BasePlan
	Index  *IndexScan
	Table  *TableRowIDScan
	Pushed bool
}

// Selection keeps the rows for which every condition is true.
type Selection struct {
	BasePlan
	Conds []expr.Expr
	exprNodes
}

// HashAgg groups rows: each output row is the group's first input row
// (width Width) followed by the aggregate values.
type HashAgg struct {
	BasePlan
	GroupBy   []expr.Expr
	Aggs      []AggSpec
	Width     int
	exprNodes // group by
	// PushedCount: the child reads a count per region (CountOnly scan)
	// and the aggregate sums them.
	PushedCount bool
	// Rollup (GROUP BY ... WITH ROLLUP) are the source slots of the GROUP
	// BY columns: besides each group, every prefix of them gets a
	// super-aggregate row with the rest NULL, sorted as MySQL returns them
	// (each subtotal after its groups).
	Rollup []int
	// PushedPartial: the child TableReader returns partial states of Aggs
	// per group (and FirstRow's values) and this aggregate merges them.
	PushedPartial bool
	// FirstRow: the source columns whose first-row values are carried
	// (shown as firstrow(col) in EXPLAIN; the others are NULL in the
	// output row of a pushed aggregation).
	FirstRow []int
}

// Sort orders rows by Keys (stable).
type Sort struct {
	BasePlan
	Keys []SortKey
	Src  *Source
}

// TopN is Sort followed by Limit, keeping at most Offset+Count rows.
type TopN struct {
	BasePlan
	Keys          []SortKey
	Offset, Count uint64
	Src           *Source
}

// Limit skips Offset rows and returns at most Count.
type Limit struct {
	BasePlan
	Offset, Count uint64
}

// Projection computes the select list.
type Projection struct {
	BasePlan
	Exprs []expr.Expr
	exprNodes
}

// Distinct keeps the first of equal rows (shown as TiDB's HashAgg with
// firstrow functions).
type Distinct struct {
	BasePlan
	exprNodes
}

// exprNodes are the AST of a plan's expressions, rendered only by EXPLAIN
// (planning a statement builds no text).
type exprNodes struct {
	Src   *Source
	Nodes []ast.ExprNode
}

func (e exprNodes) texts() []string {
	out := make([]string, len(e.Nodes))
	for i, n := range e.Nodes {
		out[i] = exprText(n, e.Src)
	}
	return out
}

// SelectLock locks the rows its child read (SELECT ... FOR UPDATE) and,
// in pessimistic mode, returns their latest values that still satisfy
// Where.
type SelectLock struct {
	BasePlan
	Src    *Source
	Where  expr.Expr
	NoWait bool
	// PointRow: the child is a PointGet of one row key (RowKey: by handle
	// or by a clustered PRIMARY KEY); its key is locked even when no row
	// exists, so a concurrent insert of it waits.
	PointRow *PointGet
	// PointIndex: the child is a PointGet by unique index; its index key
	// is locked (even when absent, as TiDB does) and the row it points to
	// at for_update_ts is the one read.
	PointIndex *PointGet
	// Limit > 0: only the first Limit rows that still satisfy Where when
	// locked are wanted (a LIMIT with nothing reordering between): rows
	// are locked as they are read until Limit of them qualify, as InnoDB
	// locks only the rows it returns (go-tpc Delivery's ORDER BY no_o_id
	// LIMIT 1 FOR UPDATE locked every new order of the district).
	Limit uint64
}

// Update and Delete are the DML roots EXPLAIN shows.
type Update struct{ BasePlan }

// Delete is the root of an explained DELETE.
type Delete struct{ BasePlan }

// Insert is the plan of an explained INSERT or REPLACE (they read nothing
// but the keys they write).
type Insert struct{ BasePlan }

// ExplainInsert is the plan EXPLAIN shows for INSERT and REPLACE.
func ExplainInsert() Plan { return &Insert{BasePlan: BasePlan{ID: 1, Tp: "Insert", Task: taskRoot}} }

func (p *TableDual) info() (string, string) { return "", "rows:" + strconv.Itoa(p.Rows) }

func tableObject(s *Source) string {
	if s.Alias != strings.ToLower(s.Table.Name) {
		return "table:" + s.Alias
	}
	return "table:" + s.Table.Name
}

func indexObject(s *Source, ix *model.IndexInfo) string {
	cols := make([]string, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = c.Name
	}
	kind := ", index:"
	if s.Table.Clustered(ix) {
		kind = ", clustered index:" // TiDB's name for a common handle's key
	}
	return tableObject(s) + kind + ix.Name + "(" + strings.Join(cols, ", ") + ")"
}

func (p *PointGet) info() (string, string) {
	if p.Index != nil {
		return indexObject(p.Src, p.Index), ""
	}
	return tableObject(p.Src), "handle:" + handleText(p.Src, p.Handle)
}

func handleText(s *Source, h int64) string {
	if s.Cols[s.HandleOffset()].Type.Unsigned() {
		return strconv.FormatUint(uint64(h), 10)
	}
	return strconv.FormatInt(h, 10)
}

func (p *BatchPointGet) info() (string, string) {
	if p.Index != nil {
		return indexObject(p.Src, p.Index), "keep order:false, desc:false"
	}
	hs := make([]string, len(p.Handles))
	for i, h := range p.Handles {
		hs[i] = handleText(p.Src, h)
	}
	return tableObject(p.Src), "handle:[" + strings.Join(hs, " ") + "], keep order:false, desc:false"
}

const pseudo = ", stats:pseudo"

// statsInfo is EXPLAIN's note on estimates: TiDB prints stats:pseudo for
// a table never analyzed.
func statsInfo(src *Source) string {
	if src != nil && src.Stats != nil {
		return ""
	}
	return pseudo
}

func orderInfo(src *Source, keep, desc bool) string {
	s := "keep order:" + strconv.FormatBool(keep)
	if desc {
		s += ", desc"
	}
	return s + statsInfo(src)
}

func (p *TableScan) info() (string, string) {
	if p.CountOnly {
		return tableObject(p.Src), orderInfo(p.Src, false, false)
	}
	if p.Full {
		return tableObject(p.Src), orderInfo(p.Src, p.KeepOrder, p.Desc)
	}
	if p.PKRanges != nil {
		rs := make([]string, len(p.PKRanges))
		for i, r := range p.PKRanges {
			rs[i] = formatRange(r)
		}
		return tableObject(p.Src), "range:" + strings.Join(rs, ", ") + ", " + orderInfo(p.Src, p.KeepOrder, p.Desc)
	}
	rs := make([]string, len(p.Ranges))
	for i, r := range p.Ranges {
		lo, hi := "-inf", "+inf"
		if r.Lo != FullHandleRange.Lo {
			lo = handleText(p.Src, r.Lo)
		}
		if r.Hi != FullHandleRange.Hi {
			hi = handleText(p.Src, r.Hi)
		}
		rs[i] = "[" + lo + "," + hi + "]"
	}
	return tableObject(p.Src), "range:" + strings.Join(rs, ", ") + ", " + orderInfo(p.Src, p.KeepOrder, p.Desc)
}

func (p *TableReader) info() (string, string) {
	child := p.Children[0].Base()
	return "", "data:" + child.ExplainID()
}

func (p *IndexScan) info() (string, string) {
	if p.Full() {
		return indexObject(p.Src, p.Index), orderInfo(p.Src, p.KeepOrder, p.Desc)
	}
	rs := make([]string, len(p.Ranges))
	for i, r := range p.Ranges {
		rs[i] = formatRange(r)
	}
	return indexObject(p.Src, p.Index), "range:" + strings.Join(rs, ", ") + ", " + orderInfo(p.Src, p.KeepOrder, p.Desc)
}

func (p *IndexReader) info() (string, string) {
	return "", "index:" + p.Children[0].Base().ExplainID()
}

func (p *TableRowIDScan) info() (string, string) {
	return tableObject(p.Src), orderInfo(p.Src, false, false)
}

func (p *IndexLookUp) info() (string, string) { return "", "" }

// CopIndexLookUp is the cop[tikv] side of a pushed-down IndexLookUp (for
// EXPLAIN): the index scan and the row lookup of its entries.
type CopIndexLookUp struct {
	BasePlan
}

func (p *CopIndexLookUp) info() (string, string) { return "", "remote rows: BatchGet" }

func (p *Selection) info() (string, string) { return "", strings.Join(p.texts(), ", ") }

func (p *HashAgg) info() (string, string) {
	var parts []string
	if len(p.Nodes) > 0 {
		parts = append(parts, "group by:"+strings.Join(p.texts(), ", "))
		if len(p.Rollup) > 0 {
			parts[len(parts)-1] += " with rollup"
		}
	}
	fs := make([]string, len(p.Aggs))
	for i, a := range p.Aggs {
		fs[i] = "count(1)"
		if a.Node != nil {
			fs[i] = exprText(a.Node, p.Src)
		}
	}
	for _, c := range p.FirstRow {
		fs = append(fs, "firstrow("+p.Src.colName(c)+")")
	}
	if len(fs) > 0 {
		parts = append(parts, "funcs:"+strings.Join(fs, ", "))
	}
	return "", strings.Join(parts, ", ")
}

func keysText(src *Source, keys []SortKey) string {
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = exprText(k.Node, src)
		if k.Desc {
			ks[i] += ":desc"
		}
	}
	return strings.Join(ks, ", ")
}

func (p *Sort) info() (string, string) { return "", keysText(p.Src, p.Keys) }

func (p *TopN) info() (string, string) {
	return "", fmt.Sprintf("%s, offset:%d, count:%d", keysText(p.Src, p.Keys), p.Offset, p.Count)
}

func (p *Limit) info() (string, string) {
	return "", fmt.Sprintf("offset:%d, count:%d", p.Offset, p.Count)
}

func (p *Projection) info() (string, string) { return "", strings.Join(p.texts(), ", ") }

func (p *Distinct) info() (string, string) {
	ts := p.texts()
	fs := make([]string, len(ts))
	for i, t := range ts {
		fs[i] = "firstrow(" + t + ")"
	}
	return "", "group by:" + strings.Join(ts, ", ") + ", funcs:" + strings.Join(fs, ", ")
}

func (p *SelectLock) info() (string, string) {
	if p.NoWait {
		return "", "for update nowait"
	}
	return "", "for update 0"
}

func (p *Update) info() (string, string) { return "", "N/A" }
func (p *Delete) info() (string, string) { return "", "N/A" }
func (p *Insert) info() (string, string) { return "", "N/A" }

// ExplainRow is one row of EXPLAIN.
type ExplainRow struct {
	ID, EstRows, Task, Access, Info string
	Plan                            Plan
}

// Explain flattens p into EXPLAIN rows with TiDB's tree drawing.
func Explain(p Plan) []ExplainRow {
	var rows []ExplainRow
	var walk func(p Plan, prefix string, last, root bool)
	walk = func(p Plan, prefix string, last, root bool) {
		b := p.Base()
		id := b.ExplainID()
		if b.Label != "" {
			id += "(" + b.Label + ")"
		}
		indent := ""
		childPrefix := prefix
		if !root {
			if last {
				indent = prefix + "└─"
				childPrefix = prefix + "  "
			} else {
				indent = prefix + "├─"
				childPrefix = prefix + "│ "
			}
		}
		access, op := p.info()
		est := "N/A"
		switch p.(type) {
		case *Update, *Delete, *Insert:
		default:
			est = strconv.FormatFloat(b.EstRows, 'f', 2, 64)
		}
		rows = append(rows, ExplainRow{ID: indent + id, EstRows: est, Task: b.Task, Access: access, Info: op, Plan: p})
		for i, c := range b.Children {
			walk(c, childPrefix, i == len(b.Children)-1, false)
		}
	}
	walk(p, "", true, true)
	return rows
}
