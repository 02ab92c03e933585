package planner

import (
	"context"
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// JoinType is the kind of a join.
type JoinType uint8

// Join types.
const (
	InnerJoin JoinType = iota
	LeftOuterJoin
	RightOuterJoin
)

func (t JoinType) String() string {
	switch t {
	case LeftOuterJoin:
		return "left outer join"
	case RightOuterJoin:
		return "right outer join"
	}
	return "inner join"
}

// maxJoinTables bounds the tables of one FROM clause (leaf sets are
// bitmasks).
const maxJoinTables = 64

// JoinInfo is the join tree behind the Source of a FROM clause with
// several tables. The statement row is every table's row (every column,
// then the handle) side by side, left to right: a join node's rows are
// the slots [lo, hi) of it, its left child's rows followed by its right
// child's.
type JoinInfo struct {
	root   *joinNode
	leaves []*Source
	base   []int // first slot of each leaf's row
}

// Leaves returns the join's tables, left to right, and the first slot of
// each one's columns in the joined row. Callers must not modify them.
func (ji *JoinInfo) Leaves() ([]*Source, []int) { return ji.leaves, ji.base }

// joinNode is a node of the logical join tree: a table (leaf) or a join.
type joinNode struct {
	leaf        *Source
	leafIx      int
	lo, hi      int
	tp          JoinType
	left, right *joinNode
	on          []ast.ExprNode // ON / USING conditions (columns qualified)
	mask        uint64         // leaves under the node
	star        []int          // slots * expands to, in order
	// straight: STRAIGHT_JOIN (`a STRAIGHT_JOIN b`, or SELECT
	// STRAIGHT_JOIN for every join of the FROM clause): MySQL joins in
	// the statement's order, the left side first, so the tables are not
	// reordered and an index join looks up only the right side.
	straight bool

	// Set by pushdown.
	filters []ast.ExprNode // leaf: conditions on the table alone
	conds   []ast.ExprNode // join: conditions the join evaluates
	after   []ast.ExprNode // join: WHERE conditions above an outer join

	// Set by leafPlan: the conditions on the table compiled on its row,
	// their AND (the re-check of locked rows) and the rows its access
	// path reads.
	filterE   []expr.Expr
	filterN   []ast.ExprNode
	lockWhere expr.Expr
	readRows  float64
	pointRead bool // the access path reads keys (point gets), not ranges
}

// isJoin reports whether a FROM clause names more than one table.
func isJoin(refs *ast.TableRefsClause) bool {
	if refs == nil || refs.TableRefs == nil {
		return false
	}
	j := refs.TableRefs
	if j.Right != nil {
		return true
	}
	_, nested := j.Left.(*ast.Join)
	if ts, ok := j.Left.(*ast.TableSource); ok {
		_, nested = ts.Source.(*ast.Join)
	}
	return nested
}

// openJoin resolves a FROM clause with joins into one Source whose
// columns are every table's, left to right. Names follow MySQL: a USING
// or NATURAL column is one column for unqualified names and *, a name
// several tables have is ERROR 1052, aliases must be unique (1066).
// straight (SELECT STRAIGHT_JOIN) makes every join a straight one.
func (pl *Planner) openJoin(ctx context.Context, j *ast.Join, where ast.ExprNode, env expr.Env, straight bool) (*Source, error) {
	ji := &JoinInfo{}
	jb := &joinBuilder{pl: pl, env: env, ji: ji, derivedWhere: derivedFilters(j, where)}
	root, err := jb.tree(ctx, j)
	if err != nil {
		return nil, err
	}
	if straight {
		setStraight(root)
	}
	ji.root = root
	t := &model.TableInfo{HandleOffset: -1, AutoIncOffset: -1}
	return &Source{DB: &model.DBInfo{}, Table: t, Cols: jb.cols, Join: ji}, nil
}

func setStraight(n *joinNode) {
	if n.leaf != nil {
		return
	}
	n.straight = true
	setStraight(n.left)
	setStraight(n.right)
}

// hasStraight reports whether a join under n (or n) is a straight join.
func hasStraight(n *joinNode) bool {
	return n.leaf == nil && (n.straight || hasStraight(n.left) || hasStraight(n.right))
}

type joinBuilder struct {
	pl    *Planner
	env   expr.Env
	ji    *JoinInfo
	cols  []expr.SchemaColumn
	names map[string]bool
	// derivedWhere are conditions for derived tables' queries
	// (derivedpush.go).
	derivedWhere map[*ast.TableSource][]ast.ExprNode
}

func (jb *joinBuilder) tree(ctx context.Context, n ast.ResultSetNode) (*joinNode, error) {
	switch x := n.(type) {
	case *ast.TableSource:
		if j, ok := x.Source.(*ast.Join); ok {
			return jb.tree(ctx, j)
		}
		return jb.leaf(ctx, x)
	case *ast.Join:
		if x.Right == nil {
			return jb.tree(ctx, x.Left)
		}
		return jb.join(ctx, x)
	}
	return nil, errno.NotSupported("this FROM clause")
}

func (jb *joinBuilder) leaf(ctx context.Context, ts *ast.TableSource) (*joinNode, error) {
	var src *Source
	var err error
	if extra := jb.derivedWhere[ts]; len(extra) > 0 {
		// A copy: the statement's AST is planned again at every execution.
		q := *ts.Source.(*ast.SelectStmt)
		for _, c := range extra {
			if q.Where == nil {
				q.Where = c
			} else {
				q.Where = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: q.Where, R: c}
			}
		}
		src, err = jb.pl.openDerived(ctx, &q, ts.AsName, jb.env)
	} else {
		src, err = jb.pl.openSource(ctx, ts, jb.env)
	}
	if err != nil {
		return nil, err
	}
	if jb.names == nil {
		jb.names = map[string]bool{}
	}
	if jb.names[src.Alias] {
		return nil, errno.New(1066, "Not unique table/alias: '%s'", src.DisplayName())
	}
	jb.names[src.Alias] = true
	ix := len(jb.ji.leaves)
	if ix >= maxJoinTables {
		return nil, errno.NotSupported("a join of more than 64 tables")
	}
	lo := len(jb.cols)
	jb.ji.leaves = append(jb.ji.leaves, src)
	jb.ji.base = append(jb.ji.base, lo)
	jb.cols = append(jb.cols, src.Cols...)
	n := &joinNode{leaf: src, leafIx: ix, lo: lo, hi: len(jb.cols), mask: 1 << ix}
	for i, c := range src.Cols {
		if !c.Hidden {
			n.star = append(n.star, lo+i)
		}
	}
	return n, nil
}

