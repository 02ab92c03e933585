package expr

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // named zones (time_zone, CONVERT_TZ) without the host's zoneinfo

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// Date and time functions. DATE, DATETIME and TIMESTAMP values are their
// canonical text ("2006-01-02", "2006-01-02 15:04:05[.ffffff]"), which is
// parsed without allocating; other text and numbers (20240102) go
// through types.ParseTime. A value that is no date gives NULL, as MySQL
// does; DATE_ADD / DATE_SUB also raise MySQL's warning 1292 for it
// (invalidDate).

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
func toDateTime(d types.Datum) (t dateTime, ok bool) {
	var b []byte
	switch d.Kind() {
	case types.KindBytes:
		b = d.Bytes()
		if t, ok = parseCanonical(b); ok {
			return t, validDate(t)
		}
	case types.KindInt64, types.KindUint64, types.KindFloat64:
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

// invalidDate is warning 1292 for a value a date function cannot read
// as a date (its result is NULL).
func invalidDate(d types.Datum) *Condition {
	return warnf(errno.ErrTruncatedWrongValue, "Incorrect datetime value: '%s'", textOf(d))
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
func toDuration(d types.Datum) (t dateTime, ok bool) {
	if d.Kind() == types.KindBytes {
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
func readTime(d types.Datum, dur bool) (dateTime, bool) {
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
	return &funcExpr{name: name, args: args[1:], ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := readTime(a[0], dur)
		if !ok {
			return types.NullDatum, nil
		}
		return types.NewInt(extractUnit(unit, t)), nil
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
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := readTime(a[0], dur)
		if !ok {
			return types.NullDatum, nil
		}
		v, ok := part(t)
		if !ok {
			return types.NullDatum, nil
		}
		return types.NewInt(v), nil
	}}, nil
}

// buildWeek compiles WEEK(d[, mode]), WEEKOFYEAR(d) (mode 3) and
// YEARWEEK(d[, mode]) (year*100 + week, with mode|2).
func buildWeek(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok || t.month == 0 || t.day == 0 {
			return types.NullDatum, nil
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
			return types.NewInt(int64(y)*100 + int64(w)), nil
		}
		w, _ := calcWeek(t, mode)
		return types.NewInt(int64(w)), nil
	}}, nil
}

func init() {
	for name, b := range map[string]builtin{
		"date":           {1, 1, buildDate},
		"time":           {1, 1, buildTime},
		"date_add":       {3, 3, buildDateAdd},
		"adddate":        {3, 3, buildDateAdd},
		"date_sub":       {3, 3, buildDateAdd},
		"subdate":        {3, 3, buildDateAdd},
		"timestampadd":   {3, 3, buildDateAdd},
		"datediff":       {2, 2, buildDateDiff},
		"timestampdiff":  {3, 3, buildTimestampDiff},
		"last_day":       {1, 1, buildLastDay},
		"makedate":       {2, 2, buildMakeDate},
		"dayname":        {1, 1, buildNames},
		"monthname":      {1, 1, buildNames},
		"date_format":    {2, 2, buildDateFormat},
		"str_to_date":    {2, 2, buildStrToDate},
		"unix_timestamp": {0, 1, nil},
		"from_unixtime":  {1, 2, nil},
		"convert_tz":     {3, 3, buildConvertTZ},
	} {
		timeBuiltins[name] = b
	}
}

var (
	dateType = types.FieldType{Tp: mysql.TypeDate, Flen: 10, Flag: mysql.BinaryFlag}
	timeType = types.FieldType{Tp: mysql.TypeDuration, Flen: 10, Flag: mysql.BinaryFlag}
)

func datetimeType(fsp int) types.FieldType {
	ft := types.FieldType{Tp: mysql.TypeDatetime, Flen: 19, Decimal: fsp, Flag: mysql.BinaryFlag}
	if fsp > 0 {
		ft.Flen += 1 + fsp
	}
	return ft
}

// durationType is TIME(fsp).
func durationType(fsp int) types.FieldType {
	ft := timeType
	if fsp > 0 {
		ft.Decimal, ft.Flen = fsp, ft.Flen+1+fsp
	}
	return ft
}

// fspOf is the fractional-second digits of a temporal argument.
func fspOf(ft types.FieldType) int {
	if ft.Class() == types.ClassTime {
		return min(max(ft.Decimal, 0), 6)
	}
	return 0
}

func pad2(b []byte, v int) []byte { return append(b, byte('0'+v/10%10), byte('0'+v%10)) }

func padN(b []byte, v, n int) []byte {
	var buf [12]byte
	i := len(buf)
	for ; n > 0 || v > 0; n-- {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[i:]...)
}

// appendDate appends "YYYY-MM-DD".
func appendDate(b []byte, t dateTime) []byte {
	b = padN(b, t.year, 4)
	b = pad2(append(b, '-'), t.month)
	return pad2(append(b, '-'), t.day)
}

// appendClock appends "HH:MM:SS[.f]" with fsp fractional digits.
func appendClock(b []byte, t dateTime, fsp int) []byte {
	b = padN(b, t.hour, 2)
	b = pad2(append(b, ':'), t.minute)
	b = pad2(append(b, ':'), t.second)
	if fsp > 0 {
		b = append(b, '.')
		b = padN(b, t.micro, 6)[:len(b)+fsp]
	}
	return b
}

func appendDateTime(b []byte, t dateTime, fsp int) []byte {
	return appendClock(append(appendDate(b, t), ' '), t, fsp)
}

func zeroDate(t dateTime) bool { return t.month == 0 || t.day == 0 }

func buildDate(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: dateType, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok {
			return types.NullDatum, nil
		}
		return types.NewBytes(appendDate(make([]byte, 0, 10), t)), nil
	}}, nil
}

