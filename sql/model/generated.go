package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// GeneratedInfo makes a column a generated column (`col type [GENERATED
// ALWAYS] AS (expr) [VIRTUAL | STORED]`).
//
// A STORED column's value is computed by DML from the row after its
// assignments and kept in the row value like any other. A VIRTUAL one is
// not in the row value: DecodeRow computes it from the decoded row, on
// the SQL node and in the stores' coprocessor alike (both decode through
// the same TableInfo), so filters, orderings and aggregates over it can be
// pushed down, and a virtual column added by ALTER TABLE needs no rewrite.
// Index entries hold the value either way.
type GeneratedInfo struct {
	// Expr is the expression as the TiDB parser restores it (backquoted
	// names, lower-case keywords, single-quoted strings): the text SHOW
	// CREATE TABLE and information_schema show and Init compiles.
	Expr   string `json:"expr"`
	Stored bool   `json:"stored,omitempty"`
	// Deps are the lower-case names of the columns the expression reads.
	Deps []string `json:"deps,omitempty"`
}

// IsGenerated reports whether c is a generated column.
func (c *ColumnInfo) IsGenerated() bool { return c.Generated != nil }

// IsVirtual reports whether c is a VIRTUAL generated column (its value is
// not stored in the row).
func (c *ColumnInfo) IsVirtual() bool { return c.Generated != nil && !c.Generated.Stored }

// GeneratedExtra is the EXTRA text of a generated column ("VIRTUAL
// GENERATED" / "STORED GENERATED", as MySQL 8 shows it), else "".
func (c *ColumnInfo) GeneratedExtra() string {
	switch {
	case c.Generated == nil:
		return ""
	case c.Generated.Stored:
		return "STORED GENERATED"
	}
	return "VIRTUAL GENERATED"
}

// genCol is a compiled generated column: its offset and expression over
// the table's row (by offset).
type genCol struct {
	off int
	e   expr.Expr
}

// ParseGeneratedExpr parses the text of a generated column's expression.
func ParseGeneratedExpr(text string) (ast.ExprNode, error) {
	st, err := parser.New().ParseOneStmt("SELECT "+text, "", "")
	if err != nil {
		return nil, err
	}
	sel, ok := st.(*ast.SelectStmt)
	if !ok || sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.From != nil {
		return nil, fmt.Errorf("model: %q is not one expression", text)
	}
	return sel.Fields.Fields[0].Expr, nil
}

// GeneratedText is the canonical text of expression n, which a generated
// column and a CHECK constraint keep: the TiDB parser's restoring with
// lower-case keywords, backquoted names without their table and database,
// single-quoted strings, every binary operation spaced and parenthesized
// once, and <> for "not equal" (the parser restores it as !=), as MySQL 8
// prints them ("(`a` + (`b` * 2))", "(`a` <> 1)"). The text of its own parse is
// itself, so SHOW CREATE TABLE, a dump and its reload agree. The planner
// puts a query's expression in the same form to find the generated column
// it stands for; n is not modified.
func GeneratedText(n ast.ExprNode) (string, error) {
	text, err := restoreGenerated(n)
	if err != nil {
		return "", err
	}
	// Parentheses the text already has around a binary operation would
	// be doubled by the next restoring: drop them from a fresh parse.
	again, err := ParseGeneratedExpr(text)
	if err != nil {
		return "", err
	}
	stripped, _ := again.Accept(parenStripper{})
	text, err = restoreGenerated(stripped.(ast.ExprNode))
	if err != nil {
		return "", err
	}
	return mysqlNotEqual(text), nil
}