func (jb *joinBuilder) join(ctx context.Context, j *ast.Join) (*joinNode, error) {
	l, err := jb.tree(ctx, j.Left)
	if err != nil {
		return nil, err
	}
	r, err := jb.tree(ctx, j.Right)
	if err != nil {
		return nil, err
	}
	n := &joinNode{left: l, right: r, lo: l.lo, hi: r.hi, mask: l.mask | r.mask, straight: j.StraightJoin}
	switch j.Tp {
	case ast.LeftJoin:
		n.tp = LeftOuterJoin
	case ast.RightJoin:
		n.tp = RightOuterJoin
	}
	using := j.Using
	if j.NaturalJoin {
		using = nil
		for _, lo := range l.star {
			name := jb.cols[lo].Name
			for _, ro := range r.star {
				if strings.EqualFold(jb.cols[ro].Name, name) {
					using = append(using, &ast.ColumnName{Name: ast.NewCIStr(name)})
					break
				}
			}
		}
	}
	if len(using) > 0 {
		return n, jb.using(n, using)
	}
	n.star = append(append(n.star, l.star...), r.star...)
	if j.On != nil {
		n.on = conjuncts(j.On.Expr, nil)
		for _, c := range n.on {
			if err := jb.qualify(c, n, "on clause"); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// using joins on equal values of each named column and makes it one
// column: unqualified names and * see the left table's (the right
// table's for RIGHT JOIN), coalesced columns first.
func (jb *joinBuilder) using(n *joinNode, names []*ast.ColumnName) error {
	l, r := n.left, n.right
	used := map[int]bool{}
	var first []int
	for _, name := range names {
		lo, err := jb.find(l, name.Name.O)
		if err != nil {
			return err
		}
		ro, err := jb.find(r, name.Name.O)
		if err != nil {
			return err
		}
		used[lo], used[ro] = true, true
		n.on = append(n.on, &ast.BinaryOperationExpr{Op: opcode.EQ, L: jb.ref(lo), R: jb.ref(ro)})
		keep, drop := lo, ro
		if n.tp == RightOuterJoin {
			keep, drop = ro, lo
		}
		jb.cols[drop].Redundant = true
		first = append(first, keep)
	}
	n.star = first
	for _, s := range append(append([]int(nil), l.star...), r.star...) {
		if !used[s] {
			n.star = append(n.star, s)
		}
	}
	return nil
}

// find resolves an unqualified USING column in the subtree n.
func (jb *joinBuilder) find(n *joinNode, name string) (int, error) {
	found := -1
	for i := n.lo; i < n.hi; i++ {
		c := jb.cols[i]
		if c.Hidden || c.Redundant || !strings.EqualFold(c.Name, name) {
			continue
		}
		if found >= 0 {
			return 0, errno.New(errno.ErrNonUniq, "Column '%s' in from clause is ambiguous", name)
		}
		found = i
	}
	if found < 0 {
		return 0, errno.New(errno.ErrBadField, "Unknown column '%s' in 'from clause'", name)
	}
	return found, nil
}

func (jb *joinBuilder) ref(off int) *ast.ColumnNameExpr {
	c := jb.cols[off]
	return &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.Table), Name: ast.NewCIStr(c.Name)}}
}

// qualify checks that every column of c resolves in n's columns (1054,
// 1052 naming clause) and qualifies it with its table, so that the
// condition means the same wherever pushdown moves it.
func (jb *joinBuilder) qualify(c ast.ExprNode, n *joinNode, clause string) error {
	return qualify(c, jb.cols[n.lo:n.hi], jb.env, clause)
}

func qualify(c ast.ExprNode, cols []expr.SchemaColumn, env expr.Env, clause string) error {
	q := &qualifier{cols: cols, ctx: &expr.Ctx{Columns: cols, Env: env, Clause: clause}}
	c.Accept(q)
	return q.err
}

// expandStar is the select list of * or t.* over a join: the fields, the
// text EXPLAIN shows for them and the result columns.
func (ji *JoinInfo) expandStar(w *ast.WildCardField, cols []expr.SchemaColumn) ([]expr.Expr, []ast.ExprNode, []ResultColumn, error) {
	offs := ji.root.star
	if t := w.Table.L; t != "" {
		offs = nil
		for i, l := range ji.leaves {
			if l.Alias != t {
				continue
			}
			for j, c := range l.Cols {
				if !c.Hidden {
					offs = append(offs, ji.base[i]+j)
				}
			}
		}
		if offs == nil {
			return nil, nil, nil, errno.New(errno.ErrBadTable, "Unknown table '%s'", w.Table.O)
		}
	}
	var fields []expr.Expr
	var texts []ast.ExprNode
	var rcs []ResultColumn
	for _, off := range offs {
		c := cols[off]
		fields = append(fields, &expr.Column{Offset: off, Ft: c.Type, Name: c.Name})
		texts = append(texts, &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.Table), Name: ast.NewCIStr(c.Name)}})
		rcs = append(rcs, ji.resultColumn(off, c.Name, c.Type))
	}
	return fields, texts, rcs, nil
}