func buildTime(name string, args []Expr) (Expr, error) {
	fsp := fspOf(args[0].Type())
	ft := timeType
	ft.Decimal = fsp
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := toDuration(a[0])
		if !ok {
			return types.NullDatum, nil
		}
		f := fsp
		if f == 0 && t.micro != 0 {
			f = 6
		}
		us := ((int64(t.hour)*60+int64(t.minute))*60+int64(t.second))*1e6 + int64(t.micro)
		if t.neg {
			us = -us
		}
		return types.NewString(types.FormatDuration(us, f)), nil
	}}, nil
}

// dateOnlyUnit: adding the unit to a DATE gives a DATE.
func dateOnlyUnit(u ast.TimeUnitType) bool {
	switch u {
	case ast.TimeUnitYear, ast.TimeUnitQuarter, ast.TimeUnitMonth, ast.TimeUnitWeek, ast.TimeUnitDay, ast.TimeUnitYearMonth:
		return true
	}
	return false
}

// unitFields lists the parts of an interval value of unit u, most
// significant first: 'Y','M','D','h','m','s','u' (microseconds).
func unitFields(u ast.TimeUnitType) string {
	switch u {
	case ast.TimeUnitYearMonth:
		return "YM"
	case ast.TimeUnitDayHour:
		return "Dh"
	case ast.TimeUnitDayMinute:
		return "Dhm"
	case ast.TimeUnitDaySecond:
		return "Dhms"
	case ast.TimeUnitDayMicrosecond:
		return "Dhmsu"
	case ast.TimeUnitHourMinute:
		return "hm"
	case ast.TimeUnitHourSecond:
		return "hms"
	case ast.TimeUnitHourMicrosecond:
		return "hmsu"
	case ast.TimeUnitMinuteSecond:
		return "ms"
	case ast.TimeUnitMinuteMicrosecond:
		return "msu"
	case ast.TimeUnitSecondMicrosecond:
		return "su"
	}
	return ""
}

// interval is a parsed INTERVAL value: months and microseconds.
type interval struct {
	months, micros int64
}

// parseInterval reads INTERVAL v unit. Simple units take a number
// (SECOND a fraction too); compound units a string of digit groups
// ('1:30' HOUR_MINUTE), missing leading groups being zero.
func parseInterval(v types.Datum, u ast.TimeUnitType) (iv interval, ok bool) {
	fields := unitFields(u)
	if fields == "" {
		switch u {
		case ast.TimeUnitSecond:
			f, ok := types.ToFloat(v)
			if !ok && v.Kind() == types.KindBytes {
				return iv, false
			}
			return interval{micros: int64(math.Round(f * 1e6))}, true
		case ast.TimeUnitMicrosecond:
			return interval{micros: intOf(v)}, true
		}
		n := intOf(v)
		switch u {
		case ast.TimeUnitMinute:
			return interval{micros: n * 60e6}, true
		case ast.TimeUnitHour:
			return interval{micros: n * 3600e6}, true
		case ast.TimeUnitDay:
			return interval{micros: n * 86400e6}, true
		case ast.TimeUnitWeek:
			return interval{micros: n * 7 * 86400e6}, true
		case ast.TimeUnitMonth:
			return interval{months: n}, true
		case ast.TimeUnitQuarter:
			return interval{months: 3 * n}, true
		case ast.TimeUnitYear:
			return interval{months: 12 * n}, true
		}
		return iv, false
	}
	s := textOf(v)
	neg := false
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	var groups [5]int64
	var glen [5]int
	n := 0
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		if n == len(fields) {
			return iv, false
		}
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			groups[n] = groups[n]*10 + int64(s[i]-'0')
			glen[n]++
		}
		n++
	}
	shift := len(fields) - n
	for i := 0; i < n; i++ {
		g := groups[i]
		switch fields[i+shift] {
		case 'Y':
			iv.months += 12 * g
		case 'M':
			iv.months += g
		case 'D':
			iv.micros += g * 86400e6
		case 'h':
			iv.micros += g * 3600e6
		case 'm':
			iv.micros += g * 60e6
		case 's':
			iv.micros += g * 1e6
		case 'u':
			for l := glen[i]; l < 6; l++ {
				g *= 10
			}
			iv.micros += g
		}
	}
	if neg {
		iv.months, iv.micros = -iv.months, -iv.micros
	}
	return iv, true
}

