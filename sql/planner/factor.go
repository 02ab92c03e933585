package planner

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// factorCommon rewrites each WHERE conjunct of the form
// (A AND B) OR (A AND C) … into A and (B OR C …), TiDB's "extract common
// factors from a DNF": a join condition repeated in every disjunct (CH
// query 19: ol_i_id = i_id in each of three) then joins the tables
// instead of leaving a cross product under an OR filter. If some
// disjunct is only common factors, the OR is true and dropped. Factors
// with a non-deterministic function are left in place (their evaluation
// count would change). AND and OR are distributive in SQL's three-valued
// logic, so the rewrite keeps NULL results.
func factorCommon(conds []ast.ExprNode) []ast.ExprNode {
	var out []ast.ExprNode
	changed := false
	for i, c := range conds {
		f, ok := factorOr(c)
		if !ok {
			if changed {
				out = append(out, c)
			}
			continue
		}
		if !changed {
			out = append(out, conds[:i]...)
			changed = true
		}
		out = append(out, f...)
	}
	if !changed {
		return conds
	}
	return out
}

func factorOr(c ast.ExprNode) ([]ast.ExprNode, bool) {
	disj := splitOr(c, nil)
	if len(disj) < 2 {
		return nil, false
	}
	parts := make([][]ast.ExprNode, len(disj))
	keys := make([][]string, len(disj))
	for i, d := range disj {
		parts[i] = conjuncts(d, nil)
		keys[i] = make([]string, len(parts[i]))
		for j, p := range parts[i] {
			keys[i][j] = exprKey(p)
		}
	}
	var common []ast.ExprNode
	isCommon := map[string]bool{}
	for j, p := range parts[0] {
		k := keys[0][j]
		if k == "" || isCommon[k] || !deterministic(p) {
			continue
		}
		inAll := true
		for i := 1; i < len(parts) && inAll; i++ {
			inAll = slices.Contains(keys[i], k)
		}
		if inAll {
			isCommon[k] = true
			common = append(common, p)
		}
	}
	if len(common) == 0 {
		return nil, false
	}
	var or ast.ExprNode
	for i := range parts {
		var and ast.ExprNode
		for j, p := range parts[i] {
			if isCommon[keys[i][j]] {
				continue
			}
			and = join(and, p, opcode.LogicAnd)
		}
		if and == nil { // this disjunct is the common part: the OR holds
			return common, true
		}
		or = join(or, &ast.ParenthesesExpr{Expr: and}, opcode.LogicOr)
	}
	return append(common, or), true
}

func join(l, r ast.ExprNode, op opcode.Op) ast.ExprNode {
	if l == nil {
		return r
	}
	return &ast.BinaryOperationExpr{Op: op, L: l, R: r}
}

// splitOr appends the OR-ed parts of n to out.
func splitOr(n ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	n = unparen(n)
	if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicOr {
		return splitOr(b.R, splitOr(b.L, out))
	}
	return append(out, n)
}

// exprKey is n's SQL text: equal texts in one WHERE clause name the same
// columns and compute the same value ("" if it cannot be restored).
func exprKey(n ast.ExprNode) string {
	var sb strings.Builder
	if err := unparen(n).Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return ""
	}
	return sb.String()
}

// nonDeterministic are functions whose value may differ between two
// evaluations in one row.
var nonDeterministic = map[string]bool{
	"rand": true, "uuid": true, "uuid_short": true, "sleep": true, "get_lock": true,
	"release_lock": true, "release_all_locks": true, "last_insert_id": true, "nextval": true,
	"setval": true, "sysdate": true, "connection_id": true,
}

func deterministic(n ast.ExprNode) bool {
	v := &detVisitor{}
	n.Accept(v)
	return !v.non
}

// callsNonDeterministic reports whether n calls one of nonDeterministic
// (subqueries and variables aside).
func callsNonDeterministic(n ast.ExprNode) bool {
	v := &detVisitor{callsOnly: true}
	n.Accept(v)
	return v.non
}

type detVisitor struct {
	non       bool
	callsOnly bool // only function calls count
}

func (v *detVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.FuncCallExpr:
		if nonDeterministic[x.FnName.L] {
			v.non = true
		}
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.VariableExpr:
		if !v.callsOnly {
			v.non = true // a subquery or a variable assignment: leave it alone
		}
	}
	return n, v.non
}

func (v *detVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }
