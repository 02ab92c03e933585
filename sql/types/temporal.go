package types

import (
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
		return "", false, false
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