// addInterval adds iv to t: months first, the day clamped to the
// month's last day (2024-01-31 + 1 MONTH = 2024-02-29), then the
// microseconds. ok=false outside years 1..9999.
func addInterval(t dateTime, iv interval) (dateTime, bool) {
	if iv.months != 0 {
		m := int64(t.year)*12 + int64(t.month-1) + iv.months
		if m < 0 || m >= 10000*12 {
			return t, false
		}
		t.year, t.month = int(m/12), int(m%12)+1
		t.day = min(t.day, daysInMonth(t.year, t.month))
	}
	if iv.micros != 0 {
		const day = 86400e6
		us := dayNumber(t.year, t.month, t.day)*day + ((int64(t.hour)*60+int64(t.minute))*60+int64(t.second))*1e6 + int64(t.micro) + iv.micros
		if us < dayNumber(1, 1, 1)*day || us >= dayNumber(10000, 1, 1)*day {
			return t, false
		}
		t = fromDayNumber(us / day)
		r := us % day
		t.micro = int(r % 1e6)
		r /= 1e6
		t.second, t.minute, t.hour = int(r%60), int(r/60%60), int(r/3600)
	}
	if t.year < 1 || t.year > 9999 {
		return t, false
	}
	return t, true
}

// fromDayNumber is the date of a TO_DAYS number (year >= 1).
func fromDayNumber(n int64) dateTime {
	// Estimate the year, then correct it.
	y := int(n * 400 / 146097)
	for dayNumber(y+1, 1, 1) <= n {
		y++
	}
	for y > 0 && dayNumber(y, 1, 1) > n {
		y--
	}
	doy := int(n - dayNumber(y, 1, 1))
	m := 1
	for ; m < 12 && doy >= daysInMonth(y, m); m++ {
		doy -= daysInMonth(y, m)
	}
	return dateTime{year: y, month: m, day: doy + 1}
}

// buildDateAdd compiles DATE_ADD / DATE_SUB / ADDDATE / SUBDATE (d, n,
// unit — the parser gives ADDDATE(d, n) a DAY unit and `d + INTERVAL n
// u` the same call) and TIMESTAMPADD(unit, n, d). A DATE plus days or
// more stays a DATE, other temporals give a DATETIME, strings a string.
func buildDateAdd(name string, args []Expr) (Expr, error) {
	if name == "timestampadd" {
		args = []Expr{args[2], args[1], args[0]}
	}
	u, ok := args[2].(*unitArg)
	if !ok {
		return nil, errParamCount(name)
	}
	unit := u.unit
	sub := name == "date_sub" || name == "subdate"
	at := args[0].Type()
	micro := unit == ast.TimeUnitMicrosecond || unitFields(unit) != "" && unitFields(unit)[len(unitFields(unit))-1] == 'u'
	if k, ok := args[1].(*Constant); ok && unit == ast.TimeUnitSecond && k.fold().Ft.Class() != types.ClassInt {
		micro = true
	}
	var ft types.FieldType
	switch {
	case at.Tp == mysql.TypeDate && dateOnlyUnit(unit):
		ft = dateType
	case at.Class() == types.ClassTime && at.Tp != mysql.TypeDuration:
		fsp := fspOf(at)
		if micro {
			fsp = 6
		}
		ft = datetimeType(fsp)
	default:
		ft = strType(29)
	}
	return &funcExpr{name: name, args: args[:2], ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok || zeroDate(t) {
			return types.NullDatum, invalidDate(a[0])
		}
		iv, ok := parseInterval(a[1], unit)
		if !ok {
			return types.NullDatum, nil
		}
		if sub {
			iv.months, iv.micros = -iv.months, -iv.micros
		}
		hadTime := a[0].Kind() != types.KindBytes || len(a[0].Bytes()) > 10
		r, ok := addInterval(t, iv)
		if !ok {
			return types.NullDatum, nil
		}
		b := make([]byte, 0, 26)
		switch {
		case ft.Tp == mysql.TypeDate:
			b = appendDate(b, r)
		case ft.Tp == mysql.TypeDatetime:
			b = appendDateTime(b, r, ft.Decimal)
		case !hadTime && dateOnlyUnit(unit):
			b = appendDate(b, r)
		default:
			fsp := 0
			if r.micro != 0 {
				fsp = 6
			}
			b = appendDateTime(b, r, fsp)
		}
		return types.NewBytes(b), nil
	}}, nil
}

