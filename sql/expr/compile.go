package expr

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// Env supplies session values that compile to constants.
type Env interface {
	CurrentDB() string
	User() string
	ConnectionID() uint64
	LastInsertID() uint64
	// SysVar returns a system variable's value and type, or ERROR 1193.
	SysVar(name string, global bool) (types.Datum, types.FieldType, error)
	// UserVar returns a user variable (@name); NULL when unset.
	UserVar(name string) types.Datum
	Now() time.Time
	// Param returns the value bound to the i-th (0-based) parameter marker
	// of the prepared statement being executed; ok=false when none is.
	Param(i int) (d types.Datum, ok bool)
	// StatementDone is closed once the running statement is interrupted
	// (KILL QUERY, its client gone); nil when it cannot be.
	StatementDone() <-chan struct{}
}

// SchemaColumn is one slot of the row an expression is evaluated on.
type SchemaColumn struct {
	Table  string // lower-case table name or alias
	Name   string
	Type   types.FieldType
	Hidden bool // not expanded by *
	// Redundant: the column is one side of a USING / NATURAL join column
	// that an unqualified name resolves to the other side of, so only a
	// qualified name (t.c) matches it.
	Redundant bool
	// Default is a table column's DEFAULT, which DEFAULT(col) reads (nil:
	// not a table's column).
	Default *ColumnDefault
}

// ColumnDefault is a table column's DEFAULT clause.
type ColumnDefault struct {
	Value types.Datum // the default (NULL: DEFAULT NULL, or none on a nullable column)
	Now   bool        // DEFAULT CURRENT_TIMESTAMP: the statement's time
	None  bool        // no DEFAULT on a NOT NULL column: DEFAULT(col) is ERROR 1364
}

// Ctx carries what compilation needs.
type Ctx struct {
	Columns []SchemaColumn
	Env     Env
	// Clause names the clause for "Unknown column 'x' in '<Clause>'".
	Clause string
	// Agg, when set, compiles an aggregate function call (the planner
	// returns a reference to the aggregate's output slot).
	Agg func(*ast.AggregateFuncExpr) (Expr, error)
	// Window, when set, compiles a window function call (the select list
	// and ORDER BY); elsewhere one is ERROR 3593.
	Window func(*ast.WindowFuncExpr) (Expr, error)
	// Alias, when set, is asked first about every unqualified column name
	// (HAVING's select-list aliases): it returns the expression the name
	// stands for, or nil, nil when the name is no alias.
	Alias func(name *ast.ColumnName) (Expr, error)
}

// compileRowIn compiles (a, b) IN ((1, 2), ...) as (a = 1 AND b = 2) OR
// ..., which is MySQL's row comparison with its NULL semantics (go-tpc's
// Delivery sends these).
func compileRowIn(row *ast.RowExpr, x *ast.PatternInExpr, c *Ctx) (Expr, error) {
	var or ast.ExprNode
	for _, item := range x.List {
		r, ok := item.(*ast.RowExpr)
		if !ok || len(r.Values) != len(row.Values) {
			return nil, errno.New(1241, "Operand should contain %d column(s)", len(row.Values))
		}
		var and ast.ExprNode
		for i, v := range row.Values {
			if _, nested := v.(*ast.RowExpr); nested {
				return nil, errno.NotSupported("nested row constructors")
			}
			var eq ast.ExprNode = &ast.BinaryOperationExpr{Op: opcode.EQ, L: v, R: r.Values[i]}
			if and != nil {
				eq = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: and, R: eq}
			}
			and = eq
		}
		if or != nil {
			and = &ast.BinaryOperationExpr{Op: opcode.LogicOr, L: or, R: and}
		}
		or = and
	}
	if x.Not {
		or = &ast.UnaryOperationExpr{Op: opcode.Not, V: or}
	}
	return Compile(or, c)
}

// StatementCounts is implemented by an Env that remembers the previous
// statement's counts: ROW_COUNT() (affected rows, -1 after a result set)
// and FOUND_ROWS(). Without it both are ERROR 1235.
type StatementCounts interface {
	RowCount() int64
	FoundRows() uint64
}

// LastInsertIDSetter is implemented by an Env where LAST_INSERT_ID(expr)
// sets the session's last insert id; without it the call only returns
// expr.
type LastInsertIDSetter interface {
	SetLastInsertID(id uint64)
}

// ParamRecorder is implemented by an Env that plans a prepared statement
// for the plan cache (package planner): Compile hands it the Constant it
// makes of each parameter marker, which the cache rebinds to each
// execution's value (Constant.Rebind) unless compilation folded it
// (Constant.Folded).
type ParamRecorder interface {
	RecordParam(order int, k *Constant)
}

// Warner is implemented by an Env that decides what a condition raised
// while evaluating does: division by zero (1365), a string read as a
// number or a date that it is not all of (1292 "Truncated incorrect
// INTEGER value", "Incorrect datetime value", ...). Warn returns nil when
// the statement goes on with the value the expression gives (the Env
// recorded a warning, or nothing: without ERROR_FOR_DIVISION_BY_ZERO
// division by zero says nothing), or the error that ends the statement
// (a strict INSERT, UPDATE or DELETE, as MySQL's strict mode makes these
// warnings errors). Without a Warner nothing is said; the stores collect
// what pushed-down expressions raise and send it back (FromPBWarn). Safe
// for concurrent use.
type Warner interface {
	Warn(code uint16, msg string) error
}

// Condition is what a builtin's function returns as its error to raise a
// warning with its result: funcExpr hands it to the Env's Warner and
// returns the result, or the Warner's error.
type Condition struct {
	Code uint16
	Msg  string
}

func (c *Condition) Error() string { return c.Msg }