// resultColumn describes a result column that is slot off of the joined
// row.
func (ji *JoinInfo) resultColumn(off int, name string, ft types.FieldType) ResultColumn {
	l := ji.leaves[ji.leafOf(off)]
	org := l.Cols[off-ji.base[ji.leafOf(off)]].Name
	return ResultColumn{DB: l.DB.Name, Table: l.DisplayName(), OrgTable: l.orgTable(), Name: name, OrgName: org, Type: ft}
}

type qualifier struct {
	cols []expr.SchemaColumn
	ctx  *expr.Ctx
	err  error
}

func (q *qualifier) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		return n, true
	case *ast.ColumnNameExpr:
		if q.err != nil {
			return n, true
		}
		e, err := expr.Compile(x, q.ctx)
		if err != nil {
			q.err = err
			return n, true
		}
		if col, ok := e.(*expr.Column); ok {
			x.Name.Table = ast.NewCIStr(q.cols[col.Offset].Table)
			x.Name.Schema = ast.CIStr{}
		}
		return n, true
	}
	return n, false
}

func (q *qualifier) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// refs is the set of leaves the (qualified) condition c reads.
func (ji *JoinInfo) refs(c ast.ExprNode, cols []expr.SchemaColumn) uint64 {
	v := &refCollector{ji: ji, cols: cols}
	c.Accept(v)
	return v.mask
}

type refCollector struct {
	ji   *JoinInfo
	cols []expr.SchemaColumn
	mask uint64
}

func (v *refCollector) Enter(n ast.Node) (ast.Node, bool) {
	if sq, ok := n.(*ast.SubqueryExpr); ok {
		// Its names resolve in its own tables first; any that could be
		// a correlated reference counts (reading more leaves only
		// places the condition higher, where it means the same).
		sq.Query.Accept(&nameLeaves{v: v})
		return n, true
	}
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		if off := findQualified(v.cols, cn.Name); off >= 0 {
			v.mask |= 1 << v.ji.leafOf(off)
		}
		return n, true
	}
	return n, false
}