func buildDateDiff(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		x, ok1 := toDateTime(a[0])
		y, ok2 := toDateTime(a[1])
		if !ok1 || !ok2 || zeroDate(x) || zeroDate(y) {
			return types.NullDatum, nil
		}
		return types.NewInt(dayNumber(x.year, x.month, x.day) - dayNumber(y.year, y.month, y.day)), nil
	}}, nil
}

// microsOf is t as microseconds since day 0.
func microsOf(t dateTime) int64 {
	return dayNumber(t.year, t.month, t.day)*86400e6 + ((int64(t.hour)*60+int64(t.minute))*60+int64(t.second))*1e6 + int64(t.micro)
}

// buildTimestampDiff compiles TIMESTAMPDIFF(unit, a, b): b - a in whole
// units, truncated toward zero; months count only when b's day and time
// reach a's.
func buildTimestampDiff(name string, args []Expr) (Expr, error) {
	u, ok := args[0].(*unitArg)
	if !ok {
		return nil, errParamCount(name)
	}
	unit := u.unit
	if unitFields(unit) != "" {
		return nil, errParamCount(name)
	}
	return &funcExpr{name: name, args: args[1:], ft: types.Int64Type, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		x, ok1 := toDateTime(a[0])
		y, ok2 := toDateTime(a[1])
		if !ok1 || !ok2 || zeroDate(x) || zeroDate(y) {
			return types.NullDatum, nil
		}
		switch unit {
		case ast.TimeUnitMonth, ast.TimeUnitQuarter, ast.TimeUnitYear:
			m := int64(y.year-x.year)*12 + int64(y.month-x.month)
			rx := microsOf(dateTime{day: x.day, hour: x.hour, minute: x.minute, second: x.second, micro: x.micro, year: 0, month: 1})
			ry := microsOf(dateTime{day: y.day, hour: y.hour, minute: y.minute, second: y.second, micro: y.micro, year: 0, month: 1})
			if m > 0 && ry < rx {
				m--
			} else if m < 0 && ry > rx {
				m++
			}
			switch unit {
			case ast.TimeUnitQuarter:
				m /= 3
			case ast.TimeUnitYear:
				m /= 12
			}
			return types.NewInt(m), nil
		}
		d := microsOf(y) - microsOf(x)
		per := map[ast.TimeUnitType]int64{ast.TimeUnitMicrosecond: 1, ast.TimeUnitSecond: 1e6, ast.TimeUnitMinute: 60e6,
			ast.TimeUnitHour: 3600e6, ast.TimeUnitDay: 86400e6, ast.TimeUnitWeek: 7 * 86400e6}[unit]
		if per == 0 {
			return types.NullDatum, nil
		}
		return types.NewInt(d / per), nil
	}}, nil
}

func buildLastDay(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: dateType, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok || t.month == 0 {
			return types.NullDatum, nil
		}
		t.day = daysInMonth(t.year, t.month)
		return types.NewBytes(appendDate(make([]byte, 0, 10), t)), nil
	}}, nil
}

// buildMakeDate compiles MAKEDATE(year, dayofyear).
func buildMakeDate(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: dateType, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		y, doy := intOf(a[0]), intOf(a[1])
		if doy <= 0 || y < 0 || y > 9999 {
			return types.NullDatum, nil
		}
		if y < 70 {
			y += 2000
		} else if y < 100 {
			y += 1900
		}
		n := dayNumber(int(y), 1, 1) + doy - 1
		if n >= dayNumber(10000, 1, 1) {
			return types.NullDatum, nil
		}
		return types.NewBytes(appendDate(make([]byte, 0, 10), fromDayNumber(n))), nil
	}}, nil
}

var (
	dayNames   = [7]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	monthNames = [13]string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

func buildNames(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(9), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok {
			return types.NullDatum, nil
		}
		if name == "monthname" {
			if t.month == 0 {
				return types.NullDatum, nil
			}
			return types.NewString(monthNames[t.month]), nil
		}
		if zeroDate(t) {
			return types.NullDatum, nil
		}
		return types.NewString(dayNames[weekdayOf(dayNumber(t.year, t.month, t.day), false)]), nil
	}}, nil
}