// warnf is a Condition with a formatted message.
func warnf(code uint16, format string, a ...any) *Condition {
	return &Condition{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// truncatedWarning is 1292 "Truncated incorrect <what> value: '<text>'".
func truncatedWarning(what string, text []byte) *Condition {
	return warnf(errno.ErrTruncatedWrongValue, "Truncated incorrect %s value: '%s'", what, text)
}

// raise reports c through w (nil: nothing is said) and returns d, or the
// error w ends the statement with.
func raise(w Warner, d types.Datum, c *Condition) (types.Datum, error) {
	if w == nil {
		return d, nil
	}
	if err := w.Warn(c.Code, c.Msg); err != nil {
		return types.NullDatum, err
	}
	return d, nil
}

// EnvWrapper is implemented by an Env that wraps another (the planner's
// per-statement ones): the optional interfaces above are looked up
// through it.
type EnvWrapper interface {
	Unwrap() Env
}

// envAs finds the optional interface T on env or an Env it wraps.
func envAs[T any](env Env) (T, bool) {
	for env != nil {
		if t, ok := env.(T); ok {
			return t, true
		}
		w, ok := env.(EnvWrapper)
		if !ok {
			break
		}
		env = w.Unwrap()
	}
	var none T
	return none, false
}

// lastInsertIDSet compiles LAST_INSERT_ID(expr): expr as a BIGINT
// UNSIGNED, which LAST_INSERT_ID() then returns (NULL sets nothing).
func lastInsertIDSet(env Env, args []Expr) Expr {
	set, _ := envAs[LastInsertIDSetter](env)
	return &funcExpr{name: "last_insert_id", args: args, ft: types.Uint64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		id := uint64(intOf(a[0]))
		if set != nil {
			set.SetLastInsertID(id)
		}
		return types.NewUint(id), nil
	}}
}

// SubqueryCompiler is implemented by an Env that plans subqueries (the
// planner's); without one, subqueries are ERROR 1235. n is a
// SubqueryExpr, ExistsSubqueryExpr, CompareSubqueryExpr or a
// PatternInExpr with a subquery; c compiles its left operand.
type SubqueryCompiler interface {
	CompileSubquery(n ast.ExprNode, c *Ctx) (Expr, error)
}

// OuterResolver is implemented by an Env planning a subquery: a column
// name that is none of Columns resolves in the enclosing query (a
// correlated reference). It returns nil, nil when no enclosing query has
// the column.
type OuterResolver interface {
	ResolveOuter(n *ast.ColumnName) (Expr, error)
}

// Compile turns n into an Expr.
func Compile(n ast.ExprNode, c *Ctx) (Expr, error) {
	switch x := n.(type) {
	case *driver.ParamMarkerExpr:
		d, ok := c.Env.Param(x.Order)
		if !ok {
			return nil, errno.New(1210, "Incorrect arguments to EXECUTE: parameter %d is not bound", x.Order+1)
		}
		k := &Constant{Value: d, Ft: ParamType(d)}
		if r, ok := envAs[ParamRecorder](c.Env); ok {
			r.RecordParam(x.Order, k)
		}
		return k, nil
	case *driver.ValueExpr:
		return constantFromValue(x)
	case *ast.ParenthesesExpr:
		return Compile(x.Expr, c)
	case *ast.ColumnNameExpr:
		if c.Alias != nil && x.Name.Table.L == "" {
			if e, err := c.Alias(x.Name); e != nil || err != nil {
				return e, err
			}
		}
		return c.resolve(x.Name)
	case *ast.BinaryOperationExpr:
		l, r, err := compilePair(x.L, x.R, c)
		if err != nil {
			return nil, err
		}
		loc := TimestampZone(c.Env)
		switch x.Op {
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE, opcode.NullEQ:
			l, r = timestampOperands(l, r, loc)
			return newCompare(x.Op, l, r)
		case opcode.LogicAnd, opcode.LogicOr, opcode.LogicXor:
			return &logicExpr{op: x.Op, l: l, r: r}, nil
		}
		l, r = localTimestamp(l, loc), localTimestamp(r, loc) // as numbers
		switch x.Op {
		case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Div, opcode.IntDiv, opcode.Mod:
			e := compileArith(x.Op, l, r)
			if ae, ok := e.(*arithExpr); ok {
				ae.warn, _ = envAs[Warner](c.Env)
			}
			return e, nil
		case opcode.And, opcode.Or, opcode.Xor, opcode.LeftShift, opcode.RightShift:
			return &bitExpr{op: x.Op, l: l, r: r}, nil // bitops.go
		}
		return nil, errno.NotSupported("operator " + x.Op.String())
	case *ast.UnaryOperationExpr:
		e, err := Compile(x.V, c)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case opcode.Not, opcode.Not2:
			return &notExpr{e: e}, nil
		}
		e = localTimestamp(e, TimestampZone(c.Env))
		switch x.Op {
		case opcode.Minus:
			return &negExpr{e: e}, nil
		case opcode.Plus:
			return e, nil
		case opcode.BitNeg:
			return &bitExpr{op: x.Op, l: e}, nil
		}
		return nil, errno.NotSupported("operator " + x.Op.String())
	case *ast.IsNullExpr:
		e, err := Compile(x.Expr, c)
		if err != nil {
			return nil, err
		}
		return &isNullExpr{e: e, not: x.Not}, nil
	case *ast.IsTruthExpr:
		e, err := Compile(x.Expr, c)
		if err != nil {
			return nil, err
		}
		return &isTruthExpr{e: e, not: x.Not, truth: x.True > 0}, nil
	case *ast.PatternInExpr:
		if x.Sel != nil {
			if sc, ok := c.Env.(SubqueryCompiler); ok {
				return sc.CompileSubquery(x, c)
			}
			return nil, errno.NotSupported("subqueries")
		}
		if row, ok := x.Expr.(*ast.RowExpr); ok {
			return compileRowIn(row, x, c)
		}
		e, err := Compile(x.Expr, c)
		if err != nil {
			return nil, err
		}
		items := make([]Expr, len(x.List))
		for i, item := range x.List {
			if items[i], err = Compile(item, c); err != nil {
				return nil, err
			}
		}
		e, items = timestampList(e, items, TimestampZone(c.Env))
		in := &inExpr{e: e, not: x.Not, byBytes: stringish(e.Type()), dur: e.Type().Tp == mysql.TypeDuration}
		for _, ie := range items {
			if types.IsDateOrDatetime(e.Type()) {
				_, ie = temporalConstant(opcode.EQ, e.Type(), ie)
			}
			if isJSON(e.Type()) {
				_, ie = jsonOperands(e, ie)
			}
			in.byBytes = in.byBytes && stringish(ie.Type())
			in.dur = in.dur && durationOperands(e.Type(), ie.Type())
			in.list = append(in.list, ie)
		}
		in.mixed = mixedTimeList(e, in.list)
		if in.byBytes {
			if in.coll, err = listCollation("in", e, in.list); err != nil {
				return nil, err
			}
		}
		return in, nil
	case *ast.BetweenExpr:
		e, err := Compile(x.Expr, c)
		if err != nil {
			return nil, err
		}
		lo, err := Compile(x.Left, c)
		if err != nil {
			return nil, err
		}
		hi, err := Compile(x.Right, c)
		if err != nil {
			return nil, err
		}
		loc := TimestampZone(c.Env)
		if loc != nil {
			var lohi []Expr
			e, lohi = timestampList(e, []Expr{lo, hi}, loc)
			lo, hi = lohi[0], lohi[1]
		}
		ge, err := newCompare(opcode.GE, e, lo)
		if err != nil {
			return nil, err
		}
		le, err := newCompare(opcode.LE, e, hi)
		if err != nil {
			return nil, err
		}
		var res Expr = &logicExpr{op: opcode.LogicAnd, l: ge, r: le}
		if x.Not {
			res = &notExpr{e: res}
		}
		return res, nil
	case *ast.PatternLikeOrIlikeExpr:
		if !x.IsLike {
			return nil, errno.NotSupported("ILIKE")
		}
		e, p, err := compilePair(x.Expr, x.Pattern, c)
		if err != nil {
			return nil, err
		}
		loc := TimestampZone(c.Env)
		e, p = localTimestamp(e, loc), localTimestamp(p, loc)
		coll, err := compareCollation("like", e, p)
		if err != nil {
			return nil, err
		}
		return &likeExpr{e: e, pat: p, escape: x.Escape, not: x.Not, coll: coll}, nil
	case *ast.PatternRegexpExpr:
		return c.compileRegexpOp(x)
	case *ast.VariableExpr:
		if x.Value != nil {
			return nil, errno.NotSupported("assignment in expressions")
		}
		if !x.IsSystem {
			return &Constant{Value: c.Env.UserVar(strings.ToLower(x.Name)), Ft: types.VarcharType}, nil
		}
		d, ft, err := c.Env.SysVar(strings.ToLower(x.Name), x.IsGlobal)
		if err != nil {
			return nil, err
		}
		return &Constant{Value: d, Ft: ft}, nil
	case *ast.CaseExpr:
		return c.compileCase(x)
	case *ast.FuncCallExpr:
		return deriveCollation(c.compileFunc(x))
	case *ast.SetCollationExpr:
		return compileCollate(x, c)
	case *ast.FuncCastExpr:
		e, err := Compile(x.Expr, c)
		if err != nil {
			return nil, err
		}
		return c.warnsThrough(compileCast(localTimestamp(e, TimestampZone(c.Env)), x))
	case *ast.AggregateFuncExpr:
		if c.Agg == nil {
			return nil, errno.New(1111, "Invalid use of group function")
		}
		return c.Agg(x)
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		if sc, ok := c.Env.(SubqueryCompiler); ok {
			return sc.CompileSubquery(x, c)
		}
		return nil, errno.NotSupported("subqueries")
	case *ast.DefaultExpr:
		return c.compileDefault(x)
	case *ast.RowExpr:
		return nil, errno.NotSupported("row constructors")
	case *ast.WindowFuncExpr:
		if c.Window == nil {
			return nil, errno.New(3593, "You cannot use the window function '%s' in this context.'", strings.ToLower(x.Name))
		}
		return c.Window(x)
	}
	return nil, errno.NotSupported("expression " + strings.TrimPrefix(typeName(n), "*ast."))
}

