package expr

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Date and time functions. DATE, DATETIME and TIMESTAMP values are their
// canonical text ("2006-01-02", "2006-01-02 15:04:05[.ffffff]"), which is
// parsed without allocating; other text and numbers (20240102) go
// through types.ParseTime. A value that is no date gives NULL, as MySQL
// does (with a warning).

var timeBuiltins = map[string]builtin{
	"extract":     {2, 2, buildExtract},
	"year":        {1, 1, buildDatePart},
	"month":       {1, 1, buildDatePart},
	"day":         {1, 1, buildDatePart},
	"dayofmonth":  {1, 1, buildDatePart},
	"hour":        {1, 1, buildDatePart},
	"minute":      {1, 1, buildDatePart},
	"second":      {1, 1, buildDatePart},
	"microsecond": {1, 1, buildDatePart},
	"quarter":     {1, 1, buildDatePart},
	"dayofweek":   {1, 1, buildDatePart},
	"dayofyear":   {1, 1, buildDatePart},
	"weekday":     {1, 1, buildDatePart},
	"to_days":     {1, 1, buildDatePart},
	"week":        {1, 2, buildWeek},
	"weekofyear":  {1, 1, buildWeek},
	"yearweek":    {1, 2, buildWeek},
}

// dateTime is a broken-down DATE / DATETIME / TIME value. For a TIME
// (dur), hour may exceed 23 and neg marks a negative value.
type dateTime struct {
	year, month, day, hour, minute, second, micro int
	neg                                           bool
}

func digits(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, len(b) > 0
}

// parseCanonical parses "YYYY-MM-DD[( |T)HH:MM:SS[.f{1,6}]]".
func parseCanonical(b []byte) (t dateTime, ok bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return t, false
	}
	var o1, o2, o3 bool
	t.year, o1 = digits(b[:4])
	t.month, o2 = digits(b[5:7])
	t.day, o3 = digits(b[8:10])
	if !o1 || !o2 || !o3 {
		return t, false
	}
	if len(b) == 10 {
		return t, true
	}
	if len(b) < 19 || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
		return t, false
	}
	t.hour, o1 = digits(b[11:13])
	t.minute, o2 = digits(b[14:16])
	t.second, o3 = digits(b[17:19])
	if !o1 || !o2 || !o3 {
		return t, false
	}
	if len(b) > 19 {
		f := b[20:]
		if b[19] != '.' || len(f) > 9 {
			return t, false
		}
		if len(f) > 6 {
			f = f[:6]
		}
		v, ok := digits(f)
		if !ok {
			return t, false
		}
		for i := len(f); i < 6; i++ {
			v *= 10
		}
		t.micro = v
	}
	return t, true
}

// toDateTime converts a value to a date-time; ok=false (NULL) for
// something that is not a valid date.
func toDateTime(d Datum) (t dateTime, ok bool) {
	var b []byte
	switch d.Kind() {
	case tablecodec.KindBytes:
		b = d.Bytes()
		if t, ok = parseCanonical(b); ok {
			return t, validDate(t)
		}
	case tablecodec.KindInt64, tablecodec.KindUint64, tablecodec.KindFloat64:
		b = types.AppendText(nil, d, nil)
	default:
		return t, false
	}
	tt, ok := types.ParseTime(string(b))
	if !ok {
		return t, false
	}
	return dateTime{year: tt.Year(), month: int(tt.Month()), day: tt.Day(), hour: tt.Hour(),
		minute: tt.Minute(), second: tt.Second(), micro: tt.Nanosecond() / 1000}, true
}

func validDate(t dateTime) bool {
	if t.month > 12 || t.hour > 23 || t.minute > 59 || t.second > 59 {
		return false
	}
	if t.month == 0 || t.day == 0 {
		return t.day <= 31 // zero dates and zero parts: MySQL allows them by default
	}
	return t.day <= daysInMonth(t.year, t.month)
}

// toDuration converts a value to a time of day or TIME: "HH:MM:SS" text,
// a TIME column, or the time part of a DATETIME.
func toDuration(d Datum) (t dateTime, ok bool) {
	if d.Kind() == tablecodec.KindBytes {
		if t, ok = parseCanonical(d.Bytes()); ok {
			return t, validDate(t)
		}
	}
	us, ok := types.ParseDuration(string(types.AppendText(nil, d, nil)))
	if !ok {
		return t, false
	}
	if us < 0 {
		t.neg, us = true, -us
	}
	t.micro = int(us % 1e6)
	s := us / 1e6
	t.second, t.minute, t.hour = int(s%60), int(s/60%60), int(s/3600)
	return t, true
}

