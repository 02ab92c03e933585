package planner

import (
	"math"
	"math/bits"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/stratadb/strata/sql/expr"
)

// Join reorder (TiDB's greedy join reorder, rule_join_reorder_greedy.go):
// a FROM clause of three or more tables joined only by inner joins (comma,
// JOIN, INNER JOIN, CROSS JOIN) is planned as a left-deep tree in the order
// that joins the smallest estimated input first and then, at each step, the
// smallest table connected to those already joined by an equality. The
// statement's order would make `FROM item, supplier, stock …` (no condition
// between item and supplier) a cross product of both tables.
//
// The reordered tree lays the tables' rows out in its own order; a
// Projection puts the columns back in the statement's order, which every
// operator above the join was compiled against.

// reorderedJoin is the FROM clause of lg planned in another table order.
type reorderedJoin struct {
	lg   *logical // lg with a Source whose tables are in the new order
	perm []int    // perm[i]: the new position of the statement's table i
}

// reorderJoin returns the greedy order for lg's join tree, or nil to keep
// the statement's order (outer joins, a STRAIGHT_JOIN, fewer than three
// tables, or the statement's order is the greedy one).
func (b *builder) reorderJoin(lg *logical, conds []ast.ExprNode) *reorderedJoin {
	ji, cols := lg.src.Join, lg.src.Cols
	n := len(ji.leaves)
	if n < 3 || !innerOnly(ji.root) || hasStraight(ji.root) {
		return nil
	}
	all := append([]ast.ExprNode(nil), conds...)
	all = collectOn(ji.root, all)
	rows := make([]float64, n)
	for i, l := range ji.leaves {
		rows[i] = tableRows(l)
	}
	var edges []uint64
	var keys []joinKey
	for _, c := range all {
		m := ji.refs(c, cols)
		switch {
		case bits.OnesCount64(m) == 1:
			l := bits.TrailingZeros64(m)
			rows[l] *= condSel(ji.leaves[l], c, b.env)
		case bits.OnesCount64(m) >= 2 && isEquality(c):
			edges = append(edges, m)
			if k, ok := ji.joinKeyOf(c, cols); ok {
				keys = append(keys, k)
			}
		}
	}
	connected := func(i int, joined uint64) bool {
		bit := uint64(1) << i
		for _, e := range edges {
			if e&bit != 0 && e&joined != 0 && e&^(joined|bit) == 0 {
				return true
			}
		}
		return false
	}
	// joinedRows estimates |J ⋈ t_i| for the tables J (joinedRows rows)
	// and table i: each equality between one column of each side divides
	// the cross product by the larger of the two sides' distinct counts
	// (TiDB's estimate), a side's count being its column's NDV (at most
	// its rows) or, for an expression or a column without statistics,
	// its rows (a key).
	ndv := func(l int, off int) float64 {
		n := rows[l]
		if off >= 0 {
			if c := statsColumn(ji.leaves[l], off); c != nil && c.NDV > 0 {
				n = math.Min(n, float64(c.NDV))
			}
		}
		return math.Max(n, 1)
	}
	joinEst := func(joined uint64, jRows float64, i int) float64 {
		est := jRows * rows[i]
		for _, k := range keys {
			var in, out int
			var inOff, outOff int
			switch {
			case k.l == i && joined&(1<<k.r) != 0:
				in, inOff, out, outOff = k.l, k.lOff, k.r, k.rOff
			case k.r == i && joined&(1<<k.l) != 0:
				in, inOff, out, outOff = k.r, k.rOff, k.l, k.lOff
			default:
				continue
			}
			est /= math.Max(ndv(in, inOff), ndv(out, outOff))
		}
		return math.Max(est, 1)
	}
	order := make([]int, 0, n)
	var joined uint64
	jRows := 0.0
	for len(order) < n {
		best, bestConn, bestEst := -1, false, 0.0
		for i := 0; i < n; i++ {
			if joined&(1<<i) != 0 {
				continue
			}
			conn := joined != 0 && connected(i, joined)
			est := rows[i]
			if joined != 0 {
				est = joinEst(joined, jRows, i)
			}
			switch {
			case best < 0, conn && !bestConn, conn == bestConn && est < bestEst:
				best, bestConn, bestEst = i, conn, est
			}
		}
		order = append(order, best)
		joined |= 1 << best
		jRows = bestEst
	}
	identity := true
	for i, l := range order {
		identity = identity && i == l
	}
	if identity {
		return nil
	}

	// The new Source: tables in the new order, a left-deep tree of inner
	// joins, every condition given to its root (pushdown places them).
	nji := &JoinInfo{}
	ncols := make([]expr.SchemaColumn, 0, len(cols))
	perm := make([]int, n)
	var root *joinNode
	for pos, li := range order {
		perm[li] = pos
		src := ji.leaves[li]
		lo := len(ncols)
		nji.leaves = append(nji.leaves, src)
		nji.base = append(nji.base, lo)
		ncols = append(ncols, src.Cols...)
		leaf := &joinNode{leaf: src, leafIx: pos, lo: lo, hi: len(ncols), mask: 1 << pos}
		if root == nil {
			root = leaf
			continue
		}
		root = &joinNode{left: root, right: leaf, lo: 0, hi: leaf.hi, mask: root.mask | leaf.mask}
	}
	nji.root = root
	nsrc := *lg.src
	nsrc.Cols, nsrc.Join = ncols, nji
	nlg := *lg
	nlg.src = &nsrc
	nji.pushdown(root, all, ncols, b.env)
	return &reorderedJoin{lg: &nlg, perm: perm}
}