func (v *refCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// nameLeaves adds to v the leaves with a column that a name inside a
// subquery could mean.
type nameLeaves struct{ v *refCollector }

func (w *nameLeaves) Enter(n ast.Node) (ast.Node, bool) {
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok {
		return n, false
	}
	for i, c := range w.v.cols {
		if strings.EqualFold(c.Name, cn.Name.Name.O) && (cn.Name.Table.L == "" || cn.Name.Table.L == c.Table) {
			w.v.mask |= 1 << w.v.ji.leafOf(i)
		}
	}
	return n, true
}

func (w *nameLeaves) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func findQualified(cols []expr.SchemaColumn, n *ast.ColumnName) int {
	for i, c := range cols {
		if c.Table == n.Table.L && strings.EqualFold(c.Name, n.Name.O) {
			return i
		}
	}
	return -1
}

// leafOf is the leaf whose row holds slot off.
func (ji *JoinInfo) leafOf(off int) int {
	for i := len(ji.base) - 1; i > 0; i-- {
		if off >= ji.base[i] {
			return i
		}
	}
	return 0
}

// columnOffset resolves a column name against the joined row (-1: none or
// ambiguous).
func (ji *JoinInfo) columnOffset(cols []expr.SchemaColumn, n *ast.ColumnName) int {
	e, err := expr.Compile(&ast.ColumnNameExpr{Name: n}, &expr.Ctx{Columns: cols})
	if err != nil {
		return -1
	}
	if c, ok := e.(*expr.Column); ok {
		return c.Offset
	}
	return -1
}

// colName is the EXPLAIN name of slot off: db.table.column.
func (ji *JoinInfo) colName(off int) string {
	i := ji.leafOf(off)
	return ji.leaves[i].colName(off - ji.base[i])
}

// pushdown moves conds (WHERE conjuncts, qualified) to where they apply:
// a condition on one side of a join goes below it, one on both sides is
// a join condition. An outer join whose WHERE rejects the NULL rows of
// its inner side becomes an inner join first (outer-join
// simplification); other WHERE conditions on the inner side of an outer
// join stay above it, and its ON conditions on the inner side alone are
// pushed into the inner side.
func (ji *JoinInfo) pushdown(n *joinNode, conds []ast.ExprNode, cols []expr.SchemaColumn, env expr.Env) {
	if n.leaf != nil {
		n.filters = append(n.filters, conds...)
		return
	}
	if n.tp != InnerJoin {
		inner := n.right.mask
		if n.tp == RightOuterJoin {
			inner = n.left.mask
		}
		for _, c := range conds {
			if nullRejecting(c, inner, ji, cols, env) {
				n.tp = InnerJoin
				break
			}
		}
	}
	var toL, toR []ast.ExprNode
	place := func(c ast.ExprNode, fromWhere bool) {
		m := ji.refs(c, cols)
		onlyL := m&^n.left.mask == 0 // a constant goes left
		onlyR := m != 0 && m&^n.right.mask == 0
		switch {
		case n.tp == InnerJoin && onlyL, n.tp == LeftOuterJoin && fromWhere && onlyL,
			n.tp == RightOuterJoin && !fromWhere && onlyL && m != 0:
			toL = append(toL, c)
		case n.tp == InnerJoin && onlyR, n.tp == LeftOuterJoin && !fromWhere && onlyR,
			n.tp == RightOuterJoin && fromWhere && (onlyR || m == 0):
			toR = append(toR, c)
		case fromWhere && n.tp != InnerJoin:
			n.after = append(n.after, c)
		default:
			n.conds = append(n.conds, c)
		}
	}
	for _, c := range conds {
		place(c, true)
	}
	for _, c := range n.on {
		place(c, n.tp == InnerJoin)
	}
	ji.pushdown(n.left, toL, cols, env)
	ji.pushdown(n.right, toR, cols, env)
}

// nullRejecting reports whether c is never true when the leaves in inner
// are NULL: a condition on inner columns alone that is false or NULL on a
// NULL row, or a comparison with an inner column as an operand.
func nullRejecting(c ast.ExprNode, inner uint64, ji *JoinInfo, cols []expr.SchemaColumn, env expr.Env) bool {
	m := ji.refs(c, cols)
	if m == 0 {
		return false
	}
	if m&^inner == 0 {
		skipCache(env, c, "an outer join simplified by a parameter's value")
		e, err := expr.Compile(c, &expr.Ctx{Columns: cols, Env: env})
		if err != nil {
			return false
		}
		d, err := e.Eval(make([]types.Datum, len(cols)))
		if err != nil {
			return false
		}
		t, null := expr.IsTrue(d)
		return !t || null
	}
	x, ok := unparen(c).(*ast.BinaryOperationExpr)
	if !ok {
		return false
	}
	switch x.Op {
	case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
	default:
		return false
	}
	for _, side := range []ast.ExprNode{x.L, x.R} {
		if cn, ok := unparen(side).(*ast.ColumnNameExpr); ok {
			if off := findQualified(cols, cn.Name); off >= 0 && inner&(1<<ji.leafOf(off)) != 0 {
				return true
			}
		}
	}
	return false
}

// HashJoin joins its two children on equal keys: it reads the build side
// into a hash table, then streams the probe side. Rows are the left
// child's row followed by the right child's whichever side builds.
type HashJoin struct {
	BasePlan
	Type JoinType
	// BuildRight: the right side is the build side (Children[0] is always
	// the build side, Children[1] the probe side).
	BuildRight bool
	LeftW      int
	RightW     int
	// LeftKeys and RightKeys are evaluated on each side's own row.
	LeftKeys, RightKeys []expr.Expr
	// Other conditions are evaluated on the joined row.
	Other []expr.Expr

	src        *Source
	eqNodes    []ast.ExprNode
	otherNodes []ast.ExprNode
}

func (p *HashJoin) info() (string, string) {
	s := p.Type.String()
	if len(p.eqNodes) == 0 && len(p.otherNodes) == 0 {
		s = "CARTESIAN " + s
	}
	if len(p.eqNodes) > 0 {
		s += ", equal:[" + strings.Join(exprNodes{Src: p.src, Nodes: p.eqNodes}.texts(), " ") + "]"
	}
	if len(p.otherNodes) > 0 {
		s += ", other cond:" + strings.Join(exprNodes{Src: p.src, Nodes: p.otherNodes}.texts(), ", ")
	}
	return "", s
}

// joinPhysical builds the plan of the join tree of lg.src.
func (b *builder) joinPhysical(lg *logical) (Plan, error) {
	ji := lg.src.Join
	cols := lg.src.Cols
	conds := propagateConstants(factorCommon(lg.conds), cols)
	if r := b.reorderJoin(lg, conds); r != nil {
		return r.plan(b, lg)
	}
	ji.pushdown(ji.root, conds, cols, b.env)
	return b.joinNodePlan(lg, ji.root)
}

// propagateConstants adds, for WHERE conjuncts `x = c` and `x = y` on
// columns of one class (integers or strings), the implied `y = c`, so
// that a table joined on y is read by c too (go-tpc's customer,
// warehouse WHERE w_id = ? AND c_w_id = w_id reads one customer).
func propagateConstants(conds []ast.ExprNode, cols []expr.SchemaColumn) []ast.ExprNode {
	type colEq struct{ a, b int }
	consts := map[int]ast.ExprNode{}
	var pairs []colEq
	class := func(off int) types.Class { return cols[off].Type.Class() }
	for _, c := range conds {
		x, ok := unparen(c).(*ast.BinaryOperationExpr)
		if !ok || x.Op != opcode.EQ {
			continue
		}
		lc, lok := unparen(x.L).(*ast.ColumnNameExpr)
		rc, rok := unparen(x.R).(*ast.ColumnNameExpr)
		switch {
		case lok && rok:
			a, b := findQualified(cols, lc.Name), findQualified(cols, rc.Name)
			if a >= 0 && b >= 0 && a != b && class(a) == class(b) && (class(a) == types.ClassInt || class(a) == types.ClassString) {
				pairs = append(pairs, colEq{a, b})
			}
		case lok && isConstNode(x.R):
			if a := findQualified(cols, lc.Name); a >= 0 {
				consts[a] = x.R
			}
		case rok && isConstNode(x.L):
			if a := findQualified(cols, rc.Name); a >= 0 {
				consts[a] = x.L
			}
		}
	}
	if len(consts) == 0 || len(pairs) == 0 {
		return conds
	}
	out := append([]ast.ExprNode(nil), conds...)
	for changed := true; changed; {
		changed = false
		for _, p := range pairs {
			for _, d := range [][2]int{{p.a, p.b}, {p.b, p.a}} {
				k, ok := consts[d[0]]
				if _, has := consts[d[1]]; !ok || has {
					continue
				}
				consts[d[1]] = k
				c := cols[d[1]]
				ref := &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.Table), Name: ast.NewCIStr(c.Name)}}
				out = append(out, &ast.BinaryOperationExpr{Op: opcode.EQ, L: ref, R: k})
				changed = true
			}
		}
	}
	return out
}