// compilePair compiles the two operands of a binary operator, l first.
func compilePair(l, r ast.ExprNode, c *Ctx) (Expr, Expr, error) {
	le, err := Compile(l, c)
	if err != nil {
		return nil, nil, err
	}
	re, err := Compile(r, c)
	return le, re, err
}

func typeName(n ast.Node) string {
	s := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(fmtT(n), "*"), "ast."), "test_driver.")
	return s
}

func constantFromValue(v *driver.ValueExpr) (Expr, error) {
	d := &v.Datum
	switch d.Kind() {
	case driver.KindNull:
		return &Constant{Value: types.NullDatum, Ft: types.NullType}, nil
	case driver.KindInt64:
		if v.Type.GetFlag()&mysql.IsBooleanFlag != 0 { // TRUE, FALSE: booleans in JSON
			return &Constant{Value: types.NewInt(d.GetInt64()), Ft: boolT}, nil
		}
		return &Constant{Value: types.NewInt(d.GetInt64()), Ft: types.Int64Type}, nil
	case driver.KindUint64:
		return &Constant{Value: types.NewUint(d.GetUint64()), Ft: types.Uint64Type}, nil
	case driver.KindFloat32, driver.KindFloat64:
		return &Constant{Value: types.NewFloat(d.GetFloat64()), Ft: types.DoubleType}, nil
	case driver.KindString, driver.KindBytes:
		s := d.GetString()
		ft := types.VarcharType
		ft.Flen = len(s)
		return &Constant{Value: types.NewString(s), Ft: ft}, nil
	case driver.KindMysqlDecimal:
		s := d.GetMysqlDecimal().String()
		scale := 0
		if i := strings.IndexByte(s, '.'); i >= 0 {
			scale = len(s) - i - 1
		}
		return &Constant{Value: types.NewString(s), Ft: types.DecimalType(len(s), scale)}, nil
	case driver.KindBinaryLiteral, driver.KindMysqlBit:
		b := []byte(d.GetBinaryLiteral())
		ft := types.VarcharType
		ft.Flag |= mysql.BinaryFlag
		ft.Flen = len(b)
		return &Constant{Value: types.NewBytes(b), Ft: ft}, nil
	}
	return nil, errno.NotSupported("literal of this kind")
}

func (c *Ctx) resolve(n *ast.ColumnName) (Expr, error) {
	tbl := n.Table.L
	found := -1
	for i, sc := range c.Columns {
		if !strings.EqualFold(sc.Name, n.Name.O) || (tbl != "" && sc.Table != tbl) || (tbl == "" && sc.Redundant) {
			continue
		}
		if found >= 0 {
			return nil, errno.New(errno.ErrNonUniq, "Column '%s' in %s is ambiguous", n.Name.O, c.clause())
		}
		found = i
	}
	if found < 0 {
		if or, ok := c.Env.(OuterResolver); ok {
			e, err := or.ResolveOuter(n)
			if e != nil || err != nil {
				return e, err
			}
		}
		name := n.Name.O
		if n.Table.O != "" {
			name = n.Table.O + "." + name
		}
		return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in '%s'", name, c.clause())
	}
	sc := c.Columns[found]
	return &Column{Offset: found, Ft: sc.Type, Name: sc.Name}, nil
}