// plan builds the reordered join and the Projection back to the
// statement's column order.
func (r *reorderedJoin) plan(b *builder, orig *logical) (Plan, error) {
	p, err := b.joinNodePlan(r.lg, r.lg.src.Join.root)
	if err != nil {
		return nil, err
	}
	oji, nji := orig.src.Join, r.lg.src.Join
	exprs := make([]expr.Expr, 0, len(orig.src.Cols))
	nodes := make([]ast.ExprNode, 0, len(orig.src.Cols))
	for i, l := range oji.leaves {
		base := nji.base[r.perm[i]]
		for j, c := range l.Cols {
			exprs = append(exprs, &expr.Column{Offset: base + j, Ft: c.Type, Name: c.Name})
			nodes = append(nodes, &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.Table), Name: ast.NewCIStr(c.Name)}})
		}
	}
	return &Projection{BasePlan: b.base("Projection", p.Base().EstRows, taskRoot, p), Exprs: exprs,
		exprNodes: exprNodes{Src: orig.src, Nodes: nodes}}, nil
}

func innerOnly(n *joinNode) bool {
	if n.leaf != nil {
		return true
	}
	return n.tp == InnerJoin && innerOnly(n.left) && innerOnly(n.right)
}

func collectOn(n *joinNode, out []ast.ExprNode) []ast.ExprNode {
	if n.leaf != nil {
		return out
	}
	out = append(out, n.on...)
	return collectOn(n.right, collectOn(n.left, out))
}

// joinKey is an equality between an expression of leaf l and one of
// leaf r; lOff / rOff are the leaves' column offsets when that side reads
// one column (the column, or a function of it: it has at most that
// column's distinct values), else -1.
type joinKey struct {
	l, r       int
	lOff, rOff int
}

// joinKeyOf returns c's join key when c is `x = y` with each side on one
// leaf, the two leaves different.
func (ji *JoinInfo) joinKeyOf(c ast.ExprNode, cols []expr.SchemaColumn) (joinKey, bool) {
	x, ok := unparen(c).(*ast.BinaryOperationExpr)
	if !ok {
		return joinKey{}, false
	}
	side := func(n ast.ExprNode) (leaf, off int, ok bool) {
		m := ji.refs(n, cols)
		if bits.OnesCount64(m) != 1 {
			return 0, 0, false
		}
		leaf, off = bits.TrailingZeros64(m), -1
		v := &colOffsets{ji: ji, cols: cols, off: -1}
		n.Accept(v)
		if v.off >= 0 && !v.many && ji.leafOf(v.off) == leaf {
			off = v.off - ji.base[leaf]
		}
		return leaf, off, true
	}
	l, lOff, ok1 := side(x.L)
	r, rOff, ok2 := side(x.R)
	if !ok1 || !ok2 || l == r {
		return joinKey{}, false
	}
	return joinKey{l: l, r: r, lOff: lOff, rOff: rOff}, true
}

func isEquality(c ast.ExprNode) bool {
	x, ok := unparen(c).(*ast.BinaryOperationExpr)
	return ok && (x.Op == opcode.EQ || x.Op == opcode.NullEQ)
}

// colOffsets finds the one column (joined-row offset) an expression reads.
type colOffsets struct {
	ji   *JoinInfo
	cols []expr.SchemaColumn
	off  int
	many bool
	seen bool
}

func (v *colOffsets) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr:
		v.many = true
		return n, true
	case *ast.ColumnNameExpr:
		o := v.ji.columnOffset(v.cols, x.Name)
		switch {
		case o < 0 || (v.seen && o != v.off):
			v.many = true
		default:
			v.off, v.seen = o, true
		}
	}
	return n, false
}

func (v *colOffsets) Leave(n ast.Node) (ast.Node, bool) { return n, true }
