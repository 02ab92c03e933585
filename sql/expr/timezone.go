package expr

import (
	"slices"
	"sync"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/types"
)

// TIMESTAMP values and the session time zone.
//
// A TIMESTAMP is stored, compared, sorted and grouped as its UTC wall
// clock (canonical text, as a DATETIME's): every TIMESTAMP-typed value
// inside the SQL node and the stores is UTC, so rows written by sessions
// in different zones mean the same instant and the stores' pushed-down
// comparisons need no zone. The session zone is applied at the edges:
//
//   - a client sees a TIMESTAMP result column in its zone (sql/server,
//     TimestampToLocal);
//   - a value written to a TIMESTAMP column from anything but a TIMESTAMP
//     is read in the session zone (the executor, TimestampToUTC);
//   - a string or temporal constant compared with a TIMESTAMP is converted
//     to UTC once, at compile time (and so in index ranges and in the
//     trees the stores evaluate);
//   - anything else that reads a TIMESTAMP as a date, a string or a number
//     (HOUR(ts), DATE_FORMAT(ts, ...), CAST, CONCAT, ts + 0, LIKE, a
//     comparison with a DATETIME column, SUM) reads it through a
//     localTimestamp node: its DATETIME in the session zone. That node is
//     a scalar function, never pushed to the stores, so the stores never
//     need the zone.
//
// In a session whose zone is UTC (SYSTEM on a UTC host included) every
// conversion is the identity and none is compiled (TimestampZone nil).

// TimestampZone is the zone env's TIMESTAMP values convert to and from,
// nil when that is UTC (no conversion).
func TimestampZone(env Env) *time.Location {
	if env == nil {
		return nil
	}
	loc := SessionZone(env)
	if isUTC(loc) {
		return nil
	}
	return loc
}

// isUTC reports whether loc is UTC at every instant (UTC, +00:00, a host
// zone that is UTC).
func isUTC(loc *time.Location) bool {
	switch loc {
	case time.UTC:
		return true
	case time.Local:
		return localIsUTC()
	}
	return alwaysUTC(loc)
}

// localIsUTC is isUTC(time.Local), computed once.
var localIsUTC = sync.OnceValue(func() bool { return alwaysUTC(time.Local) })

func alwaysUTC(loc *time.Location) bool {
	for _, t := range []time.Time{time.Unix(0, 0), time.Unix(1<<31, 0), time.Unix(1<<34, 0)} {
		if name, off := t.In(loc).Zone(); off != 0 || (name != "UTC" && name != "+00:00") {
			return false
		}
	}
	return true
}

// localTimestamp reads e as the session's DATETIME when e is a TIMESTAMP
// and loc is not nil (TimestampZone); e itself otherwise.
func localTimestamp(e Expr, loc *time.Location) Expr {
	ft := e.Type()
	if loc == nil || ft.Tp != mysql.TypeTimestamp {
		return e
	}
	fsp := min(max(ft.Decimal, 0), 6)
	return &funcExpr{name: "timestamp_local", args: []Expr{e}, ft: datetimeType(fsp), fn: func(a []types.Datum) (types.Datum, error) {
		return TimestampToLocal(a[0], loc, fsp), nil
	}}
}

// localTimestamps applies localTimestamp to each of es in place.
func localTimestamps(es []Expr, loc *time.Location) {
	if loc == nil {
		return
	}
	for i, e := range es {
		es[i] = localTimestamp(e, loc)
	}
}

// LocalTimestamp is localTimestamp with env's zone: the planner reads a
// TIMESTAMP argument of an aggregate (SUM, GROUP_CONCAT) through it.
func LocalTimestamp(e Expr, env Env) Expr { return localTimestamp(e, TimestampZone(env)) }

// TimestampToLocal converts a stored TIMESTAMP (UTC canonical text) to
// loc's wall clock with fsp fractional digits. NULL, the zero date and
// dates with zero parts are returned as they are.
func TimestampToLocal(d types.Datum, loc *time.Location, fsp int) types.Datum {
	t, ok := toDateTime(d)
	if !ok || zeroDate(t) || loc == nil {
		return d
	}
	tt := time.Date(t.year, time.Month(t.month), t.day, t.hour, t.minute, t.second, t.micro*1000, time.UTC).In(loc)
	return types.NewBytes(appendDateTime(make([]byte, 0, 26), fromTime(tt), min(max(fsp, 0), 6)))
}

// TimestampToUTC converts a value written to a TIMESTAMP column (a
// string, number or DATETIME read in zone loc) to its UTC wall clock,
// keeping its fractional digits; a time in a daylight-saving gap is the
// instant the gap ends (LocalInstant). Anything that is no date, the zero
// date and dates with zero parts are returned unchanged, for the column's
// conversion to accept or refuse.
func TimestampToUTC(d types.Datum, loc *time.Location) types.Datum {
	if loc == nil {
		return d
	}
	t, ok := toDateTime(d)
	if !ok || zeroDate(t) {
		return d
	}
	tt := LocalInstant(t.year, t.month, t.day, t.hour, t.minute, t.second, t.micro*1000, loc).UTC()
	fsp := 0
	if t.micro != 0 {
		fsp = 6
	}
	return types.NewBytes(appendDateTime(make([]byte, 0, 26), fromTime(tt), fsp))
}