// compileDefault compiles DEFAULT(col): the column's default value, the
// statement's time for DEFAULT CURRENT_TIMESTAMP, ERROR 1364 when a NOT
// NULL column has none, as MySQL. A bare DEFAULT is INSERT's and UPDATE's
// (they handle it before compiling).
func (c *Ctx) compileDefault(x *ast.DefaultExpr) (Expr, error) {
	if x.Name == nil {
		return nil, errno.NotSupported("DEFAULT outside INSERT VALUES and UPDATE SET")
	}
	e, err := c.resolve(x.Name)
	if err != nil {
		return nil, err
	}
	col, ok := e.(*Column)
	if !ok || col.Offset >= len(c.Columns) || c.Columns[col.Offset].Default == nil {
		return nil, errno.NotSupported("DEFAULT() of a column of no table")
	}
	sc := c.Columns[col.Offset]
	ft := sc.Type
	ft.Flag &^= mysql.PriKeyFlag | mysql.UniqueKeyFlag | mysql.MultipleKeyFlag | mysql.AutoIncrementFlag
	switch d := sc.Default; {
	case d.None:
		return &funcExpr{name: "default", ft: ft, fn: func([]types.Datum) (types.Datum, error) {
			return types.NullDatum, errno.New(errno.ErrNoDefaultForField, "Field '%s' doesn't have a default value", sc.Name)
		}}, nil
	case d.Now:
		return &Constant{Value: types.NewString(types.FormatTime(ColumnNow(c.Env, sc.Type), sc.Type.Tp, sc.Type.Decimal)), Ft: ft}, nil
	default:
		return &Constant{Value: d.Value, Ft: ft}, nil
	}
}

func (c *Ctx) clause() string {
	if c.Clause == "" {
		return "field list"
	}
	return c.Clause
}

func (c *Ctx) compileCase(x *ast.CaseExpr) (Expr, error) {
	ce := &caseExpr{}
	var err error
	if x.Value != nil {
		if ce.value, err = Compile(x.Value, c); err != nil {
			return nil, err
		}
		ce.byBytes = stringish(ce.value.Type())
	}
	var resTypes []types.FieldType
	for _, w := range x.WhenClauses {
		we, err := Compile(w.Expr, c)
		if err != nil {
			return nil, err
		}
		te, err := Compile(w.Result, c)
		if err != nil {
			return nil, err
		}
		if ce.value != nil {
			ce.byBytes = ce.byBytes && stringish(we.Type())
		}
		ce.whens, ce.thens = append(ce.whens, we), append(ce.thens, te)
		resTypes = append(resTypes, te.Type())
	}
	if x.ElseClause != nil {
		if ce.els, err = Compile(x.ElseClause, c); err != nil {
			return nil, err
		}
		resTypes = append(resTypes, ce.els.Type())
	}
	if loc := TimestampZone(c.Env); loc != nil {
		if ce.value != nil {
			ce.value, ce.whens = timestampList(ce.value, ce.whens, loc)
			ce.byBytes = stringish(ce.value.Type())
			for _, w := range ce.whens {
				ce.byBytes = ce.byBytes && stringish(w.Type())
			}
		}
		ce.thens, ce.els = localResults(ce.thens, ce.els, loc)
		resTypes = resTypes[:0]
		for _, t := range ce.thens {
			resTypes = append(resTypes, t.Type())
		}
		if ce.els != nil {
			resTypes = append(resTypes, ce.els.Type())
		}
	}
	ce.ft = unify(resTypes)
	ce.conv = convertsTo(ce.ft, resTypes)
	if ce.value != nil {
		ce.mixed = mixedTimeList(ce.value, ce.whens)
		if ce.byBytes {
			if ce.coll, err = listCollation("case", ce.value, ce.whens); err != nil {
				return nil, err
			}
		}
	}
	return ce, nil
}

// newCompare compiles `l op r`: strings (and temporals) compare bytewise
// (a DATE with a DATETIME, or DATETIMEs of different precisions, after
// widening both to one length),
// a TIME with a TIME or a string as durations, anything else as numbers.
// A string constant compared with a DATE, DATETIME or TIMESTAMP is first
// converted to that type's canonical text (temporalConstant).
func newCompare(op opcode.Op, l, r Expr) (*compareExpr, error) {
	if t := l.Type(); types.IsDateOrDatetime(t) {
		op, r = temporalConstant(op, t, r)
	} else if t := r.Type(); types.IsDateOrDatetime(t) {
		var fop opcode.Op
		fop, l = temporalConstant(FlipCompare(op), t, l)
		op = FlipCompare(fop)
	}
	l, r = jsonOperands(l, r)
	lt, rt := l.Type(), r.Type()
	ce := &compareExpr{op: op, l: l, r: r, byBytes: stringish(lt) && stringish(rt), dur: durationOperands(lt, rt), mixedTime: mixedTimeOperands(lt, rt)}
	if ce.byBytes {
		var err error
		var name strings.Builder
		op.Format(&name)
		if ce.coll, err = compareCollation(name.String(), l, r); err != nil {
			return nil, err
		}
	}
	return ce, nil
}

// mixedTimeList returns, for each of list compared with e for equality
// (IN, simple CASE), whether the pair is mixedTimeOperands; nil if none is.
func mixedTimeList(e Expr, list []Expr) []bool {
	t := e.Type()
	if !types.IsDateOrDatetime(t) {
		return nil
	}
	var out []bool
	for i, x := range list {
		if mixedTimeOperands(t, x.Type()) {
			if out == nil {
				out = make([]bool, len(list))
			}
			out[i] = true
		}
	}
	return out
}

// mixedTimeOperands reports whether a and b are DATE, DATETIME or
// TIMESTAMP types whose texts differ in shape: a date and a datetime, or
// datetimes with different fractional digits (widenTime).
func mixedTimeOperands(a, b types.FieldType) bool {
	if !types.IsDateOrDatetime(a) || !types.IsDateOrDatetime(b) {
		return false
	}
	ad, bd := types.IsDate(a.Tp), types.IsDate(b.Tp)
	if ad || bd {
		return ad != bd
	}
	return max(a.Decimal, 0) != max(b.Decimal, 0)
}