// readTime reads a value as a duration (dur) or a date-time.
func readTime(d Datum, dur bool) (dateTime, bool) {
	if dur {
		return toDuration(d)
	}
	return toDateTime(d)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

var monthDays = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func daysInMonth(y, m int) int {
	if m == 2 && isLeap(y) {
		return 29
	}
	return monthDays[m]
}

// dayNumber is MySQL's calc_daynr: days since year 0 (TO_DAYS).
func dayNumber(y, m, d int) int64 {
	if y == 0 && m == 0 {
		return 0
	}
	n := int64(365*y + 31*(m-1) + d)
	if m <= 2 {
		y--
	} else {
		n -= int64((m*4 + 23) / 10)
	}
	return n + int64(y/4) - int64((y/100+1)*3/4)
}

// weekdayOf is 0 = Monday .. 6 = Sunday for a day number (sundayFirst:
// 0 = Sunday .. 6 = Saturday).
func weekdayOf(daynr int64, sundayFirst bool) int {
	s := int64(5)
	if sundayFirst {
		s = 6
	}
	return int((daynr + s) % 7)
}

func daysInYear(y int) int64 {
	if isLeap(y) {
		return 366
	}
	return 365
}

// Week mode bits (MySQL's week_mode).
const (
	weekMondayFirst  = 1
	weekYear         = 2
	weekFirstWeekday = 4
)

// calcWeek is MySQL's calc_week: the week number of t for a WEEK() mode,
// and the year it belongs to.
func calcWeek(t dateTime, mode int) (week, year int) {
	mode &= 7
	if mode&weekMondayFirst == 0 {
		mode ^= weekFirstWeekday
	}
	daynr := dayNumber(t.year, t.month, t.day)
	first := dayNumber(t.year, 1, 1)
	mondayFirst := mode&weekMondayFirst != 0
	wy := mode&weekYear != 0
	firstWeekday := mode&weekFirstWeekday != 0
	wd := weekdayOf(first, !mondayFirst)
	year = t.year
	if t.month == 1 && t.day <= 7-wd {
		if !wy && ((firstWeekday && wd != 0) || (!firstWeekday && wd >= 4)) {
			return 0, year
		}
		wy = true
		year--
		days := daysInYear(year)
		first -= days
		wd = int((int64(wd) + 53*7 - days) % 7)
	}
	var days int64
	if (firstWeekday && wd != 0) || (!firstWeekday && wd >= 4) {
		days = daynr - (first + int64(7-wd))
	} else {
		days = daynr - (first - int64(wd))
	}
	if wy && days >= 52*7 {
		wd = int((int64(wd) + daysInYear(year)) % 7)
		if (!firstWeekday && wd < 4) || (firstWeekday && wd == 0) {
			return 1, year + 1
		}
	}
	return int(days/7) + 1, year
}

// extractUnit computes EXTRACT(unit FROM t).
func extractUnit(u ast.TimeUnitType, t dateTime) int64 {
	y, mo, d, h, mi, s, us := int64(t.year), int64(t.month), int64(t.day), int64(t.hour), int64(t.minute), int64(t.second), int64(t.micro)
	sign := int64(1)
	if t.neg {
		sign = -1
	}
	switch u {
	case ast.TimeUnitYear:
		return y
	case ast.TimeUnitQuarter:
		return (mo + 2) / 3
	case ast.TimeUnitMonth:
		return mo
	case ast.TimeUnitWeek:
		w, _ := calcWeek(t, 0)
		return int64(w)
	case ast.TimeUnitDay:
		return d
	case ast.TimeUnitHour:
		return sign * h
	case ast.TimeUnitMinute:
		return sign * mi
	case ast.TimeUnitSecond:
		return sign * s
	case ast.TimeUnitMicrosecond:
		return sign * us
	case ast.TimeUnitYearMonth:
		return y*100 + mo
	case ast.TimeUnitDayHour:
		return sign * (d*100 + h)
	case ast.TimeUnitDayMinute:
		return sign * (d*10000 + h*100 + mi)
	case ast.TimeUnitDaySecond:
		return sign * (d*1000000 + h*10000 + mi*100 + s)
	case ast.TimeUnitDayMicrosecond:
		return sign * ((d*1000000+h*10000+mi*100+s)*1000000 + us)
	case ast.TimeUnitHourMinute:
		return sign * (h*100 + mi)
	case ast.TimeUnitHourSecond:
		return sign * (h*10000 + mi*100 + s)
	case ast.TimeUnitHourMicrosecond:
		return sign * ((h*10000+mi*100+s)*1000000 + us)
	case ast.TimeUnitMinuteSecond:
		return sign * (mi*100 + s)
	case ast.TimeUnitMinuteMicrosecond:
		return sign * ((mi*100+s)*1000000 + us)
	case ast.TimeUnitSecondMicrosecond:
		return sign * (s*1000000 + us)
	}
	return 0
}

// timeOnlyUnit: the unit reads only the time of day, so a TIME argument
// (or "HH:MM:SS" text) is read as a duration.
func timeOnlyUnit(u ast.TimeUnitType) bool {
	switch u {
	case ast.TimeUnitHour, ast.TimeUnitMinute, ast.TimeUnitSecond, ast.TimeUnitMicrosecond,
		ast.TimeUnitHourMinute, ast.TimeUnitHourSecond, ast.TimeUnitHourMicrosecond,
		ast.TimeUnitMinuteSecond, ast.TimeUnitMinuteMicrosecond, ast.TimeUnitSecondMicrosecond:
		return true
	}
	return false
}

func buildExtract(name string, args []Expr) (Expr, error) {
	u, ok := args[0].(*unitArg)
	if !ok {
		return nil, errParamCount(name)
	}
	unit := u.unit
	dur := timeOnlyUnit(unit) || args[1].Type().Tp == mysql.TypeDuration
	return &funcExpr{name: name, args: args[1:], ft: types.Int64Type, fn: func(a []Datum) (Datum, error) {
		if a[0].IsNull() {
			return tablecodec.NullDatum, nil
		}
		t, ok := readTime(a[0], dur)
		if !ok {
			return tablecodec.NullDatum, nil
		}
		return tablecodec.NewInt(extractUnit(unit, t)), nil
	}}, nil
}

// buildDatePart compiles YEAR(), MONTH(), DAYOFWEEK() and the other
// one-part functions.
func buildDatePart(name string, args []Expr) (Expr, error) {
	var part func(t dateTime) (int64, bool)
	dur := false
	switch name {
	case "year":
		part = func(t dateTime) (int64, bool) { return int64(t.year), true }
	case "month":
		part = func(t dateTime) (int64, bool) { return int64(t.month), true }
	case "day", "dayofmonth":
		part = func(t dateTime) (int64, bool) { return int64(t.day), true }
	case "quarter":
		part = func(t dateTime) (int64, bool) { return int64(t.month+2) / 3, true }
	case "hour", "minute", "second", "microsecond":
		dur = true
		part = func(t dateTime) (int64, bool) {
			switch name {
			case "hour":
				return int64(t.hour), true
			case "minute":
				return int64(t.minute), true
			case "second":
				return int64(t.second), true
			}
			return int64(t.micro), true
		}
	case "dayofweek", "weekday", "dayofyear", "to_days":
		part = func(t dateTime) (int64, bool) {
			if t.month == 0 || t.day == 0 {
				return 0, false
			}
			n := dayNumber(t.year, t.month, t.day)
			switch name {
			case "dayofweek":
				return int64(weekdayOf(n, true)) + 1, true
			case "weekday":
				return int64(weekdayOf(n, false)), true
			case "dayofyear":
				return n - dayNumber(t.year, 1, 1) + 1, true
			}
			return n, true
		}
	}
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []Datum) (Datum, error) {
		if a[0].IsNull() {
			return tablecodec.NullDatum, nil
		}
		t, ok := readTime(a[0], dur)
		if !ok {
			return tablecodec.NullDatum, nil
		}
		v, ok := part(t)
		if !ok {
			return tablecodec.NullDatum, nil
		}
		return tablecodec.NewInt(v), nil
	}}, nil
}

// buildWeek compiles WEEK(d[, mode]), WEEKOFYEAR(d) (mode 3) and
// YEARWEEK(d[, mode]) (year*100 + week, with mode|2).
func buildWeek(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []Datum) (Datum, error) {
		if anyNull(a) {
			return tablecodec.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok || t.month == 0 || t.day == 0 {
			return tablecodec.NullDatum, nil
		}
		mode := 0
		if name == "weekofyear" {
			mode = 3
		}
		if len(a) == 2 {
			mode = int(intOf(a[1]) & 7)
		}
		if name == "yearweek" {
			w, y := calcWeek(t, mode|weekYear)
			return tablecodec.NewInt(int64(y)*100 + int64(w)), nil
		}
		w, _ := calcWeek(t, mode)
		return tablecodec.NewInt(int64(w)), nil
	}}, nil
}