var (
	dayAbbr   = [7]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	monthAbbr = [13]string{"", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// hour12 is the 12-hour clock hour (12, 1..11).
func hour12(h int) int {
	if h%12 == 0 {
		return 12
	}
	return h % 12
}

func ampm(h int) string {
	if h%24 < 12 {
		return "AM"
	}
	return "PM"
}

// appendDateFormat appends t formatted by a DATE_FORMAT pattern.
func appendDateFormat(b []byte, t dateTime, f []byte) []byte {
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' || i+1 == len(f) {
			b = append(b, c)
			continue
		}
		i++
		wd := func() int { return weekdayOf(dayNumber(t.year, t.month, t.day), false) }
		switch f[i] {
		case 'a':
			b = append(b, dayAbbr[wd()]...)
		case 'b':
			b = append(b, monthAbbr[t.month]...)
		case 'c':
			b = padN(b, t.month, 1)
		case 'D':
			b = padN(b, t.day, 1)
			switch {
			case t.day/10%10 == 1:
				b = append(b, "th"...)
			case t.day%10 == 1:
				b = append(b, "st"...)
			case t.day%10 == 2:
				b = append(b, "nd"...)
			case t.day%10 == 3:
				b = append(b, "rd"...)
			default:
				b = append(b, "th"...)
			}
		case 'd':
			b = pad2(b, t.day)
		case 'e':
			b = padN(b, t.day, 1)
		case 'f':
			b = padN(b, t.micro, 6)
		case 'H':
			b = padN(b, t.hour, 2)
		case 'h', 'I':
			b = pad2(b, hour12(t.hour))
		case 'i':
			b = pad2(b, t.minute)
		case 'j':
			b = padN(b, int(dayNumber(t.year, t.month, t.day)-dayNumber(t.year, 1, 1)+1), 3)
		case 'k':
			b = padN(b, t.hour, 1)
		case 'l':
			b = padN(b, hour12(t.hour), 1)
		case 'M':
			b = append(b, monthNames[t.month]...)
		case 'm':
			b = pad2(b, t.month)
		case 'p':
			b = append(b, ampm(t.hour)...)
		case 'r':
			u := t
			u.hour = hour12(t.hour)
			b = append(append(appendClock(b, u, 0), ' '), ampm(t.hour)...)
		case 'S', 's':
			b = pad2(b, t.second)
		case 'T':
			b = appendClock(b, t, 0)
		case 'U', 'u', 'V', 'v':
			mode := map[byte]int{'U': 0, 'u': 1, 'V': 2, 'v': 3}[f[i]]
			w, _ := calcWeek(t, mode)
			b = pad2(b, w)
		case 'W':
			b = append(b, dayNames[wd()]...)
		case 'w':
			b = padN(b, weekdayOf(dayNumber(t.year, t.month, t.day), true), 1)
		case 'X', 'x':
			mode := 2
			if f[i] == 'x' {
				mode = 3
			}
			_, y := calcWeek(t, mode)
			b = padN(b, y, 4)
		case 'Y':
			b = padN(b, t.year, 4)
		case 'y':
			b = pad2(b, t.year%100)
		default:
			b = append(b, f[i])
		}
	}
	return b
}

// formatNeedsDate: the pattern reads the date (names and week numbers
// of a zero date are NULL).
func formatNeedsDate(f []byte) bool {
	for i := 0; i+1 < len(f); i++ {
		if f[i] == '%' {
			switch f[i+1] {
			case 'a', 'D', 'j', 'U', 'u', 'V', 'v', 'W', 'w', 'X', 'x', 'b', 'M':
				return true
			}
			i++
		}
	}
	return false
}

func buildDateFormat(name string, args []Expr) (Expr, error) {
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		f := textOf(a[1])
		if !ok || zeroDate(t) && formatNeedsDate(f) {
			return types.NullDatum, nil
		}
		return types.NewBytes(appendDateFormat(make([]byte, 0, len(f)+16), t, f)), nil
	}}, nil
}

// scanNum reads up to max digits from s.
func scanNum(s []byte, maxDigits int) (v, n int) {
	for n < len(s) && n < maxDigits && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	return v, n
}

// scanName matches one of names (case-insensitively) at the start of s.
func scanName(s []byte, names []string) (idx, n int) {
	for i, nm := range names {
		if nm != "" && len(s) >= len(nm) && bytesEqualFold(s[:len(nm)], nm) {
			return i, len(nm)
		}
	}
	return -1, 0
}