// temporalConstant makes `x op e`, x of type t (DATE, DATETIME or
// TIMESTAMP) and e a string constant, compare times as MySQL does rather
// than text (TemporalCompare). Where no value of t can equal e, e is kept:
// it equals no canonical text. Anything else, and a string that is no
// date, is returned unchanged.
func temporalConstant(op opcode.Op, t types.FieldType, e Expr) (opcode.Op, Expr) {
	c, ok := e.(*Constant)
	if !ok || c.Value.Kind() != types.KindBytes || c.Ft.Tp == mysql.TypeDuration {
		return op, e
	}
	if cl := c.Ft.Class(); cl != types.ClassString && cl != types.ClassTime {
		return op, e
	}
	c.fold() // the comparison depends on the string's date, even when kept
	op2, canon, none, ok := TemporalCompare(op, t, string(c.Value.Bytes()))
	if !ok || none {
		return op, e
	}
	return op2, &Constant{Value: types.NewString(canon), Ft: t}
}

// TemporalCompare rewrites `x op s`, x of type t (DATE, DATETIME or
// TIMESTAMP) and s a string, as `x op2 canon` with canon t's canonical
// text (types.TemporalConstant), so a bytewise comparison compares times.
// When s lies between two values of t, `<` and `<=` become `<= canon`, `>`
// and `>=` become `> canon`, and none reports that `=`, `<=>` and `<>`
// find no value of t equal to s. ok is false when s is no date.
func TemporalCompare(op opcode.Op, t types.FieldType, s string) (op2 opcode.Op, canon string, none, ok bool) {
	canon, exact, ok := types.TemporalConstant(t, s)
	switch {
	case !ok || exact:
		return op, canon, false, ok
	case op == opcode.LT || op == opcode.LE:
		return opcode.LE, canon, false, true
	case op == opcode.GT || op == opcode.GE:
		return opcode.GT, canon, false, true
	}
	return op, canon, true, true
}

// FlipCompare is the operator of `r op l` for `l op r`.
func FlipCompare(op opcode.Op) opcode.Op {
	switch op {
	case opcode.LT:
		return opcode.GT
	case opcode.LE:
		return opcode.GE
	case opcode.GT:
		return opcode.LT
	case opcode.GE:
		return opcode.LE
	}
	return op
}

// durationOperands: one side is a TIME and the other a TIME or a string.
func durationOperands(lt, rt types.FieldType) bool {
	return (lt.Tp == mysql.TypeDuration && (rt.Tp == mysql.TypeDuration || rt.Class() == types.ClassString)) ||
		(rt.Tp == mysql.TypeDuration && lt.Class() == types.ClassString)
}

// UnifyTypes is the result type of values of several types (CASE, COALESCE,
// UNION columns): one class keeps it (widest length), numbers of several
// classes give DOUBLE, anything else VARCHAR.
func UnifyTypes(ts []types.FieldType) types.FieldType { return unify(ts) }

func exactNumber(t types.FieldType) bool {
	c := t.Class()
	return c == types.ClassInt || c == types.ClassDecimal
}

func decimalScale(t types.FieldType) int {
	if t.Class() == types.ClassDecimal {
		return max(t.Decimal, 0)
	}
	return 0
}

func intDigits(t types.FieldType) int {
	return max(t.Flen-decimalScale(t), 1)
}

// convertsTo reports whether values of ts need converting to the unified
// type u (an INT among DECIMALs becomes a DECIMAL of u's scale).
func convertsTo(u types.FieldType, ts []types.FieldType) bool {
	if u.Class() != types.ClassDecimal {
		return false
	}
	for _, t := range ts {
		if t.Class() == types.ClassInt || (t.Class() == types.ClassDecimal && t.Decimal != u.Decimal) {
			return true
		}
	}
	return false
}

// unify picks a result type for values of several types.
func unify(ts []types.FieldType) types.FieldType {
	var res *types.FieldType
	for i := range ts {
		t := ts[i]
		if t.Class() == types.ClassNull {
			continue
		}
		if res == nil {
			res = &t
			continue
		}
		if res.Class() == t.Class() {
			if res.Tp == mysql.TypeTimestamp && t.Tp != mysql.TypeTimestamp || res.Tp != mysql.TypeTimestamp && t.Tp == mysql.TypeTimestamp {
				// A TIMESTAMP with a DATE or DATETIME is a DATETIME, as
				// MySQL types it (its values are the wall clocks: the
				// TIMESTAMPs are read in the session zone).
				d := datetimeType(max(res.Decimal, t.Decimal, 0))
				res = &d
				continue
			}
			if t.Flen > res.Flen {
				res.Flen = t.Flen
			}
			continue
		}
		if exactNumber(*res) && exactNumber(t) { // INT and DECIMAL: DECIMAL
			scale := max(decimalScale(*res), decimalScale(t))
			ints := max(intDigits(*res), intDigits(t))
			d := types.DecimalType(min(ints+scale, 65), scale)
			res = &d
			continue
		}
		if res.Numeric() && t.Numeric() {
			d := types.DoubleType
			res = &d
			continue
		}
		v := types.VarcharType
		res = &v
	}
	if res == nil {
		return types.NullType
	}
	return *res
}