func isConstNode(n ast.ExprNode) bool {
	switch unparen(n).(type) {
	case ast.ValueExpr, ast.ParamMarkerExpr:
		return true
	}
	return false
}

func (b *builder) joinNodePlan(lg *logical, n *joinNode) (Plan, error) {
	ji, cols := lg.src.Join, lg.src.Cols
	if n.leaf != nil {
		return b.leafPlan(lg, n)
	}
	lp, err := b.joinNodePlan(lg, n.left)
	if err != nil {
		return nil, err
	}
	rp, err := b.joinNodePlan(lg, n.right)
	if err != nil {
		return nil, err
	}
	hj := &HashJoin{Type: n.tp, LeftW: n.left.hi - n.left.lo, RightW: n.right.hi - n.right.lo, src: lg.src}
	ctx := &expr.Ctx{Columns: cols[n.lo:n.hi], Env: b.env, Clause: "on clause"}
	for _, c := range n.conds {
		if lk, rk, ok := b.equiKey(c, n, ji, cols); ok {
			hj.LeftKeys, hj.RightKeys = append(hj.LeftKeys, lk), append(hj.RightKeys, rk)
			hj.eqNodes = append(hj.eqNodes, c)
			continue
		}
		e, err := expr.Compile(c, ctx)
		if err != nil {
			return nil, err
		}
		hj.Other, hj.otherNodes = append(hj.Other, e), append(hj.otherNodes, c)
	}
	le, re := lp.Base().EstRows, rp.Base().EstRows
	est := le * re
	if len(hj.LeftKeys) > 0 {
		est = math.Max(le, re)
	}
	switch n.tp {
	case LeftOuterJoin:
		est = math.Max(est, le)
		hj.BuildRight = true
	case RightOuterJoin:
		est = math.Max(est, re)
	default:
		// A straight join builds on its first table, as MySQL's hash
		// join does. Pseudo estimates of equal size tell nothing: the
		// side whose join keys are a unique key (orders joined on its
		// primary key by order_line) has at most one row per row of the
		// other, so it is built.
		hj.BuildRight = re <= le && !n.straight
		if re == le && !n.straight && pseudoEstimate(n.left) && pseudoEstimate(n.right) {
			lu, ru := uniqueKeys(n.left, hj.LeftKeys), uniqueKeys(n.right, hj.RightKeys)
			if lu != ru {
				hj.BuildRight = ru
			}
		}
	}
	hj.EstRows = est
	if ij := b.indexJoin(lg, n, hj, lp, rp); ij != nil {
		return b.afterJoin(lg, n, ij)
	}
	build, probe := lp, rp
	if hj.BuildRight {
		build, probe = rp, lp
	}
	build.Base().Label, probe.Base().Label = "Build", "Probe"
	hj.BasePlan = b.base("HashJoin", est, taskRoot, build, probe)
	return b.afterJoin(lg, n, hj)
}

// afterJoin adds the WHERE conditions kept above an outer join.
func (b *builder) afterJoin(lg *logical, n *joinNode, p Plan) (Plan, error) {
	cols, est := lg.src.Cols, p.Base().EstRows
	if len(n.after) > 0 {
		sel := &Selection{BasePlan: b.base("Selection", est*selectionFactor, taskRoot, p), exprNodes: exprNodes{Src: lg.src}}
		wctx := &expr.Ctx{Columns: cols[n.lo:n.hi], Env: b.env, Clause: "where clause"}
		for _, c := range n.after {
			e, err := expr.Compile(c, wctx)
			if err != nil {
				return nil, err
			}
			sel.Conds, sel.Nodes = append(sel.Conds, e), append(sel.Nodes, c)
		}
		p = sel
	}
	return p, nil
}

// equiKey splits `l = r` with l on the left side and r on the right (or
// the reverse) into hash keys, when equal keys mean equal values:
// integers with integers, strings with strings (bytewise).
func (b *builder) equiKey(c ast.ExprNode, n *joinNode, ji *JoinInfo, cols []expr.SchemaColumn) (expr.Expr, expr.Expr, bool) {
	x, ok := unparen(c).(*ast.BinaryOperationExpr)
	if !ok || x.Op != opcode.EQ {
		return nil, nil, false
	}
	lm, rm := ji.refs(x.L, cols), ji.refs(x.R, cols)
	ln, rn := x.L, x.R
	switch {
	case lm != 0 && rm != 0 && lm&^n.left.mask == 0 && rm&^n.right.mask == 0:
	case lm != 0 && rm != 0 && rm&^n.left.mask == 0 && lm&^n.right.mask == 0:
		ln, rn = rn, ln
	default:
		return nil, nil, false
	}
	lk, err := expr.Compile(ln, &expr.Ctx{Columns: cols[n.left.lo:n.left.hi], Env: b.env})
	if err != nil {
		return nil, nil, false
	}
	rk, err := expr.Compile(rn, &expr.Ctx{Columns: cols[n.right.lo:n.right.hi], Env: b.env})
	if err != nil {
		return nil, nil, false
	}
	lc, rc := lk.Type().Class(), rk.Type().Class()
	if lc != rc || (lc != types.ClassInt && lc != types.ClassString) {
		return nil, nil, false
	}
	return lk, rk, true
}