// bytesEqualFold reports whether b equals the first len(b) bytes of s,
// ASCII letters folded (the caller checks the lengths).
func bytesEqualFold(b []byte, s string) bool {
	for i := range b {
		x, y := b[i]|0x20, s[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// strToDate parses s by a STR_TO_DATE pattern; ok=false when s does not
// match it.
func strToDate(s, f []byte) (t dateTime, ok bool) {
	pm, twelve := -1, false
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			if f[i] == ' ' {
				for len(s) > 0 && s[0] == ' ' {
					s = s[1:]
				}
				continue
			}
			if len(s) == 0 || s[0] != f[i] {
				return t, false
			}
			s = s[1:]
			continue
		}
		i++
		for len(s) > 0 && s[0] == ' ' { // MySQL skips spaces before a field
			s = s[1:]
		}
		var v, n int
		switch f[i] {
		case 'Y':
			v, n = scanNum(s, 4)
			if n <= 2 && n > 0 {
				v = twoDigitYear(v)
			}
			t.year = v
		case 'y':
			v, n = scanNum(s, 2)
			t.year = twoDigitYear(v)
		case 'm', 'c':
			t.month, n = scanNum(s, 2)
		case 'd', 'e':
			t.day, n = scanNum(s, 2)
		case 'H', 'k':
			t.hour, n = scanNum(s, 2)
		case 'h', 'I', 'l':
			t.hour, n = scanNum(s, 2)
			twelve = true
		case 'i':
			t.minute, n = scanNum(s, 2)
		case 's', 'S':
			t.second, n = scanNum(s, 2)
		case 'f':
			v, n = scanNum(s, 6)
			for k := n; k < 6; k++ {
				v *= 10
			}
			t.micro = v
		case 'p':
			v, n = scanName(s, []string{"AM", "PM"})
			pm = v
		case 'M':
			t.month, n = scanName(s, monthNames[:])
		case 'b':
			t.month, n = scanName(s, monthAbbr[:])
		case 'T', 'r':
			var k int
			if t.hour, k = scanNum(s, 2); k == 0 || len(s) <= k || s[k] != ':' {
				return t, false
			}
			n = k + 1
			if t.minute, k = scanNum(s[n:], 2); k == 0 || len(s) <= n+k || s[n+k] != ':' {
				return t, false
			}
			n += k + 1
			t.second, k = scanNum(s[n:], 2)
			n += k
			if f[i] == 'r' {
				twelve = true
				for n < len(s) && s[n] == ' ' {
					n++
				}
				var k int
				pm, k = scanName(s[n:], []string{"AM", "PM"})
				n += k
			}
		case '%':
			if len(s) > 0 && s[0] == '%' {
				n = 1
			}
		default:
			return t, false
		}
		if n <= 0 {
			return t, false
		}
		s = s[n:]
	}
	if twelve {
		if t.hour < 1 || t.hour > 12 {
			return t, false
		}
		t.hour %= 12
		if pm == 1 {
			t.hour += 12
		}
	} else if pm == 1 && t.hour < 12 {
		t.hour += 12
	}
	return t, validDate(t)
}

// twoDigitYear maps 00-69 to 2000-2069 and 70-99 to 1970-1999.
func twoDigitYear(y int) int {
	if y < 70 {
		return y + 2000
	}
	if y < 100 {
		return y + 1900
	}
	return y
}

// formatParts reports which parts a STR_TO_DATE pattern sets.
func formatParts(f []byte) (date, clock, frac bool) {
	for i := 0; i+1 < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		switch f[i] {
		case 'Y', 'y', 'm', 'c', 'd', 'e', 'M', 'b', 'j':
			date = true
		case 'H', 'k', 'h', 'I', 'l', 'i', 's', 'S', 'T', 'r', 'p':
			clock = true
		case 'f':
			clock, frac = true, true
		}
	}
	return
}

// buildStrToDate compiles STR_TO_DATE(s, format): a DATE, TIME or
// DATETIME by the parts a constant format sets (DATETIME otherwise).
func buildStrToDate(name string, args []Expr) (Expr, error) {
	ft := datetimeType(6)
	if k, ok := args[1].(*Constant); ok && !k.fold().Value.IsNull() {
		date, clock, frac := formatParts(textOf(k.Value))
		fsp := 0
		if frac {
			fsp = 6
		}
		switch {
		case date && !clock:
			ft = dateType
		case clock && !date:
			ft = timeType
			if frac {
				ft = durationType(6)
			}
		default:
			ft = datetimeType(fsp)
		}
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		t, ok := strToDate(textOf(a[0]), textOf(a[1]))
		if !ok || ft.Tp != mysql.TypeDuration && zeroDate(t) {
			return types.NullDatum, nil
		}
		b := make([]byte, 0, 26)
		switch ft.Tp {
		case mysql.TypeDate:
			b = appendDate(b, t)
		case mysql.TypeDuration:
			b = appendClock(b, t, ft.Decimal)
		default:
			b = appendDateTime(b, t, ft.Decimal)
		}
		return types.NewBytes(b), nil
	}}, nil
}