func (c *Ctx) compileFunc(x *ast.FuncCallExpr) (Expr, error) {
	name := x.FnName.L
	str := func(s string) (Expr, error) {
		ft := types.VarcharType
		ft.Flen = max(len(s), 1)
		return &Constant{Value: types.NewString(s), Ft: ft}, nil
	}
	if b, ok := lookupBuiltin(name); ok {
		return c.compileBuiltin(x, b)
	}
	args := make([]Expr, 0, len(x.Args))
	for _, a := range x.Args {
		e, err := Compile(a, c)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	localTimestamps(args, TimestampZone(c.Env))
	nargs := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			return errParamCount(x.FnName.O)
		}
		return nil
	}
	switch name {
	case "collation", "charset", "coercibility":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		coll := collate.Of(args[0].Type().Collation())
		switch {
		case name == "coercibility":
			return &Constant{Value: types.NewInt(int64(Coercibility(args[0]))), Ft: types.Int64Type}, nil
		case name == "collation":
			return str(coll.Name)
		}
		return str(coll.Charset)
	case "database", "schema":
		if db := c.Env.CurrentDB(); db != "" {
			return str(db)
		}
		return &Constant{Value: types.NullDatum, Ft: types.VarcharType}, nil
	case "version":
		d, _, err := c.Env.SysVar("version", false)
		if err != nil {
			return nil, err
		}
		return str(d.String())
	case "current_user":
		if cu, ok := c.Env.(interface{ CurrentUser() string }); ok {
			return str(cu.CurrentUser()) // the account the login matched
		}
		return str(c.Env.User())
	case "user", "session_user", "system_user":
		return str(c.Env.User())
	case "connection_id":
		return &Constant{Value: types.NewUint(c.Env.ConnectionID()), Ft: types.Uint64Type}, nil
	case "last_insert_id":
		if err := nargs(0, 1); err != nil {
			return nil, err
		}
		if len(args) == 0 {
			return &Constant{Value: types.NewUint(c.Env.LastInsertID()), Ft: types.Uint64Type}, nil
		}
		return lastInsertIDSet(c.Env, args), nil
	case "row_count", "found_rows":
		if err := nargs(0, 0); err != nil {
			return nil, err
		}
		sc, ok := envAs[StatementCounts](c.Env)
		if !ok {
			break
		}
		if name == "row_count" {
			return &Constant{Value: types.NewInt(sc.RowCount()), Ft: types.Int64Type}, nil
		}
		return &Constant{Value: types.NewInt(int64(sc.FoundRows())), Ft: types.Int64Type}, nil
	case "now", "current_timestamp", "sysdate", "localtime", "localtimestamp", "utc_timestamp",
		"curtime", "current_time", "utc_time":
		// The statement's time (Env.Now) in the session time zone, UTC for
		// the UTC_ ones; an fsp argument from 0 to 6 keeps that many digits.
		if err := nargs(0, 1); err != nil {
			return nil, err
		}
		t := sessionNow(c.Env)
		if strings.HasPrefix(name, "utc_") {
			t = t.UTC()
		}
		fsp := 0
		if len(args) == 1 {
			k, ok := args[0].(*Constant)
			if !ok || k.fold().Value.Kind() != types.KindInt64 {
				return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", x.FnName.O)
			}
			if n := k.Value.Int64(); n < 0 || n > 6 {
				return nil, errno.New(errno.ErrTooBigPrecision, "Too-big precision %d specified for '%s'. Maximum is 6.", n, name)
			}
			fsp = int(k.Value.Int64())
		}
		switch name {
		case "curtime", "current_time", "utc_time":
			return &Constant{Value: types.NewString(types.FormatTime(t, mysql.TypeDuration, fsp)), Ft: durationType(fsp)}, nil
		}
		return &Constant{Value: types.NewString(types.FormatTime(t, mysql.TypeDatetime, fsp)), Ft: datetimeType(fsp)}, nil
	case ast.DateLiteral, ast.TimestampLiteral, ast.TimeLiteral:
		// DATE 'str', TIMESTAMP 'str' and TIME 'str' (the parser's names for
		// them): typed constants, the TIMESTAMP one a DATETIME with as many
		// fractional digits as str has; a str that is none is ERROR 1525, a
		// zero date or zero month or day that sql_mode refuses 1292.
		return temporalLiteral(name, args, c.Env)
	case "curdate", "current_date", "utc_date":
		if err := nargs(0, 0); err != nil {
			return nil, err
		}
		t := sessionNow(c.Env)
		if name == "utc_date" {
			t = t.UTC()
		}
		return &Constant{Value: types.NewString(types.FormatTime(t, mysql.TypeDate, 0)), Ft: dateType}, nil
	case "concat":
		if err := nargs(1, 1<<16); err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: args, ft: types.VarcharType, fn: concatFn}, nil
	case "lower", "lcase", "upper", "ucase":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: args, ft: types.VarcharType, fn: lowerUpper(name == "upper" || name == "ucase")}, nil
	case "length", "octet_length", "char_length", "character_length":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		chars := name == "char_length" || name == "character_length"
		return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			s := types.AppendText(nil, a[0], nil)
			if chars {
				return types.NewInt(int64(len([]rune(string(s))))), nil
			}
			return types.NewInt(int64(len(s))), nil
		}}, nil
	case "hex":
		// HEX(number) is the integer in hex; HEX(string) its bytes.
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		numeric := args[0].Type().Numeric()
		return &funcExpr{name: name, args: args, ft: types.VarcharType, fn: func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			if numeric || a[0].Kind() != types.KindBytes {
				return types.NewString(strings.ToUpper(strconv.FormatUint(toUint64(a[0]), 16))), nil
			}
			return types.NewString(strings.ToUpper(hex.EncodeToString(a[0].Bytes()))), nil
		}}, nil
	case "sleep":
		// SLEEP(n) blocks the statement for n seconds and returns 0. KILL
		// QUERY (or its client going away) ends the sleep early, and then
		// it returns 1, as MySQL's does; the statement stops at its next
		// wait for the cluster.
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		env := c.Env
		return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			f, _ := types.ToFloat(a[0])
			if f <= 0 {
				return types.NewInt(0), nil
			}
			var done <-chan struct{} // nil: never
			if env != nil {
				done = env.StatementDone()
			}
			t := time.NewTimer(time.Duration(min(f, 1<<31) * float64(time.Second)))
			defer t.Stop()
			select {
			case <-t.C:
				return types.NewInt(0), nil
			case <-done:
				return types.NewInt(1), nil
			}
		}}, nil
	case "abs":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		isDec := args[0].Type().Class() == types.ClassDecimal // ABS(-5.00) is 5.00
		return &funcExpr{name: name, args: args, ft: args[0].Type(), fn: func(a []types.Datum) (types.Datum, error) {
			switch a[0].Kind() {
			case types.KindInt64:
				if v := a[0].Int64(); v < 0 {
					return types.NewInt(-v), nil
				}
				return a[0], nil
			case types.KindUint64, types.KindNull:
				return a[0], nil
			}
			if isDec {
				if v, ok := types.ToDecimal(a[0]); ok {
					if v.Sign() < 0 {
						return v.Neg().Datum(), nil
					}
					return a[0], nil
				}
			}
			f, _ := types.ToFloat(a[0])
			if f < 0 {
				f = -f
			}
			return types.NewFloat(f), nil
		}}, nil
	case "pow", "power":
		// POW(x, y) is a DOUBLE; NULL with a NULL argument, 1690 when the
		// result does not fit (go-tpc's check squares differences so).
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: args, ft: types.DoubleType, fn: func(a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() || a[1].IsNull() {
				return types.NullDatum, nil
			}
			x, _ := types.ToFloat(a[0])
			y, _ := types.ToFloat(a[1])
			v := math.Pow(x, y)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return types.NullDatum, &RangeError{Msg: fmt.Sprintf("DOUBLE value is out of range in 'pow(%s,%s)'", a[0].String(), a[1].String())}
			}
			return types.NewFloat(v), nil
		}}, nil
	case "any_value": // its argument: ONLY_FULL_GROUP_BY accepts it (planner)
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		return args[0], nil
	case "coalesce", "ifnull":
		if err := nargs(1, 1<<16); err != nil {
			return nil, err
		}
		ts := make([]types.FieldType, len(args))
		for i, a := range args {
			ts[i] = a.Type()
		}
		ft := unify(ts)
		conv := convertsTo(ft, ts)
		return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
			for _, v := range a {
				if !v.IsNull() {
					if conv {
						return ft.Convert(v)
					}
					return v, nil
				}
			}
			return types.NullDatum, nil
		}}, nil
	case "if":
		if err := nargs(3, 3); err != nil {
			return nil, err
		}
		ts := []types.FieldType{args[1].Type(), args[2].Type()}
		ft := unify(ts)
		return &caseExpr{whens: args[:1], thens: args[1:2], els: args[2], ft: ft, conv: convertsTo(ft, ts)}, nil
	case "convert": // CONVERT(e USING charset): the parser's only CONVERT call
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		return compileConvertUsing(args[0], args[1])
	case "nullif":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		bb := stringish(args[0].Type()) && stringish(args[1].Type())
		return &funcExpr{name: name, args: args, ft: args[0].Type(), fn: func(a []types.Datum) (types.Datum, error) {
			if !a[0].IsNull() && !a[1].IsNull() && Compare(a[0], a[1], bb) == 0 {
				return types.NullDatum, nil
			}
			return a[0], nil
		}}, nil
	}
	return nil, errno.NotSupported("function " + x.FnName.O)
}

