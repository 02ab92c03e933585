package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Window functions (MySQL 8's): ROW_NUMBER, RANK, DENSE_RANK,
// PERCENT_RANK, CUME_DIST, NTILE, LAG, LEAD, FIRST_VALUE, LAST_VALUE,
// NTH_VALUE and COUNT / SUM / AVG / MIN / MAX OVER a window of PARTITION
// BY, ORDER BY and a ROWS or RANGE frame, inline or named (WINDOW w AS
// (...), OVER w, OVER (w ORDER BY ...)). They run after GROUP BY and
// HAVING and before ORDER BY and DISTINCT: the functions of one window
// share a Sort (partition keys, then order keys) and a Window operator,
// which appends their values to the row; the select list and ORDER BY
// read them from there.

// FrameBound is one end of a window frame.
type FrameBound struct {
	Unbounded bool
	Current   bool
	Preceding bool        // else following
	N         int64       // ROWS, GROUPS: the offset in rows or peer groups
	Val       types.Datum // RANGE: the offset in order key units
	// Interval, for RANGE INTERVAL n unit over a temporal order key, is
	// the bound's value: DATE_ADD / DATE_SUB of the order key (the only
	// column of the row it is evaluated on) by the interval, in the
	// direction of the sort order.
	Interval expr.Expr
}

// WindowFrame is a window's frame; Whole: the whole partition (no ORDER
// BY and no frame).
type WindowFrame struct {
	Rows       bool
	Groups     bool // GROUPS: bounds count peer groups (SQL:2011)
	Start, End FrameBound
	Whole      bool
}

// WindowFunc is one window function call.
type WindowFunc struct {
	Fn      string // lower case
	Args    []expr.Expr
	Agg     *AggSpec // an aggregate OVER a window
	N       int64    // NTILE buckets, LAG / LEAD offset, NTH_VALUE position
	Default expr.Expr
	Ft      types.FieldType
	Slot    int // the row slot the value goes to
	Node    *ast.WindowFuncExpr
}

// Window computes Funcs over rows sorted by Partition then Order (the
// Sort below it), writing each value to its Slot of a row Width wide.
type Window struct {
	BasePlan
	Partition []SortKey
	Order     []SortKey
	Frame     WindowFrame
	Funcs     []WindowFunc
	Width     int
	Src       *Source
	spec      string
}

func (p *Window) info() (string, string) {
	fs := make([]string, len(p.Funcs))
	for i, f := range p.Funcs {
		fs[i] = exprText(f.Node, p.Src)
	}
	return "", strings.Join(fs, ", ") + " over(" + p.spec + ")"
}

// windowItem is a window function of a statement being planned.
type windowItem struct {
	fn   WindowFunc
	col  *expr.Column // the reference the select list holds (Offset set last)
	key  string       // the resolved window, for sharing a Sort
	spec *ast.WindowSpec
	part []SortKey
	ord  []SortKey
	fr   WindowFrame
}

var windowFnTypes = map[string]types.FieldType{
	ast.WindowFuncRowNumber:   types.Int64Type,
	ast.WindowFuncRank:        types.Int64Type,
	ast.WindowFuncDenseRank:   types.Int64Type,
	ast.WindowFuncNtile:       types.Int64Type,
	ast.WindowFuncPercentRank: types.DoubleType,
	ast.WindowFuncCumeDist:    types.DoubleType,
}

// resolveWindow merges spec with the named windows it refers to (3579
// for an unknown name, 3581 to 3583 for what a window may not redefine).
func resolveWindow(spec ast.WindowSpec, named map[string]*ast.WindowSpec, depth int) (ast.WindowSpec, error) {
	ref := spec.Ref
	if spec.OnlyAlias {
		ref = spec.Name
	}
	if ref.L == "" {
		return spec, nil
	}
	base, ok := named[ref.L]
	if !ok {
		return spec, errno.New(3579, "Window name '%s' is not defined.", ref.O)
	}
	if depth > len(named) {
		return spec, errno.New(3580, "There is a circularity in the window dependency graph.")
	}
	b, err := resolveWindow(*base, named, depth+1)
	if err != nil {
		return spec, err
	}
	if spec.OnlyAlias {
		return b, nil
	}
	switch {
	case spec.PartitionBy != nil:
		return spec, errno.New(3581, "A window which depends on another cannot define partitioning.")
	case b.Frame != nil:
		return spec, errno.New(3582, "Window '%s' has a frame definition, so cannot be referenced by another window.", ref.O)
	case spec.OrderBy != nil && b.OrderBy != nil:
		return spec, errno.New(3583, "Window '<unnamed window>' cannot inherit '%s' since both contain an ORDER BY clause.", ref.O)
	}
	out := spec
	out.Ref = ast.CIStr{}
	out.PartitionBy = b.PartitionBy
	if out.OrderBy == nil {
		out.OrderBy = b.OrderBy
	}
	return out, nil
}

// namedWindows checks the WINDOW clause (3591 for a name defined twice).
func namedWindows(specs []ast.WindowSpec) (map[string]*ast.WindowSpec, error) {
	m := make(map[string]*ast.WindowSpec, len(specs))
	for i := range specs {
		n := specs[i].Name
		if _, dup := m[n.L]; dup {
			return nil, errno.New(3591, "Window '%s' is defined twice.", n.O)
		}
		m[n.L] = &specs[i]
	}
	for _, s := range m {
		if _, err := resolveWindow(*s, m, 0); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// compileWindow compiles a window function call of the select list or
// ORDER BY against the row after aggregation (ctx: the source columns and
// the aggregate hook).
func compileWindow(w *ast.WindowFuncExpr, named map[string]*ast.WindowSpec, ctx *expr.Ctx) (*windowItem, error) {
	name := strings.ToLower(w.Name)
	spec, err := resolveWindow(w.Spec, named, 0)
	if err != nil {
		return nil, err
	}
	wname := "<unnamed window>"
	if w.Spec.OnlyAlias {
		wname = w.Spec.Name.O
	}
	if w.IgnoreNull || w.FromLast {
		return nil, errno.NotSupported("IGNORE NULLS / FROM LAST")
	}
	it := &windowItem{fn: WindowFunc{Fn: name, Node: w}}
	inner := *ctx
	inner.Window = nil // nested window functions: 3593
	args := make([]expr.Expr, len(w.Args))
	for i, a := range w.Args {
		if args[i], err = expr.Compile(a, &inner); err != nil {
			return nil, err
		}
	}
	constArg := func(i int, fn string) (int64, error) {
		if i >= len(args) {
			return 1, nil
		}
		k, ok := args[i].(*expr.Constant)
		if ok && !k.Value.IsNull() && args[i].Type().Class() == types.ClassInt {
			if v, _ := types.ToFloat(k.Value); v >= 0 {
				return int64(v), nil
			}
		}
		return 0, errno.New(1210, "Incorrect arguments to %s", fn)
	}
	switch name {
	case ast.WindowFuncRowNumber, ast.WindowFuncRank, ast.WindowFuncDenseRank, ast.WindowFuncPercentRank, ast.WindowFuncCumeDist:
		it.fn.Ft = windowFnTypes[name]
	case ast.WindowFuncNtile:
		if it.fn.N, err = constArg(0, "ntile"); err != nil || it.fn.N == 0 {
			return nil, errno.New(1210, "Incorrect arguments to ntile")
		}
		it.fn.Ft = types.Int64Type
	case ast.WindowFuncLag, ast.WindowFuncLead:
		if it.fn.N, err = constArg(1, name); err != nil {
			return nil, err
		}
		it.fn.Args = args[:1]
		it.fn.Ft = args[0].Type()
		if len(args) > 2 {
			it.fn.Default = args[2]
			it.fn.Ft = expr.UnifyTypes([]types.FieldType{args[0].Type(), args[2].Type()})
		}
	case ast.WindowFuncFirstValue, ast.WindowFuncLastValue:
		it.fn.Args, it.fn.Ft = args[:1], args[0].Type()
	case ast.WindowFuncNthValue:
		if it.fn.N, err = constArg(1, "nth_value"); err != nil || it.fn.N == 0 {
			return nil, errno.New(1210, "Incorrect arguments to nth_value")
		}
		it.fn.Args, it.fn.Ft = args[:1], args[0].Type()
	case ast.AggFuncCount, ast.AggFuncSum, ast.AggFuncAvg, ast.AggFuncMax, ast.AggFuncMin,
		ast.AggFuncVarPop, ast.AggFuncVarSamp, ast.AggFuncStddevPop, ast.AggFuncStddevSamp,
		ast.AggFuncBitAnd, ast.AggFuncBitOr, ast.AggFuncBitXor:
		if w.Distinct {
			return nil, errno.NotSupported("<window function>(DISTINCT ..)")
		}
		if len(args) != 1 {
			return nil, errno.NotSupported(strings.ToUpper(name) + " with several arguments")
		}
		spec := aggSpec(name, args[0], false)
		it.fn.Agg, it.fn.Ft = &spec, spec.Ft
	default:
		return nil, errno.NotSupported("window function " + strings.ToUpper(name))
	}
	if it.fn.Ft.Tp != mysql.TypeLonglong || name != ast.WindowFuncRowNumber {
		it.fn.Ft.Flag &^= mysql.NotNullFlag | mysql.PriKeyFlag | mysql.UniqueKeyFlag | mysql.MultipleKeyFlag | mysql.AutoIncrementFlag
	}
	var sb strings.Builder
	rc := format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)
	if spec.PartitionBy != nil {
		for i, item := range spec.PartitionBy.Items {
			e, err := expr.Compile(item.Expr, &inner)
			if err != nil {
				return nil, err
			}
			it.part = append(it.part, SortKey{E: e, Node: item.Expr})
			if i == 0 {
				sb.WriteString("partition by ")
			} else {
				sb.WriteString(", ")
			}
			_ = item.Expr.Restore(rc)
		}
	}
	if spec.OrderBy != nil {
		for i, item := range spec.OrderBy.Items {
			e, err := expr.Compile(item.Expr, &inner)
			if err != nil {
				return nil, err
			}
			it.ord = append(it.ord, SortKey{E: e, Desc: item.Desc, Node: item.Expr})
			if i == 0 {
				if sb.Len() > 0 {
					sb.WriteString(" ")
				}
				sb.WriteString("order by ")
			} else {
				sb.WriteString(", ")
			}
			_ = item.Expr.Restore(rc)
			if item.Desc {
				sb.WriteString(" desc")
			}
		}
	}
	if it.fr, err = windowFrame(spec.Frame, it.ord, wname, ctx.Env); err != nil {
		return nil, err
	}
	if f := spec.Frame; f != nil {
		if sb.Len() > 0 {
			sb.WriteString(" ")
		}
		restoreFrame(f, rc)
	}
	it.key = sb.String()
	return it, nil
}

// restoreFrame writes f as SQL (the parser's Restore knows no GROUPS):
// the window's identity, which windows sharing one sort and frame share.
func restoreFrame(f *ast.FrameClause, rc *format.RestoreCtx) {
	if f.Type != ast.Groups {
		_ = f.Restore(rc)
		return
	}
	rc.WriteKeyWord("GROUPS BETWEEN ")
	_ = f.Extent.Start.Restore(rc)
	rc.WriteKeyWord(" AND ")
	_ = f.Extent.End.Restore(rc)
}

// windowFrame resolves a frame clause (nil: MySQL's default, the whole
// partition without ORDER BY, else RANGE UNBOUNDED PRECEDING to CURRENT
// ROW).
func windowFrame(f *ast.FrameClause, order []SortKey, wname string, env expr.Env) (WindowFrame, error) {
	if f == nil {
		if len(order) == 0 {
			return WindowFrame{Whole: true}, nil
		}
		return WindowFrame{Start: FrameBound{Unbounded: true, Preceding: true}, End: FrameBound{Current: true}}, nil
	}
	fr := WindowFrame{Rows: f.Type == ast.Rows, Groups: f.Type == ast.Groups}
	intervals := 0
	bound := func(b *ast.FrameBound) (FrameBound, error) {
		out := FrameBound{Unbounded: b.UnBounded, Current: b.Type == ast.CurrentRow, Preceding: b.Type == ast.Preceding}
		if b.UnBounded || out.Current {
			return out, nil
		}
		if b.Unit != ast.TimeUnitInvalid {
			if f.Type != ast.Ranges {
				return out, errno.New(3596, "Window '%s': INTERVAL can only be used with RANGE frames.", wname)
			}
			intervals++
			if len(order) != 1 || order[0].E.Type().Class() != types.ClassTime {
				return out, nil // refused below (3587 / 3590)
			}
			return out, intervalBound(&out, b, order[0], wname, env)
		}
		k, err := expr.Compile(b.Expr, &expr.Ctx{Env: env})
		if err != nil {
			return out, err
		}
		v, err := k.Eval(nil)
		if err != nil {
			return out, err
		}
		f, ok := types.ToFloat(v)
		if v.IsNull() || !ok || f < 0 || ((fr.Rows || fr.Groups) && k.Type().Class() != types.ClassInt) {
			return out, errno.New(3586, "Window '%s': frame start or end is negative, NULL or of non-integral type", wname)
		}
		out.N, out.Val = int64(f), v
		return out, nil
	}
	var err error
	if fr.Start, err = bound(&f.Extent.Start); err != nil {
		return fr, err
	}
	if fr.End, err = bound(&f.Extent.End); err != nil {
		return fr, err
	}
	if fr.Start.Unbounded && !fr.Start.Preceding {
		return fr, errno.New(3584, "Window '%s': frame start cannot be UNBOUNDED FOLLOWING.", wname)
	}
	if fr.End.Unbounded && fr.End.Preceding {
		return fr, errno.New(3585, "Window '%s': frame end cannot be UNBOUNDED PRECEDING.", wname)
	}
	if !fr.Rows && !fr.Groups && (!fr.Start.Unbounded && !fr.Start.Current || !fr.End.Unbounded && !fr.End.Current) {
		temporal := len(order) == 1 && order[0].E.Type().Class() == types.ClassTime
		switch {
		case len(order) != 1 || !numeric(order[0].E.Type()) && !temporal:
			return fr, errno.New(3587, "Window '%s' with RANGE N PRECEDING/FOLLOWING frame requires exactly one ORDER BY expression, of numeric or temporal type", wname)
		case temporal && (fr.Start.Interval == nil && !fr.Start.Unbounded && !fr.Start.Current || fr.End.Interval == nil && !fr.End.Unbounded && !fr.End.Current):
			return fr, errno.New(3589, "Window '%s' with RANGE frame has ORDER BY expression of datetime type. Only INTERVAL bound value allowed.", wname)
		case !temporal && intervals > 0:
			return fr, errno.New(3590, "Window '%s' with RANGE frame has ORDER BY expression of numeric type, INTERVAL bound value not allowed.", wname)
		}
	}
	return fr, nil
}

// intervalBound sets out.Interval for a RANGE bound INTERVAL n unit over
// the temporal order key k: the key moved by the interval toward the
// frame's side in k's sort order (before it for PRECEDING ascending).
func intervalBound(out *FrameBound, b *ast.FrameBound, k SortKey, wname string, env expr.Env) error {
	n, err := expr.Compile(b.Expr, &expr.Ctx{Env: env})
	if err != nil {
		return err
	}
	v, err := n.Eval(nil)
	if err != nil {
		return err
	}
	if f, ok := types.ToFloat(v); v.IsNull() || !ok || f < 0 {
		return errno.New(3586, "Window '%s': frame start or end is negative, NULL or of non-integral type", wname)
	}
	fn := "date_add"
	if out.Preceding != k.Desc {
		fn = "date_sub"
	}
	call := &ast.FuncCallExpr{FnName: ast.NewCIStr(fn), Args: []ast.ExprNode{
		&ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr("k")}}, b.Expr, &ast.TimeUnitExpr{Unit: b.Unit}}}
	e, err := expr.Compile(call, &expr.Ctx{Columns: []expr.SchemaColumn{{Name: "k", Type: k.E.Type()}}, Env: env})
	if err != nil {
		return err
	}
	out.Interval = e
	return nil
}