// Unix timestamps run from 1970-01-01 00:00:00 UTC to 3001-01-19 03:14:07.999999 UTC.
const maxUnixTime = 32536771199

// buildUnixTimestamp compiles UNIX_TIMESTAMP() (the statement's time) and
// UNIX_TIMESTAMP(d): d read in the session time zone (LocalInstant), 0
// outside the timestamp range; a DECIMAL with the fractional seconds of a
// DATETIME(fsp) argument.
func buildUnixTimestamp(env Env, name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return &Constant{Value: types.NewInt(env.Now().Unix()), Ft: types.Int64Type}, nil
	}
	zone := SessionZone(env)
	if args[0].Type().Tp == mysql.TypeTimestamp {
		zone = time.UTC // a TIMESTAMP is its UTC wall clock (timezone.go)
	}
	fsp := fspOf(args[0].Type())
	if k, ok := args[0].(*Constant); ok && k.fold().Value.Kind() == types.KindBytes {
		if t, ok := toDateTime(k.Value); ok && t.micro != 0 {
			fsp = 6
		}
	}
	ft := types.Int64Type
	if fsp > 0 {
		ft = types.DecimalType(11+fsp, fsp)
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok {
			return types.NullDatum, nil
		}
		sec := LocalInstant(t.year, t.month, t.day, t.hour, t.minute, t.second, 0, zone).Unix()
		if zeroDate(t) || sec < 0 || sec > maxUnixTime {
			sec, t.micro = 0, 0
		}
		if fsp == 0 {
			return types.NewInt(sec), nil
		}
		v := types.NewDecimal(sec*1e6+int64(t.micro), 6)
		return v.Round(fsp).Datum(), nil
	}}, nil
}

// buildFromUnixtime compiles FROM_UNIXTIME(n[, format]): the DATETIME of
// n seconds after the epoch in the session time zone.
func buildFromUnixtime(env Env, name string, args []Expr) (Expr, error) {
	zone := SessionZone(env)
	fsp := 0
	if at := args[0].Type(); at.Class() == types.ClassDecimal {
		fsp = min(max(at.Decimal, 0), 6)
	} else if at.Class() != types.ClassInt {
		fsp = 6
	}
	ft := datetimeType(fsp)
	if len(args) == 2 {
		ft = strType(-1)
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		v, ok := types.ToDecimal(a[0])
		if !ok || v.Sign() < 0 {
			return types.NullDatum, nil
		}
		us, ok := v.Mul(types.NewDecimal(1e6, 0)).Int64()
		if !ok || us > (maxUnixTime+1)*1e6-1 {
			return types.NullDatum, nil
		}
		tt := time.UnixMicro(us).In(zone)
		t := dateTime{year: tt.Year(), month: int(tt.Month()), day: tt.Day(), hour: tt.Hour(),
			minute: tt.Minute(), second: tt.Second(), micro: tt.Nanosecond() / 1000}
		if len(a) == 2 {
			return types.NewBytes(appendDateFormat(nil, t, textOf(a[1]))), nil
		}
		return types.NewBytes(appendDateTime(make([]byte, 0, 26), t, fsp)), nil
	}}, nil
}

// tzLocations caches the named zones ParseTimeZone has loaded.
var tzLocations sync.Map // string -> *time.Location (nil: unknown)

// ParseTimeZone reads a time zone as time_zone and CONVERT_TZ take it:
// 'SYSTEM' (any case: this process's local zone, system_time_zone), an
// offset '+HH:MM' from -13:59 to +14:00 (one or two hour digits), or a
// name of the IANA database ('UTC', 'Europe/Berlin'; Go's copy, embedded
// in every binary that links this package (the time/tzdata import), where MySQL reads its mysql.time_zone
// tables). name is the zone's canonical spelling, the one @@time_zone
// shows: "SYSTEM", "+05:30" for '+5:30', a name as given. ok=false for
// anything else.
func ParseTimeZone(s string) (loc *time.Location, name string, ok bool) {
	b := []byte(s)
	loc, ok = timeZone(b)
	switch {
	case !ok:
		return nil, "", false
	case loc == time.Local:
		return loc, "SYSTEM", true
	case b[0] == '+' || b[0] == '-':
		_, off := time.Time{}.In(loc).Zone()
		sign := '+'
		if off < 0 {
			sign = '-'
		}
		name = fmt.Sprintf("%c%02d:%02d", sign, max(off, -off)/3600, max(off, -off)%3600/60)
		return time.FixedZone(name, off), name, true
	}
	return loc, s, true
}