// compileArith types an arithmetic operator as MySQL does: integers stay
// integers (except '/'), integers and decimals give an exact DECIMAL with
// MySQL's result scale, anything else (FLOAT/DOUBLE, strings) a DOUBLE.
func compileArith(op opcode.Op, l, r Expr) Expr {
	lc, rc := l.Type().Class(), r.Type().Class()
	exact := (lc == types.ClassInt || lc == types.ClassDecimal) && (rc == types.ClassInt || rc == types.ClassDecimal)
	bothInt := lc == types.ClassInt && rc == types.ClassInt
	e := &arithExpr{op: op, l: l, r: r, ft: types.DoubleType}
	switch {
	case op == opcode.IntDiv:
		e.ft, e.dec = types.Int64Type, exact && !bothInt
	case bothInt && op != opcode.Div:
		e.ft = types.Int64Type
	case exact:
		e.dec = true
		e.ft = types.DecimalArithType(arithOpByte[op], l.Type(), r.Type())
	}
	return e
}

var arithOpByte = map[opcode.Op]byte{opcode.Plus: '+', opcode.Minus: '-', opcode.Mul: '*', opcode.Div: '/', opcode.Mod: '%'}

func compileCast(e Expr, x *ast.FuncCastExpr) (Expr, error) {
	pt := x.Tp
	var ft types.FieldType
	switch pt.GetType() {
	case mysql.TypeLonglong:
		ft = types.Int64Type
		if pt.GetFlag()&mysql.UnsignedFlag != 0 {
			ft = types.Uint64Type
		}
	case mysql.TypeVarString, mysql.TypeString, mysql.TypeVarchar:
		ft = types.VarcharType
		ft.Flen = -1
		if pt.GetCharset() == "binary" {
			ft.Flag |= mysql.BinaryFlag // CAST(x AS BINARY), BINARY x: the binary collation
		}
	case mysql.TypeJSON:
		return castToJSON(e), nil
	case mysql.TypeNewDecimal, mysql.TypeDate, mysql.TypeDatetime, mysql.TypeDouble, mysql.TypeFloat, mysql.TypeDuration:
		var err error
		if ft, err = types.FromAST(pt); err != nil {
			return nil, errno.NotSupported("CAST to " + err.Error())
		}
	default:
		return nil, errno.NotSupported("CAST to this type")
	}
	return &funcExpr{name: "cast", args: []Expr{e}, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		return castValue(a[0], ft)
	}}, nil
}

// compileConvertUsing compiles CONVERT(e USING cs): e's text in
// character set cs under its default collation (implicit coercibility,
// as a CAST's). Strata keeps every string as UTF-8, so the conversion
// replaces what cs cannot hold with '?', as MySQL does: a character past
// U+00FF for latin1, past U+007F for ascii, past the BMP for utf8
// (utf8mb3). USING binary gives the bytes as a binary string.
func compileConvertUsing(e, cs Expr) (Expr, error) {
	k, ok := cs.(*Constant)
	if !ok || k.Value.Kind() != types.KindBytes {
		return nil, errno.New(errno.ErrParse, "CONVERT ... USING needs a character set name")
	}
	name := string(k.Value.Bytes())
	set := collate.CharsetByName(name)
	if set == nil {
		return nil, errno.New(1115, "Unknown character set: '%s'", name)
	}
	ft := types.VarcharType
	ft.Flen = -1
	limit := rune(-1) // the largest character cs holds (-1: any)
	switch set.Name {
	case "binary":
		ft.Flag |= mysql.BinaryFlag
	case "latin1":
		limit = 0xFF
	case "ascii":
		limit = 0x7F
	case "utf8":
		limit = 0xFFFF
	}
	if set.Name != "binary" && set.Default.ID != types.CollationUTF8MB4 {
		ft.Coll = set.Default.ID
	}
	return &funcExpr{name: "convert", args: []Expr{e}, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return a[0], nil
		}
		b := types.AppendText(nil, a[0], nil)
		if limit < 0 {
			return types.NewBytes(b), nil
		}
		out := make([]byte, 0, len(b))
		for _, r := range string(b) {
			if r > limit {
				r = '?'
			}
			out = utf8.AppendRune(out, r)
		}
		return types.NewBytes(out), nil
	}}, nil
}

