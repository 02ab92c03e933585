package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Multi-table UPDATE and DELETE run the statement's FROM clause and WHERE
// as a SELECT * through sql/planner's join planning, take the joined rows
// (every table's columns and hidden handle side by side, from below the
// SELECT's projection), and then write each target table's rows once:
//
//   - A target row is written at most once however many joined rows
//     match it; an UPDATE evaluates its assignments to a table on the
//     first joined row that matches the table's row, left to right, each
//     seeing the earlier assignments of that row (MySQL leaves the order
//     unspecified for multi-table UPDATE; this is what it does in
//     practice). A row an outer join NULL-extends is not a match.
//   - In pessimistic mode the join is planned as SELECT ... FOR UPDATE OF
//     <the target tables>: the target tables' rows are locked as they are
//     read, re-read at the lock's for_update_ts and re-checked against
//     their own conditions before being joined, so the statement joins and
//     writes the latest values of the rows it writes; the other tables are
//     read from the snapshot (as TiDB does).
//   - The rows of one table are written by sql/table's Writer
//     (UpdateRecords / RemoveRecords, which keep the indexes): changing
//     the primary key moves the row, 1062 on a collision.
//
// A table a self-join names twice is one table: each of its rows is
// deleted once, and an UPDATE of the same row through both aliases
// applies both aliases' assignments (the second's on top of the first's).

// multiLeaf is a table of a multi-table statement's FROM clause that the
// statement writes.
type multiLeaf struct {
	src  *planner.Source
	base int // first slot of its columns in the joined row
}

func (l *multiLeaf) handle(row []datum) (handle, bool) {
	d := row[l.base+len(l.src.Table.Columns)]
	if d.IsNull() {
		return handle{}, false
	}
	return tablecodec.HandleOfDatum(d), true
}

func (l *multiLeaf) segment(row []datum) []datum {
	w := l.src.Table.RowWidth()
	return row[l.base : l.base+w : l.base+w]
}

// IsMultiTableUpdate reports whether s is a multi-table UPDATE: `UPDATE
// t1, t2 ...`, or a join the parser takes for the single-table form
// (`UPDATE t1 JOIN t2 ...`, which allows ORDER BY and LIMIT). The
// executor and the session's privilege check decide by it alike.
func IsMultiTableUpdate(s *ast.UpdateStmt) bool {
	if s.MultipleTable {
		return true
	}
	refs := s.TableRefs
	if refs == nil || refs.TableRefs == nil {
		return false
	}
	j := refs.TableRefs
	if j.Right != nil {
		return true
	}
	switch l := j.Left.(type) {
	case *ast.Join:
		return true
	case *ast.TableSource:
		_, nested := l.Source.(*ast.Join)
		return nested
	}
	return false
}

// multiJoin plans the FROM clause and WHERE of a multi-table statement as
// SELECT * (locking the rows of the tables lock names, when set).
func (e *Executor) multiJoin(ctx context.Context, refs *ast.TableRefsClause, where ast.ExprNode, with *ast.WithClause,
	hints []*ast.TableOptimizerHint, lock []*ast.TableName, env expr.Env) (*planner.SelectPlan, []*planner.Source, []int, error) {
	sel := &ast.SelectStmt{
		SelectStmtOpts: &ast.SelectStmtOpts{SQLCache: true},
		Kind:           ast.SelectStmtKindSelect,
		From:           refs,
		Where:          where,
		Fields:         &ast.FieldList{Fields: []*ast.SelectField{{WildCard: &ast.WildCardField{}}}},
		TableHints:     hints,
		With:           with,
	}
	if len(lock) > 0 {
		sel.LockInfo = &ast.SelectLockInfo{LockType: ast.SelectLockForUpdate, Tables: lock}
	}
	start := time.Now()
	sp, err := e.planner.PlanSelect(ctx, sel, env, false)
	execdetails.From(ctx).Since(execdetails.Compile, start)
	if err != nil {
		return nil, nil, nil, err
	}
	if sp.Src == nil {
		return nil, nil, nil, errno.NotSupported("multi-table UPDATE or DELETE without a table")
	}
	if sp.Src.Join != nil {
		leaves, bases := sp.Src.Join.Leaves()
		return sp, leaves, bases, nil
	}
	return sp, []*planner.Source{sp.Src}, []int{0}, nil
}

