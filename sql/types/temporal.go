package types

import (
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// IsDateOrDatetime reports whether ft is DATE, DATETIME or TIMESTAMP: the
// temporal types whose canonical text orders as time does.
func IsDateOrDatetime(ft FieldType) bool {
	switch ft.Tp {
	case mysql.TypeDate, mysql.TypeNewDate, mysql.TypeDatetime, mysql.TypeTimestamp:
		return true
	}
	return false
}

// IsDate reports whether tp is DATE (either of its type codes).
func IsDate(tp byte) bool { return tp == mysql.TypeDate || tp == mysql.TypeNewDate }

// TemporalConstant converts a string s compared with a value of ft (DATE,
// DATETIME or TIMESTAMP) to ft's canonical text, as MySQL compares a
// temporal column with a string: as times, so '2024-1-2' equals DATE
// '2024-01-02' and DATETIME '2024-01-02 00:00:00'. canon is s truncated to
// ft's precision (the day for DATE, Decimal fractional digits otherwise);
// exact reports that nothing was cut, else s lies strictly between canon
// and the next value of ft. ok is false when s is not a date or datetime.
func TemporalConstant(ft FieldType, s string) (canon string, exact, ok bool) {
	t, ok := ParseTime(s)
	if !ok {
		p, ok := ParseDateParts(s) // a zero date, or zero month or day
		if !ok {
			return "", false, false
		}
		q := p
		if IsDate(ft.Tp) {
			q.Hour, q.Minute, q.Second, q.Micro = 0, 0, 0, 0
		} else {
			unit := 1
			for range 6 - min(max(ft.Decimal, 0), 6) {
				unit *= 10
			}
			q.Micro -= q.Micro % unit
		}
		return q.Format(ft.Tp, ft.Decimal), q == p, true
	}
	var tc time.Time
	if IsDate(ft.Tp) {
		tc = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	} else {
		fsp := min(max(ft.Decimal, 0), 6)
		unit := time.Second
		for range fsp {
			unit /= 10
		}
		tc = t.Truncate(unit)
	}
	return FormatTime(tc, ft.Tp, ft.Decimal), tc.Equal(t), true
}

// timeLayoutsLoose are MySQL's date/datetime literals with one-digit
// months, days and time parts ('2024-1-2 3:4:5'); Go's non-zero-padded
// layout elements accept one or two digits.
var timeLayoutsLoose = []string{
	"2006-1-2 15:4:5.999999999",
	"2006-1-2 15:4:5",
	"2006-1-2 15:4",
	"2006-1-2",
}

func parseLoose(s string) (time.Time, bool) {
	if !strings.Contains(s, "-") {
		return time.Time{}, false
	}
	for _, l := range timeLayoutsLoose {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// DateParts is a DATE or DATETIME broken down as MySQL keeps it: besides
// the dates time.Time holds, the zero date (every part 0) and dates with
// a zero month or day ('2020-00-15', '2020-01-00'), which MySQL stores
// unless sql_mode's NO_ZERO_DATE / NO_ZERO_IN_DATE refuse them (the
// caller's check: ZeroParts).
type DateParts struct {
	Year, Month, Day, Hour, Minute, Second, Micro int
}

// ParseDateParts parses s as ParseTime does, and also the dates with
// zero parts ParseTime refuses: "Y-M-D[ H:M[:S[.frac]]]" (or 'T' before
// the time) with a zero month or day, "YYYYMMDD", "YYYYMMDDHHMMSS", and
// "0" (the integer 0 MySQL takes as the zero date).
func ParseDateParts(s string) (DateParts, bool) {
	p, ok := parseDateParts(s)
	return p, ok && p.valid()
}

// ParseInvalidDate parses s as ParseDateParts does, and also accepts a
// day that its month does not have ('2004-02-31', '2004-04-31'): any
// month 1–12 and day 1–31, as MySQL stores DATE and DATETIME values
// under sql_mode ALLOW_INVALID_DATES.
func ParseInvalidDate(s string) (DateParts, bool) {
	p, ok := parseDateParts(s)
	return p, ok && p.inRange()
}

func parseDateParts(s string) (DateParts, bool) {
	s = strings.TrimSpace(s)
	if t, ok := ParseTime(s); ok {
		return DateParts{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond() / 1000}, true
	}
	var p DateParts
	if s == "0" {
		return p, true
	}
	if allDigits(s) {
		switch len(s) {
		case 8, 14:
			p.Year, p.Month, p.Day = atoi(s[:4]), atoi(s[4:6]), atoi(s[6:8])
			if len(s) == 14 {
				p.Hour, p.Minute, p.Second = atoi(s[8:10]), atoi(s[10:12]), atoi(s[12:14])
			}
			return p, true
		}
		return p, false
	}
	if p, ok := parseDelimited(s); ok {
		return p, true
	}
	return parseRelaxed(s)
}

// parseDelimited parses "Y-M-D[( |T)H:M[:S[.frac]]]".
func parseDelimited(s string) (DateParts, bool) {
	var p DateParts
	date, clock := s, ""
	if i := strings.IndexAny(s, " T"); i >= 0 {
		date, clock = s[:i], strings.TrimLeft(s[i+1:], " ")
	}
	ymd := strings.Split(date, "-")
	if len(ymd) != 3 || !partOK(ymd[0], 4) || !partOK(ymd[1], 2) || !partOK(ymd[2], 2) {
		return p, false
	}
	p.Year, p.Month, p.Day = atoi(ymd[0]), atoi(ymd[1]), atoi(ymd[2])
	if len(ymd[0]) == 2 {
		p.Year = twoDigitYear(p.Year)
	}
	if clock != "" {
		frac := ""
		if i := strings.IndexByte(clock, '.'); i >= 0 {
			clock, frac = clock[:i], clock[i+1:]
			if frac == "" || !allDigits(frac) {
				return p, false
			}
		}
		hms := strings.Split(clock, ":")
		if len(hms) < 2 || len(hms) > 3 {
			return p, false
		}
		for _, h := range hms {
			if !partOK(h, 2) {
				return p, false
			}
		}
		p.Hour, p.Minute = atoi(hms[0]), atoi(hms[1])
		if len(hms) == 3 {
			p.Second = atoi(hms[2])
		}
		frac = (frac + "000000")[:6]
		p.Micro = atoi(frac)
	}
	return p, true
}

// parseRelaxed parses MySQL's relaxed date and datetime syntax: any
// punctuation character delimits the date's parts and the time's
// ('2020.10-22', '2020-10-22 16-31'), and one ('-', ':', '.', ...), a
// space or 'T' separates the date from the time ('2020-10-22-16' is 16:00);
// a fraction follows the seconds after '.'. The year has four digits
// here (a two-digit one only in 'YY-MM-DD', parseDelimited: '12:00:00'
// stays no date). A trailing time zone is not taken.
func parseRelaxed(s string) (DateParts, bool) {
	var p DateParts
	var parts [6]int // year, month, day, hour, minute, second
	n, i := 0, 0
	for {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		digits := j - i
		if digits == 0 || digits > 2 && n > 0 || n == 0 && digits != 4 {
			return p, false
		}
		parts[n] = atoi(s[i:j])
		n++
		i = j
		if i == len(s) || n == 6 {
			break
		}
		switch c := s[i]; {
		case n == 3 && (c == ' ' || c == 'T'):
			for i++; i < len(s) && s[i] == ' '; i++ {
			}
		case isPunct(c):
			i++
		default:
			return p, false
		}
	}
	if n < 3 {
		return p, false
	}
	if i < len(s) { // only a fraction may follow the seconds
		if n != 6 || s[i] != '.' || i+1 == len(s) || !allDigits(s[i+1:]) {
			return p, false
		}
		p.Micro = atoi((s[i+1:] + "000000")[:6])
	}
	p.Year, p.Month, p.Day, p.Hour, p.Minute, p.Second = parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]
	return p, true
}

// twoDigitYear is the year MySQL reads two digits as: 2000-2069 for
// 00-69, 1970-1999 for 70-99.
func twoDigitYear(y int) int {
	if y < 70 {
		return 2000 + y
	}
	return 1900 + y
}

// isPunct reports whether c is an ASCII punctuation character.
func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z')
}

func partOK(s string, most int) bool { return s != "" && len(s) <= most && allDigits(s) }

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// valid reports whether p is a date MySQL stores: parts in range, and a
// day that exists in its month unless the month or day is 0.
func (p DateParts) valid() bool {
	if !p.inRange() {
		return false
	}
	if p.Month == 0 || p.Day == 0 {
		return true
	}
	return p.Day <= time.Date(p.Year, time.Month(p.Month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// inRange reports whether every part of p is in its range (a month to
// 12, a day to 31), whatever days its month has.
func (p DateParts) inRange() bool {
	return p.Month <= 12 && p.Day <= 31 && p.Hour <= 23 && p.Minute <= 59 && p.Second <= 59
}

// Format renders p as DATE text, or DATETIME text with fsp fractional
// digits (p's microseconds cut to them), as FormatTime does.
func (p DateParts) Format(tp byte, fsp int) string {
	b := make([]byte, 0, 26)
	b = appendPadded(b, p.Year, 4)
	b = appendPadded(append(b, '-'), p.Month, 2)
	b = appendPadded(append(b, '-'), p.Day, 2)
	if IsDate(tp) {
		return string(b)
	}
	b = appendPadded(append(b, ' '), p.Hour, 2)
	b = appendPadded(append(b, ':'), p.Minute, 2)
	b = appendPadded(append(b, ':'), p.Second, 2)
	if fsp > 0 {
		b = append(b, '.')
		b = append(b, strconv.Itoa(1000000 + p.Micro)[1:1+min(fsp, 6)]...)
	}
	return string(b)
}

// appendPadded appends v with leading zeros to n digits.
func appendPadded(b []byte, v, n int) []byte {
	s := strconv.Itoa(v)
	for range n - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// ZeroParts reports whether canonical DATE / DATETIME text b is the zero
// date (every part 0: what NO_ZERO_DATE refuses) or a date with a zero
// month or day that is not the zero date (NO_ZERO_IN_DATE's).
func ZeroParts(b []byte) (zeroDate, zeroInDate bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return false, false
	}
	zeroDate = true
	for _, c := range b {
		if c >= '1' && c <= '9' {
			zeroDate = false
			break
		}
	}
	if zeroDate {
		return true, false
	}
	return false, string(b[5:7]) == "00" || string(b[8:10]) == "00"
}

// ZeroValue is ft's zero value ('0000-00-00', '0000-00-00 00:00:00[.0…]'):
// what MySQL stores, outside strict mode, for a date it cannot keep.
func ZeroValue(ft FieldType) Datum {
	return NewString(DateParts{}.Format(ft.Tp, ft.Decimal))
}