// utcTimestamp is TimestampToUTC as an expression: the value of e written
// to a TIMESTAMP column of zone loc (nil: e). Its type is TIMESTAMP(6).
func utcTimestamp(e Expr, loc *time.Location) Expr {
	if loc == nil || e.Type().Tp == mysql.TypeTimestamp {
		return e
	}
	ft := datetimeType(6)
	ft.Tp = mysql.TypeTimestamp
	return &funcExpr{name: "timestamp_utc", args: []Expr{e}, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		return TimestampToUTC(a[0], loc), nil
	}}
}

// WriteValue is what an INSERT or UPDATE compiles for value e of a column
// of type col in env's session: a TIMESTAMP column takes any other value
// in the session zone (converted to UTC), any other column a TIMESTAMP in
// the session zone.
func WriteValue(e Expr, col types.FieldType, env Env) Expr {
	loc := TimestampZone(env)
	if col.Tp == mysql.TypeTimestamp {
		return utcTimestamp(e, loc)
	}
	return localTimestamp(e, loc)
}

// fromTime is t's date-time parts.
func fromTime(tt time.Time) dateTime {
	return dateTime{year: tt.Year(), month: int(tt.Month()), day: tt.Day(), hour: tt.Hour(),
		minute: tt.Minute(), second: tt.Second(), micro: tt.Nanosecond() / 1000}
}

// timestampOperands prepares the operands of a comparison in zone loc
// (nil: nothing to do): a TIMESTAMP compared with a TIMESTAMP compares
// UTC with UTC; with a string or temporal constant, the constant is read
// in loc and converted to UTC once (so index ranges and the stores see
// UTC); with anything else, the TIMESTAMP is read as loc's DATETIME.
func timestampOperands(l, r Expr, loc *time.Location) (Expr, Expr) {
	lts, rts := l.Type().Tp == mysql.TypeTimestamp, r.Type().Tp == mysql.TypeTimestamp
	switch {
	case loc == nil || lts == rts:
		return l, r
	case lts:
		if k, ok := utcConstant(r, loc); ok {
			return l, k
		}
		return localTimestamp(l, loc), r
	}
	if k, ok := utcConstant(l, loc); ok {
		return k, r
	}
	return l, localTimestamp(r, loc)
}

// utcConstant converts e, compared with a TIMESTAMP, to UTC when it is a
// string or temporal constant holding a date in zone loc; ok is false
// for anything else (the TIMESTAMP is then read locally).
func utcConstant(e Expr, loc *time.Location) (Expr, bool) {
	k, ok := e.(*Constant)
	if !ok || k.Ft.Tp == mysql.TypeDuration {
		return nil, false
	}
	if cl := k.Ft.Class(); cl != types.ClassString && cl != types.ClassTime {
		return nil, false
	}
	if k.fold().Value.Kind() != types.KindBytes {
		return nil, false
	}
	t, ok := toDateTime(k.Value)
	switch {
	case !ok:
		return nil, false
	case zeroDate(t):
		return k, true // zero dates are stored unconverted
	}
	ft := types.VarcharType
	v := TimestampToUTC(k.Value, loc)
	ft.Flen = len(v.Bytes())
	return &Constant{Value: v, Ft: ft}, true
}

// timestampList prepares e compared with each of list (IN, BETWEEN, CASE
// e WHEN) in zone loc as timestampOperands does: when one pair needs e
// read locally, every pair compares with e read locally (and the
// constants stay as given).
func timestampList(e Expr, list []Expr, loc *time.Location) (Expr, []Expr) {
	if loc == nil {
		return e, list
	}
	out := make([]Expr, len(list))
	local := false
	for i, x := range list {
		l, r := timestampOperands(e, x, loc)
		local = local || l != e
		out[i] = r
	}
	if local {
		e = localTimestamp(e, loc)
		for i, x := range list {
			out[i] = localTimestamp(x, loc)
		}
	}
	return e, out
}

// localResults reads the TIMESTAMP results of a CASE locally (loc) unless
// every result is a TIMESTAMP (or NULL), which keeps the type and UTC.
func localResults(thens []Expr, els Expr, loc *time.Location) ([]Expr, Expr) {
	all := append(slices.Clip(thens), els)
	for _, e := range all {
		if e != nil && e.Type().Tp != mysql.TypeTimestamp && e.Type().Class() != types.ClassNull {
			localTimestamps(thens, loc)
			if els != nil {
				els = localTimestamp(els, loc)
			}
			return thens, els
		}
	}
	return thens, els
}

// WriteDatum is value v of type src written to a column of type col in
// zone loc (TimestampZone; nil: v): a TIMESTAMP column reads anything
// but a TIMESTAMP in loc, any other column a TIMESTAMP as loc's DATETIME.
func WriteDatum(v types.Datum, src, col types.FieldType, loc *time.Location) types.Datum {
	switch {
	case loc == nil || (src.Tp == mysql.TypeTimestamp) == (col.Tp == mysql.TypeTimestamp):
		return v
	case col.Tp == mysql.TypeTimestamp:
		return TimestampToUTC(v, loc)
	}
	return TimestampToLocal(v, loc, min(max(src.Decimal, 0), 6))
}

// ColumnNow is the statement's time (Env.Now) as a column of type ft
// stores CURRENT_TIMESTAMP: UTC for a TIMESTAMP, the session's wall
// clock for a DATETIME.
func ColumnNow(env Env, ft types.FieldType) time.Time {
	if ft.Tp == mysql.TypeTimestamp {
		return env.Now().UTC()
	}
	return env.Now()
}
