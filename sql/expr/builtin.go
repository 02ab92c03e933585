package expr

import (
	"errors"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// builtin is a scalar function compiled from a table rather than
// compileFunc's switch: the string (builtin_string.go), math
// (builtin_math.go), date/time (builtin_time.go), hash/encoding/random
// (builtin_crypto.go), regular expression (builtin_regexp.go) and JSON
// (builtin_json.go) functions.
type builtin struct {
	min, max int // argument count bounds; max < 0 is unbounded
	// build returns the compiled call; args are compiled, a unit keyword
	// (INTERVAL n DAY, EXTRACT(YEAR ...)) is a *unitArg and a TRIM
	// direction a *trimDirArg.
	build func(name string, args []Expr) (Expr, error)
}

// envBuiltins build functions that also read the session (the
// statement's time); their builtin entry only bounds the arguments.
var envBuiltins = map[string]func(env Env, name string, args []Expr) (Expr, error){
	"unix_timestamp": buildUnixTimestamp,
	"from_unixtime":  buildFromUnixtime,
}

// builtinTables are the function tables lookupBuiltin searches.
var builtinTables = []map[string]builtin{stringBuiltins, mathBuiltins, timeBuiltins, cryptoBuiltins, regexpBuiltins, jsonBuiltins}

// lookupBuiltin finds a table function by lower-case name.
func lookupBuiltin(name string) (builtin, bool) {
	for _, t := range builtinTables {
		if b, ok := t[name]; ok {
			return b, true
		}
	}
	return builtin{}, false
}

// compileBuiltin compiles a call of a table function: its arguments, the
// argument count check (ERROR 1582), then the function's build.
func (c *Ctx) compileBuiltin(x *ast.FuncCallExpr, b builtin) (Expr, error) {
	args := make([]Expr, 0, len(x.Args))
	for _, a := range x.Args {
		switch v := a.(type) {
		case *ast.TimeUnitExpr:
			args = append(args, &unitArg{unit: v.Unit})
			continue
		case *ast.TrimDirectionExpr:
			args = append(args, &trimDirArg{dir: v.Direction})
			continue
		}
		e, err := Compile(a, c)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	if len(args) < b.min || (b.max >= 0 && len(args) > b.max) {
		return nil, errParamCount(x.FnName.O)
	}
	if x.FnName.L != "unix_timestamp" { // which reads a TIMESTAMP's instant
		localTimestamps(args, TimestampZone(c.Env))
	}
	if f, ok := envBuiltins[x.FnName.L]; ok {
		return c.warnsThrough(f(c.Env, x.FnName.L, args))
	}
	e, err := b.build(x.FnName.L, args)
	var me *errno.Error
	if errors.As(err, &me) && me.Code == errno.ErrWrongParamCount {
		return nil, errParamCount(x.FnName.O) // as the query spells it
	}
	return c.warnsThrough(e, err)
}

// warnsThrough gives a compiled function call the Env's Warner, which
// the Conditions its function raises go to.
func (c *Ctx) warnsThrough(e Expr, err error) (Expr, error) {
	if f, ok := e.(*funcExpr); ok && err == nil {
		f.warn, _ = envAs[Warner](c.Env)
	}
	return e, err
}

// derivesCollation: string functions whose result has their string
// arguments' collation, as MySQL derives it (UPPER(name) = 'ANN' compares
// under name's collation).
var derivesCollation = map[string]bool{
	"concat": true, "concat_ws": true, "substr": true, "substring": true, "left": true, "right": true,
	"trim": true, "ltrim": true, "rtrim": true, "upper": true, "lower": true, "ucase": true, "lcase": true,
	"replace": true, "lpad": true, "rpad": true, "reverse": true, "repeat": true, "substring_index": true,
	"mid": true, "insert": true,
}

// deriveCollation gives a string function's result (a funcExpr) the
// first non-binary collation among its arguments.
func deriveCollation(e Expr, err error) (Expr, error) {
	f, ok := e.(*funcExpr)
	if err != nil || !ok || !derivesCollation[f.name] || f.ft.Class() != types.ClassString || f.ft.Binary() {
		return e, err
	}
	for _, a := range f.args {
		if Collation(a.Type()) != nil {
			f.ft.Coll = a.Type().Coll
			break
		}
	}
	return f, nil
}

func errParamCount(name string) error {
	return errno.New(errno.ErrWrongParamCount, "Incorrect parameter count in the call to native function '%s'", name)
}

// unitArg is a time unit keyword argument; it evaluates to the unit's name.
type unitArg struct{ unit ast.TimeUnitType }

func (u *unitArg) Eval([]types.Datum) (types.Datum, error) {
	return types.NewString(u.unit.String()), nil
}
func (u *unitArg) Type() types.FieldType { return types.VarcharType }

// trimDirArg is TRIM's BOTH / LEADING / TRAILING keyword.
type trimDirArg struct{ dir ast.TrimDirectionType }

func (t *trimDirArg) Eval([]types.Datum) (types.Datum, error) {
	return types.NewString(t.dir.String()), nil
}
func (t *trimDirArg) Type() types.FieldType { return types.VarcharType }

// textOf is d's text without copying when it already is bytes (NULL: nil).
func textOf(d types.Datum) []byte {
	if d.Kind() == types.KindBytes {
		return d.Bytes()
	}
	return types.AppendText(nil, d, nil)
}

// intOf converts a numeric argument the way MySQL does for positions and
// lengths: integers as they are, others rounded to the nearest integer.
func intOf(d types.Datum) int64 {
	switch d.Kind() {
	case types.KindInt64:
		return d.Int64()
	case types.KindUint64:
		if d.Uint64() > 1<<63-1 {
			return 1<<63 - 1
		}
		return int64(d.Uint64())
	}
	f, _ := types.ToFloat(d)
	switch {
	case f >= 9.2e18:
		return 1<<63 - 1
	case f <= -9.2e18:
		return -1 << 63
	}
	if f < 0 {
		return int64(f - 0.5)
	}
	return int64(f + 0.5)
}

// anyNull reports whether one of a is NULL.
func anyNull(a []types.Datum) bool {
	for _, d := range a {
		if d.IsNull() {
			return true
		}
	}
	return false
}

// strType is a VARCHAR result of at most n characters.
func strType(n int) types.FieldType {
	ft := types.VarcharType
	if n >= 0 {
		ft.Flen = n
	}
	return ft
}

// argFlen is the character width of a's values, or -1 when unknown.
func argFlen(a Expr) int {
	ft := a.Type()
	switch ft.Class() {
	case types.ClassString:
		return ft.Flen
	case types.ClassNull:
		return 0
	}
	switch {
	case ft.Flen > 0:
		return ft.Flen
	case ft.Class() == types.ClassInt:
		return 21
	}
	return 255
}