// castValue is CAST(d AS ft) for a cast's static type ft. A string that
// is not all number gives its numeric prefix with warning 1292
// ("Truncated incorrect INTEGER / DECIMAL / DOUBLE value"), one that is
// no date or time NULL with warning 1292, as MySQL.
func castValue(d types.Datum, ft types.FieldType) (types.Datum, error) {
	if d.IsNull() {
		return d, nil
	}
	if d.Kind() == types.KindJSON && ft.Class() != types.ClassString {
		d = types.JSONToDatum(d.JSON()) // numbers as numbers, strings unquoted
	}
	var cond *Condition
	if d.Kind() == types.KindBytes {
		switch ft.Class() {
		case types.ClassInt:
			mag, neg, whole := types.IntPrefix(d.Bytes())
			if !whole {
				// CAST('12abc' AS SIGNED) is 12; beyond 64 bits it wraps
				// as MySQL's does.
				if neg {
					mag = -mag
				}
				v := types.NewUint(mag)
				if !ft.Unsigned() {
					v = types.NewInt(int64(mag))
				}
				return v, truncatedWarning("INTEGER", d.Bytes())
			}
		case types.ClassDecimal:
			num, whole := types.NumericPrefix(d.Bytes())
			if !whole || len(num) == 0 {
				cond = truncatedWarning("DECIMAL", d.Bytes())
			}
			if _, ok := types.ParseDecimal(num); ok {
				d = types.NewBytes(num)
			} else {
				f, _ := types.ToFloat(d) // an exponent, or no number: 0
				d = types.NewFloat(f)
			}
		case types.ClassFloat:
			if _, whole := types.NumericPrefix(d.Bytes()); !whole {
				cond = truncatedWarning("DOUBLE", d.Bytes())
			}
		}
	}
	if ft.Tp == mysql.TypeDuration {
		r, clipped, ok := types.CastDuration(d, ft.Decimal)
		switch {
		case !ok:
			return types.NullDatum, truncatedWarning("time", textOf(d))
		case clipped:
			return r, truncatedWarning("time", textOf(d))
		}
		return r, nil
	}
	r, err := ft.Convert(d)
	if err != nil {
		if ft.Class() == types.ClassTime {
			return types.NullDatum, invalidDate(d)
		}
		return types.NullDatum, nil
	}
	if cond != nil {
		return r, cond
	}
	return r, nil
}

// temporalLiteral compiles DATE 'str', TIMESTAMP 'str' or TIME 'str'.
func temporalLiteral(name string, args []Expr, env Env) (Expr, error) {
	var k *Constant
	if len(args) == 1 {
		k, _ = args[0].(*Constant)
	}
	if k == nil {
		return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax: a DATE, TIME or TIMESTAMP literal needs a string")
	}
	k.fold()
	s := strings.TrimSpace(string(k.Value.Bytes()))
	fsp := fracDigits(s)
	switch name {
	case ast.DateLiteral:
		if p, ok := types.ParseDateParts(s); ok && !strings.ContainsAny(s, ": ") {
			v := p.Format(mysql.TypeDate, 0)
			if refusesZeroParts(env, v) {
				return nil, errno.New(errno.ErrTruncatedWrongValue, "Incorrect date value: '%s'", s)
			}
			return &Constant{Value: types.NewString(v), Ft: dateType}, nil
		}
		return nil, errno.New(errno.ErrWrongValue, "Incorrect DATE value: '%s'", s)
	case ast.TimestampLiteral:
		if p, ok := types.ParseDateParts(s); ok {
			v := p.Format(mysql.TypeDatetime, fsp)
			if refusesZeroParts(env, v) {
				return nil, errno.New(errno.ErrTruncatedWrongValue, "Incorrect datetime value: '%s'", s)
			}
			return &Constant{Value: types.NewString(v), Ft: datetimeType(fsp)}, nil
		}
		return nil, errno.New(errno.ErrWrongValue, "Incorrect DATETIME value: '%s'", s)
	default:
		if d, _, ok := types.CastDuration(types.NewString(s), fsp); ok {
			return &Constant{Value: d, Ft: durationType(fsp)}, nil
		}
		return nil, errno.New(errno.ErrWrongValue, "Incorrect TIME value: '%s'", s)
	}
}

// refusesZeroParts reports whether env's sql_mode refuses date text v:
// the zero date under NO_ZERO_DATE, a zero month or day under
// NO_ZERO_IN_DATE (a literal is refused whatever the strictness, as TiDB
// does).
func refusesZeroParts(env Env, v string) bool {
	zeroDate, zeroInDate := types.ZeroParts([]byte(v))
	if !zeroDate && !zeroInDate {
		return false
	}
	mode := SQLMode(env)
	return (zeroDate && mode.HasNoZeroDateMode()) || (zeroInDate && mode.HasNoZeroInDateMode())
}

// SQLMode is env's sql_mode (a session's cached one, else its sql_mode
// variable), or MySQL 8's default when env does not say.
func SQLMode(env Env) mysql.SQLMode {
	if m, ok := env.(interface{ SQLMode() mysql.SQLMode }); ok {
		return m.SQLMode()
	}
	if env != nil {
		if v, _, err := env.SysVar("sql_mode", false); err == nil {
			if m, err := mysql.GetSQLMode(v.String()); err == nil {
				return m
			}
		}
	}
	return mysql.ModeOnlyFullGroupBy | mysql.ModeStrictTransTables | mysql.ModeNoZeroInDate | mysql.ModeNoZeroDate |
		mysql.ModeErrorForDivisionByZero | mysql.ModeNoEngineSubstitution
}

// fracDigits is the number of fractional-second digits (at most 6) of a
// date, time or datetime text.
func fracDigits(s string) int {
	if i := strings.LastIndexByte(s, '.'); i >= 0 && strings.IndexByte(s[i:], ':') < 0 && strings.IndexByte(s[i:], '-') < 0 {
		return min(len(s)-i-1, 6)
	}
	return 0
}

// ParamType is the static type of a bound parameter value.
func ParamType(d types.Datum) types.FieldType {
	switch d.Kind() {
	case types.KindInt64:
		return types.Int64Type
	case types.KindUint64:
		return types.Uint64Type
	case types.KindFloat64:
		return types.DoubleType
	case types.KindBytes:
		ft := types.VarcharType
		ft.Flen = max(len(d.Bytes()), 1)
		return ft
	}
	return types.NullType
}