// joinRows runs sp below its projection: the joined rows.
func (e *Executor) joinRows(ctx context.Context, sp *planner.SelectPlan, tx TxnSource) ([][]datum, error) {
	proj, ok := sp.Root.(*planner.Projection)
	if !ok {
		return nil, fmt.Errorf("executor: multi-table DML plan is %T, not a projection", sp.Root)
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	rc := newRunCtx(e, tx, txn)
	defer rc.observeRPCs()
	rc.bindSubqueries(ctx, sp.Subqueries)
	op, err := rc.build(proj.Children[0], nil)
	if err != nil {
		return nil, err
	}
	return drain(ctx, op, rc.mem)
}

// writableLeaf checks that a target of a multi-table statement is a base
// table: a derived table or view is 1288, a system table 1044.
func writableLeaf(l *planner.Source, what string, env expr.Env) error {
	switch {
	case l.Mem != nil:
		return planner.ErrReadOnlySystemTable(env.User(), l)
	case l.Sub != nil || l.Table == nil || l.Table.ID == 0:
		return errno.New(1288, "The target table %s of the %s is not updatable", l.DisplayName(), what)
	}
	return nil
}

func lockNames(ls []*multiLeaf) []*ast.TableName {
	names := make([]*ast.TableName, len(ls))
	for i, l := range ls {
		names[i] = &ast.TableName{Name: ast.NewCIStr(l.src.Alias)}
	}
	return names
}

// relock re-plans the join locking the targets' rows (pessimistic mode)
// and maps the targets to the new plan's leaves.
func (e *Executor) relock(ctx context.Context, refs *ast.TableRefsClause, where ast.ExprNode, with *ast.WithClause,
	hints []*ast.TableOptimizerHint, targets []*multiLeaf, env expr.Env) (*planner.SelectPlan, error) {
	sp, leaves, bases, err := e.multiJoin(ctx, refs, where, with, hints, lockNames(targets), env)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		found := false
		for i, l := range leaves {
			if l.Alias == t.src.Alias {
				t.src, t.base, found = l, bases[i], true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("executor: table %s vanished re-planning a multi-table statement", t.src.Alias)
		}
	}
	return sp, nil
}

// multiDelete runs DELETE t1[, t2 ...] FROM <join> [WHERE] (and DELETE FROM
// t1[, ...] USING <join> [WHERE]).
func (e *Executor) multiDelete(ctx context.Context, s *ast.DeleteStmt, env expr.Env, tx TxnSource) (*Result, error) {
	switch {
	case s.Order != nil:
		return nil, errno.New(errno.ErrWrongUsage, "Incorrect usage of DELETE and ORDER BY")
	case s.Limit != nil:
		return nil, errno.New(errno.ErrWrongUsage, "Incorrect usage of DELETE and LIMIT")
	case s.Tables == nil || len(s.Tables.Tables) == 0:
		return nil, errno.NotSupported("multi-table DELETE without target tables")
	}
	sp, leaves, bases, err := e.multiJoin(ctx, s.TableRefs, s.Where, s.With, s.TableHints, nil, env)
	if err != nil {
		return nil, err
	}
	var targets []*multiLeaf
	for _, tn := range s.Tables.Tables {
		ix := -1
		for i, l := range leaves {
			if l.Alias == tn.Name.L && (tn.Schema.L == "" || (l.DB != nil && l.Sub == nil && equalFold(l.DB.Name, tn.Schema.O))) {
				ix = i
				break
			}
		}
		if ix < 0 {
			return nil, errno.New(1109, "Unknown table '%s' in MULTI DELETE", tn.Name.O)
		}
		for _, t := range targets {
			if t.src == leaves[ix] {
				return nil, errno.New(1066, "Not unique table/alias: '%s'", tn.Name.O)
			}
		}
		if err := writableLeaf(leaves[ix], "DELETE", env); err != nil {
			return nil, err
		}
		targets = append(targets, &multiLeaf{src: leaves[ix], base: bases[ix]})
	}
	if tx.TxnOptions().Pessimistic {
		if sp, err = e.relock(ctx, s.TableRefs, s.Where, s.With, s.TableHints, targets, env); err != nil {
			return nil, err
		}
	}
	rows, err := e.joinRows(ctx, sp, tx)
	if err != nil {
		return nil, err
	}
	type group struct {
		tbl     *model.TableInfo
		handles []handle
		rows    [][]datum
	}
	var groups []*group
	byTable := map[int64]*group{}
	seen := map[rowID]bool{}
	for _, r := range rows {
		for _, t := range targets {
			h, ok := t.handle(r)
			if !ok {
				continue
			}
			id := rowID{t.src.Table.ID, string(h.Encoded())}
			if seen[id] {
				continue
			}
			seen[id] = true
			g := byTable[id.table]
			if g == nil {
				g = &group{tbl: t.src.Table}
				byTable[id.table] = g
				groups = append(groups, g)
			}
			g.handles, g.rows = append(g.handles, h), append(g.rows, t.segment(r))
		}
	}
	if len(seen) == 0 {
		return &Result{}, nil
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		tx.NoteWrite(g.tbl)
		if err := e.writer(tx, txn, g.tbl, env).RemoveRecords(ctx, g.handles, g.rows); err != nil {
			return nil, err
		}
	}
	return &Result{AffectedRows: uint64(len(seen))}, nil
}

// rowID is a row of a table (its handle's encoded form).
type rowID struct {
	table  int64
	handle string
}

func equalFold(a, b string) bool { return ast.NewCIStr(a).L == ast.NewCIStr(b).L }

// joinedExpr evaluates an assignment's expression on the joined row (an
// assign's expression is otherwise evaluated on the target's own row).
type joinedExpr struct {
	e   expr.Expr
	row *[]datum
}

func (j joinedExpr) Eval([]datum) (datum, error) { return j.e.Eval(*j.row) }
func (j joinedExpr) Type() types.FieldType       { return j.e.Type() }

// multiAssign is one assignment of a multi-table UPDATE.
type multiAssign struct {
	t int // the target (index in targets)
	a assign
}

// multiUpdate runs UPDATE <join> SET ... [WHERE].
func (e *Executor) multiUpdate(ctx context.Context, s *ast.UpdateStmt, env expr.Env, tx TxnSource) (*Result, error) {
	switch {
	case s.Order != nil:
		return nil, errno.New(errno.ErrWrongUsage, "Incorrect usage of UPDATE and ORDER BY")
	case s.Limit != nil:
		return nil, errno.New(errno.ErrWrongUsage, "Incorrect usage of UPDATE and LIMIT")
	}
	sp, leaves, bases, err := e.multiJoin(ctx, s.TableRefs, s.Where, s.With, s.TableHints, nil, env)
	if err != nil {
		return nil, err
	}
	var cur []datum // the joined row being assigned
	ectx := &expr.Ctx{Columns: sp.Src.Cols, Env: env, Clause: "field list"}
	var targets []*multiLeaf
	var as []multiAssign
	for _, a := range s.List {
		ce, err := expr.Compile(&ast.ColumnNameExpr{Name: a.Column}, ectx)
		if err != nil {
			return nil, err
		}
		col, ok := ce.(*expr.Column)
		if !ok {
			return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
		}
		li := len(leaves) - 1
		for li > 0 && bases[li] > col.Offset {
			li--
		}
		leaf := leaves[li]
		if err := writableLeaf(leaf, "UPDATE", env); err != nil {
			return nil, err
		}
		off := col.Offset - bases[li]
		if off >= len(leaf.Table.Columns) {
			return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
		}
		ti := -1
		for i, t := range targets {
			if t.src == leaf {
				ti = i
			}
		}
		if ti < 0 {
			ti = len(targets)
			targets = append(targets, &multiLeaf{src: leaf, base: bases[li]})
		}
		ma := multiAssign{t: ti, a: assign{off: off}}
		isDef := bareDefault(a.Expr)
		if c := leaf.Table.Columns[off]; c.IsGenerated() {
			if !isDef {
				return nil, errGeneratedValue(leaf.Table, c)
			}
			continue // recomputed from the row (fillGenerated)
		}
		if isDef {
			ma.a.def = true
		} else {
			ae, err := expr.Compile(a.Expr, ectx)
			if err != nil {
				return nil, err
			}
			ma.a.e = joinedExpr{e: expr.WriteValue(ae, leaf.Table.Columns[off].Type, env), row: &cur}
		}
		as = append(as, ma)
	}
	if err := keyUpdatedTwice(targets, as); err != nil {
		return nil, err
	}
	if tx.TxnOptions().Pessimistic {
		if sp, err = e.relock(ctx, s.TableRefs, s.Where, s.With, s.TableHints, targets, env); err != nil {
			return nil, err
		}
	}
	rows, err := e.joinRows(ctx, sp, tx)
	if err != nil {
		return nil, err
	}
	cv := newConv(env, s.IgnoreErr, true)
	// Each target row's first match gives its new values; a row updated
	// through two aliases (a self-join) takes the second alias's assigned
	// columns on top of the first's.
	type change struct {
		tbl      *model.TableInfo
		old, new []datum
	}
	var changes []*change
	byRow := map[rowID]*change{}
	seen := make([]map[string]bool, len(targets))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	fresh := make([]bool, len(targets))
	for ri, r := range rows {
		some := false
		for ti, t := range targets {
			h, ok := t.handle(r)
			hk := string(h.Encoded())
			fresh[ti] = ok && !seen[ti][hk]
			if fresh[ti] {
				seen[ti][hk], some = true, true
			}
		}
		if !some {
			continue
		}
		cur = append([]datum(nil), r...)
		for _, ma := range as {
			if !fresh[ma.t] {
				continue
			}
			t := targets[ma.t]
			if err := assignRow([]assign{ma.a}, t.src.Table, env, t.segment(cur), ri+1, cv); err != nil {
				return nil, err
			}
		}
		for ti, t := range targets {
			if !fresh[ti] {
				continue
			}
			h, _ := t.handle(r)
			id := rowID{t.src.Table.ID, string(h.Encoded())}
			newSeg := t.segment(cur)
			if c := byRow[id]; c != nil {
				for _, ma := range as {
					if ma.t == ti {
						c.new[ma.a.off] = newSeg[ma.a.off]
					}
				}
				continue
			}
			c := &change{tbl: t.src.Table, old: t.segment(r), new: newSeg}
			byRow[id] = c
			changes = append(changes, c)
		}
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	// The changed rows, per table, in the table's ForWrite layout.
	type tableWrite struct {
		pub, tbl         *model.TableInfo // as read, and its ForWrite table
		oldHs, newHs     []handle
		oldRows, newRows [][]datum
	}
	var writes []*tableWrite
	byTable := map[int64]*tableWrite{}
	changed := 0
	for i, c := range changes {
		if err := fillGenerated(c.tbl, c.new, i+1, cv); err != nil {
			return nil, err
		}
		if sameRow(c.old, c.new, len(c.tbl.Columns)) {
			continue
		}
		if err := touchOnUpdate(c.tbl, func(off int) bool {
			for _, ma := range as {
				if targets[ma.t].src.Table.ID == c.tbl.ID && ma.a.off == off {
					return true
				}
			}
			return false
		}, env, c.new, changed+1, cv); err != nil {
			return nil, err
		}
		if skip, err := checkRowIgnore(c.tbl, c.new, s.IgnoreErr, cv.res); err != nil {
			return nil, err
		} else if skip {
			continue
		}
		changed++
		w := byTable[c.tbl.ID]
		if w == nil {
			w = &tableWrite{pub: c.tbl, tbl: c.tbl.ForWrite()}
			byTable[c.tbl.ID] = w
			writes = append(writes, w)
		}
		oldH := tablecodec.HandleOfDatum(c.old[len(c.tbl.Columns)])
		w.oldHs, w.oldRows, w.newRows = append(w.oldHs, oldH), append(w.oldRows, c.old), append(w.newRows, c.new)
	}
	for _, w := range writes {
		if w.tbl != w.pub {
			if err := e.widenRows(ctx, tx, w.tbl, w.oldHs, w.oldRows, w.newRows); err != nil {
				return nil, err
			}
		}
		for i, nr := range w.newRows {
			w.newHs = append(w.newHs, movedHandle(w.tbl, w.oldHs[i], nr))
		}
		tx.NoteWrite(w.tbl)
		if err := e.writer(tx, txn, w.tbl, env).UpdateRecords(ctx, w.oldHs, w.oldRows, w.newHs, w.newRows); err != nil {
			return nil, err
		}
	}
	return &Result{AffectedRows: uint64(changed), FoundRows: uint64(len(changes)),
		Warnings: cv.warnings(),
		Info:     fmt.Sprintf("Rows matched: %d  Changed: %d  Warnings: %d", len(changes), changed, len(cv.warnings()))}, nil
}

// widenRows replaces the rows of a table an ADD or DROP COLUMN is
// changing (read through its public columns) by the whole rows of its
// ForWrite table w, re-read by handle (in pessimistic mode through the
// locks the join took, at a fresh for_update_ts), the new rows taking
// the public columns' new values: the rewritten rows keep the non-public
// columns' values.
func (e *Executor) widenRows(ctx context.Context, tx TxnSource, w *model.TableInfo, hs []handle, oldRows, newRows [][]datum) error {
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return err
	}
	keys := make([][]byte, len(hs))
	for i, h := range hs {
		keys[i] = tablecodec.AppendHandleRowKey(nil, w.ID, h)
	}
	vals, pess, err := e.lockKeys(ctx, tx, txn, false, keys)
	if err != nil {
		return err
	}
	if !pess {
		m, err := txn.BatchGet(ctx, keys)
		if err != nil {
			return err
		}
		vals = make([][]byte, len(keys))
		for i, k := range keys {
			vals[i] = m[string(k)]
		}
	}
	npub := w.PublicColumns()
	for i, v := range vals {
		if v == nil {
			return fmt.Errorf("executor: row %d of %s vanished during a multi-table UPDATE", hs[i], w.Name)
		}
		full := make([]datum, w.RowWidth())
		if err := w.DecodeRow(keys[i], v, full); err != nil {
			return fmt.Errorf("decode row of %s: %w", w.Name, err)
		}
		nr := append([]datum(nil), full...)
		copy(nr[:npub], newRows[i][:npub])
		oldRows[i], newRows[i] = full, nr
	}
	return nil
}

// keyUpdatedTwice is MySQL's 1706: a table updated through two aliases
// may not have its primary key assigned.
func keyUpdatedTwice(targets []*multiLeaf, as []multiAssign) error {
	for i, a := range targets {
		for _, b := range targets[i+1:] {
			if a.src.Table.ID != b.src.Table.ID {
				continue
			}
			for _, ma := range as {
				if (ma.t == i || targets[ma.t] == b) && a.src.Table.Columns[ma.a.off].IsPrimaryKey() {
					return errno.New(1706, "Primary key/partition key update is not allowed since the table is updated both as '%s' and '%s'.",
						a.src.AliasO, b.src.AliasO)
				}
			}
		}
	}
	return nil
}