// constantFilter finds `col = constant` among the conditions pushed to
// the table of n, for column slot off of its row: its value and, for the
// plan cache, the expression it was evaluated from (IndexJoin.constE).
func (b *builder) constantFilter(n *joinNode, off int) (types.Datum, expr.Expr, bool) {
	for _, c := range n.filterN {
		x, ok := unparen(c).(*ast.BinaryOperationExpr)
		if !ok || x.Op != opcode.EQ {
			continue
		}
		col, k := x.L, x.R
		if !isConstNode(k) {
			col, k = k, col
		}
		cn, ok := unparen(col).(*ast.ColumnNameExpr)
		if !ok || !isConstNode(k) || n.leaf.columnOffset(cn.Name) != off {
			continue
		}
		ke, err := expr.Compile(k, &expr.Ctx{Env: b.env})
		if err != nil {
			continue
		}
		// A value not used leaves the condition to filter the rows looked
		// up, right for any value: a cached plan need not be planned
		// again when another value would be used (rebindJoin re-plans
		// only when a used one stops being usable).
		v, err := ke.Eval(nil)
		if err != nil || v.IsNull() || ke.Type().Class() != n.leaf.Cols[off].Type.Class() {
			continue
		}
		return v, ke, true
	}
	return types.Datum{}, nil, false
}

// leafPlan reads one table of a join with the conditions pushed to it
// (and, for a locking read, locks the rows it reads).
func (b *builder) leafPlan(lg *logical, n *joinNode) (Plan, error) {
	src := n.leaf
	conds := make([]ast.ExprNode, 0, len(n.filters))
	condE := make([]expr.Expr, 0, len(n.filters))
	ctx := &expr.Ctx{Columns: src.Cols, Env: b.env, Clause: "where clause"}
	for _, c := range n.filters {
		e, err := expr.Compile(c, ctx)
		if err != nil {
			return nil, err
		}
		conds, condE = append(conds, c), append(condE, e)
	}
	var p Plan
	switch {
	case src.Sub != nil:
		if lg.locks(src) {
			return nil, errno.NotSupported("locking reads of a derived table")
		}
		p = &SubqueryScan{BasePlan: b.base("SubqueryScan", src.Sub.Root.Base().EstRows, taskRoot, src.Sub.Root), Src: src}
		b.renumber(src.Sub.Root)
		if len(condE) > 0 {
			p = &Selection{BasePlan: b.base("Selection", p.Base().EstRows*selectionFactor, taskRoot, p), Conds: condE, exprNodes: exprNodes{Src: src, Nodes: conds}}
		}
		return p, nil
	case src.Mem != nil:
		if lg.locks(src) {
			return nil, ErrReadOnlySystemTable(b.env.User(), src)
		}
		p = &MemTableScan{BasePlan: b.base("MemTableScan", pseudoRowCount, taskRoot), Src: src, Env: baseEnv(b.env)}
		if len(condE) > 0 {
			p = &Selection{BasePlan: b.base("Selection", pseudoRowCount*selectionFactor, taskRoot, p), Conds: condE, exprNodes: exprNodes{Src: src, Nodes: conds}}
		}
		return p, nil
	}
	n.filterE, n.filterN = condE, conds
	ap, err := b.bestAccess(src, conds, condE, columnNeeds{src: src}, nil, 0)
	if err != nil {
		return nil, err
	}
	p = ap.plan
	n.readRows = p.Base().EstRows
	switch p.(type) {
	case *PointGet, *BatchPointGet, *TableDual:
		n.pointRead = true
	}
	if len(ap.residual) > 0 {
		sel := &Selection{BasePlan: b.base("Selection", ap.filteredRows, taskRoot, p), exprNodes: exprNodes{Src: src}}
		for _, i := range ap.residual {
			sel.Conds, sel.Nodes = append(sel.Conds, condE[i]), append(sel.Nodes, conds[i])
		}
		p = sel
	}
	if lg.locks(src) {
		var where expr.Expr
		if len(conds) > 0 {
			all := conds[0]
			for _, c := range conds[1:] {
				all = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: all, R: c}
			}
			if where, err = expr.Compile(all, ctx); err != nil {
				return nil, err
			}
		}
		n.lockWhere = where
		p = b.selectLock(p, ap.plan, src, where, lg.nowait)
	}
	return p, nil
}

// IndexJoin reads its outer side (Children[0]) a chunk at a time and, for
// each chunk, looks the inner table's rows up by the chunk's distinct join
// key values (one BatchGet of row keys by handle, or point ranges of an
// index prefix), then joins the chunk with them as a HashJoin does.
// Children[1] only shows the lookup in EXPLAIN.
type IndexJoin struct {
	BasePlan
	// Join is the join of one outer chunk with its inner rows (its
	// children are not set).
	Join  *HashJoin
	Inner *Source
	// InnerRight: the inner table is the right side.
	InnerRight bool
	// HandleKey is the position in the inner keys of the handle (-1: the
	// lookup is by Index, whose leading columns are the inner keys at
	// IndexKeys, or, for j < 0, the constant Consts[-j-1] an inner
	// condition fixes the column to).
	HandleKey int
	Index     *model.IndexInfo
	IndexKeys []int
	Consts    []types.Datum
	// Unique: the lookup is by every column of the unique Index, at most
	// one row per outer key: one BatchGet of the keys (a clustered
	// PRIMARY KEY's are the rows'), as a Batch_Point_Get, where ranges
	// would cost a request per outer key (go-tpc Stock-Level's ~200
	// stock rows by (s_w_id, s_i_id) took ~200 requests in a row).
	Unique bool
	// Filters are the inner table's own conditions, on its row.
	Filters []expr.Expr
	// Lock, when set, locks the inner rows looked up (FOR UPDATE).
	Lock *SelectLock

	innerMask uint64
	// constE, in a cached plan, are the expressions Consts were evaluated
	// from, which the plan cache evaluates again for each execution's
	// parameters (CachedPlan.Rebind).
	constE []expr.Expr
}