// timeZone reads a time zone argument (ParseTimeZone).
func timeZone(s []byte) (*time.Location, bool) {
	if len(s) == len("system") && bytesEqualFold(s, "system") {
		return time.Local, true
	}
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		i := 1 + len(s[1:]) - len(strings.TrimLeft(string(s[1:]), "0123456789"))
		h, okH := digits(s[1:i])
		m, okM := digits(s[min(i+1, len(s)):])
		if !okH || !okM || i-1 > 2 || i >= len(s) || s[i] != ':' || len(s)-i-1 != 2 || m > 59 {
			return nil, false
		}
		off := h*3600 + m*60
		if s[0] == '-' {
			off = -off
		}
		if off < -(13*3600+59*60) || off > 14*3600 {
			return nil, false
		}
		return time.FixedZone(string(s), off), true
	}
	if l, ok := tzLocations.Load(string(s)); ok {
		loc := l.(*time.Location)
		return loc, loc != nil
	}
	loc, err := time.LoadLocation(string(s))
	if err != nil || len(s) == 0 || strings.EqualFold(string(s), "local") {
		loc = nil
	}
	tzLocations.Store(string(s), loc)
	return loc, loc != nil
}

// TimeZoner is implemented by an Env with a session time zone (the
// session's time_zone); without it the zone is this process's local one.
type TimeZoner interface {
	TimeZone() *time.Location
}

// SessionZone is env's time zone (TimeZoner), time.Local without one.
func SessionZone(env Env) *time.Location {
	if tz, ok := envAs[TimeZoner](env); ok {
		if loc := tz.TimeZone(); loc != nil {
			return loc
		}
	}
	return time.Local
}

// sessionNow is env's statement time in its session zone (TimeZoner; as
// Env.Now gives it without one).
func sessionNow(env Env) time.Time {
	if tz, ok := envAs[TimeZoner](env); ok && tz.TimeZone() != nil {
		return env.Now().In(tz.TimeZone())
	}
	return env.Now()
}

// LocalInstant is the instant whose wall clock in loc is the given one,
// as MySQL maps a local time to a timestamp: a time in a daylight-saving
// gap (02:30 on the night clocks jump from 02:00 to 03:00) is the first
// instant after the gap, the one 03:00 names. A wall clock the fall-back
// repeats is one of its two instants (Go's choice, as in TiDB).
func LocalInstant(year, month, day, hour, minute, second, nsec int, loc *time.Location) time.Time {
	t := time.Date(year, time.Month(month), day, hour, minute, second, nsec, loc)
	if t.Hour() != hour || t.Minute() != minute || t.Day() != day {
		// In a gap: Go normalised with the offset before it, so t lies in
		// the zone period that starts where the gap ends.
		if start, _ := t.ZoneBounds(); !start.IsZero() {
			return start
		}
	}
	return t
}

// buildConvertTZ compiles CONVERT_TZ(dt, from, to): dt read in zone from,
// as a DATETIME in zone to. NULL when an argument is NULL, dt is no date
// or a zone is unknown; a dt whose instant lies outside the TIMESTAMP
// range (1970 to FROM_UNIXTIME's 3001 bound) is returned unconverted, as
// MySQL does.
func buildConvertTZ(name string, args []Expr) (Expr, error) {
	fsp := fspOf(args[0].Type())
	if c := args[0].Type().Class(); c == types.ClassString {
		fsp = 6
		if k, ok := args[0].(*Constant); ok && k.fold().Value.Kind() == types.KindBytes {
			fsp = fracDigits(strings.TrimSpace(string(k.Value.Bytes())))
		}
	}
	return &funcExpr{name: name, args: args, ft: datetimeType(fsp), fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		t, ok := toDateTime(a[0])
		if !ok || zeroDate(t) {
			return types.NullDatum, nil
		}
		from, okF := timeZone(textOf(a[1]))
		to, okT := timeZone(textOf(a[2]))
		if !okF || !okT {
			return types.NullDatum, nil
		}
		tt := LocalInstant(t.year, t.month, t.day, t.hour, t.minute, t.second, t.micro*1000, from)
		if sec := tt.Unix(); sec >= 0 && sec <= maxUnixTime {
			tt = tt.In(to)
			t = dateTime{year: tt.Year(), month: int(tt.Month()), day: tt.Day(), hour: tt.Hour(),
				minute: tt.Minute(), second: tt.Second(), micro: tt.Nanosecond() / 1000}
		}
		return types.NewBytes(appendDateTime(make([]byte, 0, 26), t, fsp)), nil
	}}, nil
}
