package planner

import (
	"context"
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// PointTemplate is the cacheable plan of a prepared point select,
// `SELECT col, ... FROM t WHERE pk = ?` or with `col = ?` on every column of
// a unique index (TiDB's point-get plan cache): the projection is
// compiled once, and each execution only binds the parameters to the key
// (BindPoint). Templates are per session and not safe for concurrent use.
type PointTemplate struct {
	Src       *Source
	Index     *model.IndexInfo // nil: by handle
	Proj      *Projection
	Columns   []ResultColumn
	params    []int // per key column: the parameter's order
	dbName    string
	tblName   string
	qualified bool   // the statement names the database
	curDB     string // the current database when planned
}

// PointTemplate returns the template of s, or nil when s does not have
// the shape: one table without hints, plain columns in the select list,
// WHERE only `col = ?` covering the handle or a public unique index, and
// no other clause.
func (pl *Planner) PointTemplate(ctx context.Context, s *ast.SelectStmt, env expr.Env) (*PointTemplate, error) {
	if s.From == nil || s.Where == nil || s.GroupBy != nil || s.Having != nil || s.OrderBy != nil || s.Limit != nil ||
		s.Distinct || s.LockInfo != nil || s.With != nil || s.SelectIntoOpt != nil || len(s.WindowSpecs) > 0 || s.TableHints != nil {
		return nil, nil
	}
	for _, f := range s.Fields.Fields {
		if f.WildCard == nil {
			if _, ok := f.Expr.(*ast.ColumnNameExpr); !ok {
				return nil, nil // a constant or variable folded at plan time must not be cached
			}
		}
	}
	if isJoin(s.From) {
		return nil, nil
	}
	src, err := pl.ResolveTable(ctx, s.From, env, "SELECT")
	if err != nil || len(src.Hints) > 0 || src.Mem != nil || src.Sub != nil {
		return nil, err
	}
	byCol := map[int]int{} // source offset -> parameter order
	for _, c := range conjuncts(s.Where, nil) {
		b, ok := c.(*ast.BinaryOperationExpr)
		if !ok || b.Op != opcode.EQ {
			return nil, nil
		}
		cn, l := b.L.(*ast.ColumnNameExpr)
		pm, r := b.R.(*driver.ParamMarkerExpr)
		if !l || !r {
			cn, l = b.R.(*ast.ColumnNameExpr)
			pm, r = b.L.(*driver.ParamMarkerExpr)
			if !l || !r {
				return nil, nil
			}
		}
		off := src.columnOffset(cn.Name)
		if off < 0 {
			return nil, nil
		}
		if _, dup := byCol[off]; dup {
			return nil, nil
		}
		byCol[off] = pm.Order
	}
	t := &PointTemplate{Src: src, dbName: src.DB.Name, tblName: src.Table.Name, curDB: env.CurrentDB(),
		qualified: s.From.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName).Schema.L != ""}
	if ord, ok := byCol[src.HandleOffset()]; ok && len(byCol) == 1 {
		t.params = []int{ord}
	} else {
		for _, ix := range src.Table.Indices {
			if !ix.Unique || !ix.Public() || len(ix.Columns) != len(byCol) {
				continue
			}
			params := make([]int, 0, len(ix.Columns))
			for _, c := range ix.Columns {
				if ord, ok := byCol[c.Offset]; ok && domainOf(src.Cols[c.Offset].Type) != domainNone {
					params = append(params, ord)
				}
			}
			if len(params) == len(ix.Columns) {
				t.Index, t.params = ix, params
				break
			}
		}
		if t.params == nil {
			return nil, nil
		}
	}
	lg := &logical{src: src, width: len(src.Cols)}
	if err := lg.resolve(s, env, true); err != nil {
		return nil, err
	}
	b := &builder{env: env}
	t.Proj = &Projection{BasePlan: b.base("Projection", 1, taskRoot), Exprs: lg.fields, exprNodes: exprNodes{Src: src, Nodes: lg.fieldTx}}
	t.Columns = lg.cols
	return t, nil
}

// BindResult is the outcome of BindPoint.
type BindResult int

const (
	// Bound: the PointGet reads the statement's row.
	Bound BindResult = iota
	// BoundEmpty: no row can match (a NULL or out-of-range parameter).
	BoundEmpty
	// Stale: the table's definition or the current database changed; the
	// template must be rebuilt.
	Stale
	// NotApplicable: a parameter is not a value the key holds exactly
	// (e.g. a string for an integer key); plan this execution normally.
	NotApplicable
)

// BindPoint returns the PointGet of t for the parameters env binds.
func (pl *Planner) BindPoint(ctx context.Context, t *PointTemplate, env expr.Env) (*PointGet, BindResult) {
	db, err := pl.Catalog.GetDB(ctx, t.dbName)
	if err != nil || db != t.Src.DB {
		return nil, Stale
	}
	if tbl, err := pl.Catalog.GetTable(ctx, db, t.tblName); err != nil || tbl != t.Src.Table {
		return nil, Stale
	}
	if !t.qualified && env.CurrentDB() != t.curDB {
		return nil, Stale // the name now means a table of another database
	}
	pg := &PointGet{BasePlan: BasePlan{ID: 1, Tp: "Point_Get", EstRows: 1, Task: taskRoot}, Src: t.Src, Index: t.Index}
	if t.Index == nil {
		v, _ := env.Param(t.params[0])
		h, ok := handleOf(t.Src, v)
		if !ok {
			return nil, NotApplicable
		}
		pg.Handle = h
		return pg, Bound
	}
	pg.Values = make([]types.Datum, len(t.params))
	for i, ord := range t.params {
		v, _ := env.Param(ord)
		ivs, exact, ok := cmpInterval(t.Src.Cols[t.Index.Columns[i].Offset].Type, opcode.EQ, v, expr.ParamType(v))
		switch {
		case !ok || !exact || len(ivs) > 1:
			return nil, NotApplicable
		case len(ivs) == 0:
			return nil, BoundEmpty
		}
		pg.Values[i] = ivs[0].lo.v
	}
	return pg, Bound
}

// handleOf converts an integer parameter to a handle of src.
func handleOf(src *Source, v types.Datum) (int64, bool) {
	unsigned := src.Cols[src.HandleOffset()].Type.Unsigned()
	switch {
	case v.Kind() == types.KindInt64 && (!unsigned || v.Int64() >= 0):
		return v.Int64(), true
	case v.Kind() == types.KindUint64 && (unsigned || v.Uint64() <= math.MaxInt64):
		return int64(v.Uint64()), true
	}
	return 0, false
}