func numeric(ft types.FieldType) bool {
	switch ft.Class() {
	case types.ClassInt, types.ClassDecimal, types.ClassFloat:
		return true
	}
	return false
}

// windows adds the Sort and Window operators of lg's window functions
// over p (the rows after HAVING): one pair per distinct window.
func (b *builder) windows(lg *logical, p Plan) Plan {
	width := lg.width + len(lg.aggs) + len(lg.wins)
	done := make([]bool, len(lg.wins))
	for i, w := range lg.wins {
		if done[i] {
			continue
		}
		win := &Window{Partition: w.part, Order: w.ord, Frame: w.fr, Width: width, Src: lg.src, spec: w.key}
		for j := i; j < len(lg.wins); j++ {
			if !done[j] && lg.wins[j].key == w.key {
				done[j] = true
				win.Funcs = append(win.Funcs, lg.wins[j].fn)
			}
		}
		keys := append(append([]SortKey(nil), w.part...), w.ord...)
		est := p.Base().EstRows
		if len(keys) > 0 {
			p = &Sort{BasePlan: b.base("Sort", est, taskRoot, p), Keys: keys, Src: lg.src}
		}
		win.BasePlan = b.base("Window", est, taskRoot, p)
		p = win
	}
	return p
}

// placeWindows gives each window function its slot after the aggregates.
func (lg *logical) placeWindows() {
	base := lg.width + len(lg.aggs)
	for i, w := range lg.wins {
		w.col.Offset = base + i
		w.fn.Slot = base + i
	}
}