// mysqlNotEqual rewrites the restored " != " of text, outside quoted
// strings and names, as MySQL's " <> ".
func mysqlNotEqual(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'', '"', '`': // copied through to its closing quote
			j := i + 1
			for j < len(text) && text[j] != c {
				if text[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			b.WriteString(text[i:min(j+1, len(text))])
			i = j
		default:
			if strings.HasPrefix(text[i:], " != ") {
				b.WriteString(" <> ")
				i += 3
				continue
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

func restoreGenerated(n ast.ExprNode) (string, error) {
	var sb strings.Builder
	flags := format.RestoreStringSingleQuotes | format.RestoreKeyWordLowercase | format.RestoreNameBackQuotes |
		format.RestoreSpacesAroundBinaryOperation | format.RestoreBracketAroundBinaryOperation |
		format.RestoreWithoutTableName | format.RestoreWithoutSchemaName
	if err := n.Restore(format.NewRestoreCtx(flags, &sb)); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// parenStripper replaces parentheses around a binary operation by the
// operation (restoring brackets every binary operation).
type parenStripper struct{}

func (parenStripper) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (parenStripper) Leave(n ast.Node) (ast.Node, bool) {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n, true
		}
		if _, bin := p.Expr.(*ast.BinaryOperationExpr); !bin {
			if _, inner := p.Expr.(*ast.ParenthesesExpr); !inner {
				return n, true
			}
		}
		n = p.Expr
	}
}

// GeneratedOrder returns the offsets of cols' generated columns in an
// order in which every one comes after the generated columns it reads
// (by Deps), ties kept in offset order, or an error naming a column of a
// dependency cycle.
func GeneratedOrder(cols []*ColumnInfo) ([]int, error) {
	byName := make(map[string]int, len(cols))
	for i, c := range cols {
		byName[strings.ToLower(c.Name)] = i
	}
	var order []int
	state := make([]byte, len(cols)) // 0 unvisited, 1 on the path, 2 done
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("model: generated column %s depends on itself", cols[i].Name)
		case 2:
			return nil
		}
		state[i] = 1
		for _, d := range cols[i].Generated.Deps {
			if j, ok := byName[d]; ok && cols[j].IsGenerated() {
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		state[i] = 2
		order = append(order, i)
		return nil
	}
	for i, c := range cols {
		if c.IsGenerated() {
			if err := visit(i); err != nil {
				return nil, err
			}
		}
	}
	return order, nil
}

// CompileGenerated compiles c's expression against the row layout of
// cols (every column by offset, by name whatever its state; the hidden
// handle is no name it can read).
func CompileGenerated(cols []*ColumnInfo, c *ColumnInfo) (expr.Expr, error) {
	n, err := ParseGeneratedExpr(c.Generated.Expr)
	if err != nil {
		return nil, err
	}
	schema := make([]expr.SchemaColumn, 0, len(cols)+1)
	for _, col := range cols {
		schema = append(schema, expr.SchemaColumn{Name: col.Name, Type: col.Type})
	}
	return expr.Compile(n, &expr.Ctx{Columns: schema, Clause: "generated column function"})
}

// initGenerated compiles the generated columns in dependency order. A
// failure (which DDL validation prevents) is kept and reported by every
// DML that must compute them; reads give NULL.
func (t *TableInfo) initGenerated() {
	t.gen, t.genErr = nil, nil
	order, err := GeneratedOrder(t.Columns)
	if err != nil {
		t.genErr = err
		return
	}
	for _, off := range order {
		e, err := CompileGenerated(t.Columns, t.Columns[off])
		if err != nil {
			t.genErr = fmt.Errorf("model: generated column %s of %s: %w", t.Columns[off].Name, t.Name, err)
			return
		}
		t.gen = append(t.gen, genCol{off: off, e: e})
	}
}

// HasGenerated reports whether t has generated columns.
func (t *TableInfo) HasGenerated() bool { return len(t.gen) > 0 || t.genErr != nil }

// FillGenerated computes every generated column of row (the table's
// columns by offset, then the handle) in dependency order, each from the
// row as the ones before left it, storing store(column, value) (the
// caller's type conversion and strictness) in it.
func (t *TableInfo) FillGenerated(row []types.Datum, store func(c *ColumnInfo, v types.Datum) (types.Datum, error)) error {
	if t.genErr != nil {
		return t.genErr
	}
	for _, g := range t.gen {
		v, err := g.e.Eval(row)
		if err != nil {
			return err
		}
		if row[g.off], err = store(t.Columns[g.off], v); err != nil {
			return err
		}
	}
	return nil
}

// fillVirtual computes the virtual columns of a decoded row. A value that
// does not fit the column is stored adjusted (types.ConvertLenient), and
// one that cannot be computed is NULL: a read never fails on it.
func (t *TableInfo) fillVirtual(row []types.Datum) {
	for _, g := range t.gen {
		c := t.Columns[g.off]
		if !c.IsVirtual() {
			continue
		}
		row[g.off] = types.NullDatum
		v, err := g.e.Eval(row)
		if err != nil || v.IsNull() {
			continue
		}
		if d, err := c.Type.Convert(v); err == nil {
			row[g.off] = d
		} else if d, _, ok := c.Type.ConvertLenient(v); ok {
			row[g.off] = d
		}
	}
}

// DependentGenerated returns the generated columns of t that read the
// named column.
func (t *TableInfo) DependentGenerated(name string) []*ColumnInfo {
	var out []*ColumnInfo
	for _, c := range t.Columns {
		if c.IsGenerated() && slices.Contains(c.Generated.Deps, strings.ToLower(name)) {
			out = append(out, c)
		}
	}
	return out
}