func (p *IndexJoin) info() (string, string) {
	s := p.Join.Type.String()
	inner := p.Join.RightKeys
	outerN, innerN := make([]string, 0, len(inner)), make([]string, 0, len(inner))
	for _, n := range p.Join.eqNodes {
		x := unparen(n).(*ast.BinaryOperationExpr)
		l, r := exprText(x.L, p.Join.src), exprText(x.R, p.Join.src)
		if p.Join.src.Join.refs(x.L, p.Join.src.Cols)&p.innerMask != 0 {
			l, r = r, l
		}
		outerN, innerN = append(outerN, l), append(innerN, r)
	}
	s += ", inner:" + p.Children[1].Base().ExplainID() + ", outer key:" + strings.Join(outerN, ", ") + ", inner key:" + strings.Join(innerN, ", ")
	if len(p.Join.eqNodes) > 0 {
		s += ", equal cond:" + strings.Join(exprNodes{Src: p.Join.src, Nodes: p.Join.eqNodes}.texts(), ", ")
	}
	if len(p.Join.otherNodes) > 0 {
		s += ", other cond:" + strings.Join(exprNodes{Src: p.Join.src, Nodes: p.Join.otherNodes}.texts(), ", ")
	}
	return "", s
}

// lookupShow is a node EXPLAIN shows under an IndexJoin for the inner
// lookup (the executor builds the lookup itself).
type lookupShow struct {
	BasePlan
	access, op string
}

func (p *lookupShow) info() (string, string) { return p.access, p.op }

// The join choice weighs each way of running a join by a cost in rows
// read from the stores:
//
//   - HashJoin: both sides read, plus costHashRow per row built or probed.
//   - IndexJoin: the outer side read, plus per outer row a lookup of the
//     inner table: costHandleLookup by handle or a whole unique key (at
//     most one row), costIndexLookup by an index prefix (an index range)
//     plus, with statistics, per row it finds its entry and its row get
//     (costIndexRow + costLookupRow, as an IndexLookUp weighs them).
//
// The cheapest wins, so a big table is the outer side of an index join
// only when reading the other side whole would cost more than looking
// it up once per big-table row. A table without statistics has TiDB's
// pseudo estimates (10000 rows, 1/1000 per equality), which say nothing
// of its size: go-tpc's order_line and orders, each restricted to one
// warehouse, both estimate 10 rows where one has 300,000 and the other
// 30,000. Such an estimate is weighed pseudoUncertainty times larger
// wherever a large side costs: read whole, built or probed, or driving
// lookups. Point reads (PointGet, BatchPointGet) are exact either way.
const (
	costHandleLookup  = 2.0
	costIndexLookup   = 10.0
	costHashRow       = 0.3
	pseudoUncertainty = 10.0
)

// joinSide is what the join choice knows of one side of a join: the
// rows its access path reads and the rows it returns, both weighed up
// when they are pseudo estimates.
type joinSide struct{ read, out float64 }

func sideOf(n *joinNode, p Plan) joinSide {
	s := joinSide{read: p.Base().EstRows, out: p.Base().EstRows}
	if n.leaf != nil && n.readRows > 0 {
		s.read = n.readRows
	}
	if pseudoEstimate(n) {
		s.read *= pseudoUncertainty
		s.out *= pseudoUncertainty
	}
	return s
}

// pseudoEstimate reports whether the rows of n rest on a pseudo estimate:
// a table without statistics read by ranges or whole, or a join over one.
func pseudoEstimate(n *joinNode) bool {
	if n.leaf == nil {
		return pseudoEstimate(n.left) || pseudoEstimate(n.right)
	}
	return n.leaf.Sub == nil && n.leaf.Mem == nil && !n.pointRead && !hasStats(n.leaf)
}

// uniqueKeys reports whether n is a table whose handle, or every column
// of one of its unique indexes, is among keys (columns of its row).
func uniqueKeys(n *joinNode, keys []expr.Expr) bool {
	src := n.leaf
	if src == nil || src.Sub != nil || src.Mem != nil {
		return false
	}
	has := func(off int) bool {
		for _, k := range keys {
			if c, ok := k.(*expr.Column); ok && c.Offset == off {
				return true
			}
		}
		return false
	}
	if src.Table.PKIsHandle && has(src.Table.HandleOffset) {
		return true
	}
	for _, ix := range src.Table.Indices {
		if !ix.Public() || !ix.Unique {
			continue
		}
		all := true
		for _, ic := range ix.Columns {
			all = all && has(ic.Offset)
		}
		if all {
			return true
		}
	}
	return false
}

// hashJoinCost is the cost of joining l and r with a HashJoin.
func hashJoinCost(l, r joinSide) float64 {
	return l.read + r.read + costHashRow*(l.out+r.out)
}

// indexJoin returns an IndexJoin for hj when the inner side (the right
// side, or the left one for RIGHT JOIN; either for INNER JOIN; only the
// right one for STRAIGHT_JOIN) is a table whose handle or an index prefix
// is among the join keys, and the index join costs less than the hash
// join and any other index join (nil otherwise).
func (b *builder) indexJoin(lg *logical, n *joinNode, hj *HashJoin, lp, rp Plan) Plan {
	if len(hj.LeftKeys) == 0 {
		return nil
	}
	type cand struct {
		innerRight bool
		outer      Plan
		inner      *joinNode
		handleKey  int
		index      *model.IndexInfo
		keys       []int
		consts     []types.Datum
		constE     []expr.Expr
		cost       float64
	}
	ls, rs := sideOf(n.left, lp), sideOf(n.right, rp)
	hashCost := hashJoinCost(ls, rs)
	var best *cand
	try := func(innerRight bool) {
		inner, outer, innerKeys := n.right, lp, hj.RightKeys
		if !innerRight {
			inner, outer, innerKeys = n.left, rp, hj.LeftKeys
		}
		src := inner.leaf
		if src == nil || src.Sub != nil || src.Mem != nil || len(src.Hints) > 0 {
			return
		}
		keyOf := func(off int) int {
			for j, k := range innerKeys {
				if c, ok := k.(*expr.Column); ok && c.Offset == off {
					return j
				}
			}
			return -1
		}
		c := &cand{innerRight: innerRight, outer: outer, inner: inner, handleKey: -1}
		os := ls
		if !innerRight {
			os = rs
		}
		outerRows := os.out
		if src.Table.PKIsHandle {
			if j := keyOf(src.Table.HandleOffset); j >= 0 && !src.Cols[src.Table.HandleOffset].Type.Unsigned() {
				c.handleKey, c.cost = j, outerRows*costHandleLookup
			}
		}
		if c.handleKey < 0 {
			for _, ix := range src.Table.Indices {
				if !ix.Public() {
					continue
				}
				var keys []int
				var consts []types.Datum
				var constE []expr.Expr
				joined := false
				for _, ic := range ix.Columns {
					if !sortable(src.Cols[ic.Offset].Type) || ic.Length > 0 {
						break // a prefix key part cannot be looked up by value
					}
					j := keyOf(ic.Offset)
					if j < 0 {
						v, e, ok := b.constantFilter(inner, ic.Offset)
						if !ok {
							break
						}
						consts, constE = append(consts, v), append(constE, e)
						j = -len(consts)
					} else {
						joined = true
					}
					keys = append(keys, j)
				}
				if joined && len(keys) > len(c.keys) {
					c.index, c.keys, c.consts, c.constE = ix, keys, consts, constE
				}
			}
			if c.index == nil {
				return
			}
			c.cost = outerRows * costIndexLookup
			if c.index.Unique && len(c.keys) == len(c.index.Columns) {
				c.cost = outerRows * costHandleLookup
			} else if !pseudoEstimate(n) {
				// A prefix finds many rows per key, each an index entry
				// and a row get: counted from the join's estimate when
				// statistics make it one (a pseudo estimate of the join
				// says nothing of the rows per key).
				c.cost += hj.EstRows * (costIndexRow + costLookupRow)
			}
		}
		c.cost += os.read
		if c.cost >= hashCost || (best != nil && best.cost <= c.cost) {
			return
		}
		best = c
	}
	if n.tp != RightOuterJoin {
		try(true)
	}
	if n.tp != LeftOuterJoin && !n.straight {
		try(false)
	}
	if best == nil {
		return nil
	}
	src := best.inner.leaf
	ij := &IndexJoin{Join: hj, Inner: src, InnerRight: best.innerRight, HandleKey: best.handleKey, Index: best.index, IndexKeys: best.keys, Consts: best.consts}
	ij.Unique = ij.HandleKey < 0 && ij.Index.Unique && len(ij.IndexKeys) == len(ij.Index.Columns)
	ij.innerMask = best.inner.mask
	if b.caching {
		ij.constE = best.constE
	}
	hj.BuildRight = best.innerRight
	for _, e := range best.inner.filterE {
		ij.Filters = append(ij.Filters, e)
	}
	// What EXPLAIN shows of the lookup.
	decided := make([]string, 0, len(hj.eqNodes))
	for _, e := range hj.eqNodes {
		decided = append(decided, exprText(e, lg.src))
	}
	rng := "range: decided by [" + strings.Join(decided, " ") + "], keep order:false" + statsInfo(src)
	est := math.Max(1, best.outer.Base().EstRows)
	var show Plan
	switch {
	case ij.Unique: // one BatchGet of the unique keys
		show = &lookupShow{BasePlan: b.base("Batch_Point_Get", est, taskRoot), access: indexObject(src, ij.Index),
			op: "key: decided by [" + strings.Join(decided, " ") + "], keep order:false, desc:false"}
	case ij.HandleKey >= 0 || src.Table.Clustered(ij.Index): // the rows by their keys
		scan := &lookupShow{BasePlan: b.base("TableRangeScan", est, taskCop), access: tableObject(src), op: rng}
		show = &lookupShow{BasePlan: b.base("TableReader", est, taskRoot, scan), op: "data:" + scan.ExplainID()}
	default:
		scan := &lookupShow{BasePlan: b.base("IndexRangeScan", est, taskCop), access: indexObject(src, ij.Index), op: rng}
		scan.Label = "Build"
		tbl := &lookupShow{BasePlan: b.base("TableRowIDScan", est, taskCop), access: tableObject(src), op: orderInfo(src, false, false)}
		tbl.Label = "Probe"
		show = &lookupShow{BasePlan: b.base("IndexLookUp", est, taskRoot, scan, tbl)}
	}
	if len(best.inner.filterE) > 0 {
		show = &Selection{BasePlan: b.base("Selection", est*selectionFactor, taskRoot, show), Conds: best.inner.filterE, exprNodes: exprNodes{Src: src, Nodes: best.inner.filterN}}
	}
	if lg.locks(src) {
		ij.Lock = &SelectLock{BasePlan: b.base("SelectLock", show.Base().EstRows, taskRoot, show), Src: src, Where: best.inner.lockWhere, NoWait: lg.nowait}
		show = ij.Lock
	}
	best.outer.Base().Label, show.Base().Label = "Build", "Probe"
	ij.BasePlan = b.base("IndexJoin", hj.EstRows, taskRoot, best.outer, show)
	return ij
}
