package types

import (
	"math"
	"strconv"
	"strings"
)

// TIME values (MySQL's duration type) are signed microsecond counts in
// -838:59:59 .. 838:59:59; they are stored and computed on as their
// canonical text, "[-]HH:MM:SS[.ffffff]" with the column's fsp digits.

// MaxDuration is 838:59:59 in microseconds, the bound of a TIME value.
const MaxDuration = (838*3600 + 59*60 + 59) * 1_000_000

// ParseDuration parses the TIME literals MySQL accepts: "[-][D ]HH:MM:SS[.f]",
// "HH:MM", "[D ]HH", the colon-less "[H..H]MMSS[.f]" numbers, and a full
// DATETIME whose time part is taken. ok is false for anything else (minutes
// or seconds above 59, stray characters). The result may lie outside
// ±MaxDuration; the caller clips or rejects it.
func ParseDuration(s string) (us int64, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) >= 10 && s[4] == '-' && s[7] == '-' && allDigits(s[:4]+s[5:7]+s[8:10]) {
		// A DATE or DATETIME (zero dates too): its time of day.
		if len(s) == 10 {
			return 0, true
		}
		if s[10] != ' ' && s[10] != 'T' {
			return 0, false
		}
		us, ok := ParseDuration(s[11:])
		if !ok || us < 0 || us >= 24*3600e6 || !strings.Contains(s[11:], ":") {
			return 0, false
		}
		return us, true
	}
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	if s == "" {
		return 0, false
	}
	frac := int64(0)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		f := s[i+1:]
		s = s[:i]
		if !allDigits(f) {
			return 0, false
		}
		// Round to microseconds, half up.
		digits := (f + "0000000")[:7]
		v, _ := strconv.ParseInt(digits, 10, 64)
		frac = (v + 5) / 10
	}
	var days, h, m, sec int64
	if i := strings.IndexByte(s, ' '); i >= 0 {
		d, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || d < 0 || d > 34 {
			return 0, false
		}
		days, s = d, strings.TrimSpace(s[i+1:])
	}
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return 0, false
		}
		var vals [3]int64
		for i, p := range parts {
			if !allDigits(p) || p == "" {
				return 0, false
			}
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return 0, false
			}
			vals[i] = v
		}
		h, m, sec = vals[0], vals[1], vals[2]
	} else {
		if !allDigits(s) || s == "" {
			return 0, false
		}
		if days > 0 { // "D HH"
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, false
			}
			h = v
		} else {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, false
			}
			h, m, sec = v/10000, v/100%100, v%100
		}
	}
	if m > 59 || sec > 59 || h > math.MaxInt32 {
		return 0, false
	}
	us = ((days*24+h)*3600+m*60+sec)*1_000_000 + frac
	if neg {
		us = -us
	}
	return us, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// RoundDuration rounds us (microseconds) half away from zero to fsp digits.
func RoundDuration(us int64, fsp int) int64 {
	if fsp >= 6 {
		return us
	}
	unit := int64(math.Pow10(6 - max(fsp, 0)))
	neg := us < 0
	if neg {
		us = -us
	}
	us = (us + unit/2) / unit * unit
	if neg {
		return -us
	}
	return us
}

// FormatDuration renders us as "[-]HH:MM:SS" plus fsp fractional digits.
func FormatDuration(us int64, fsp int) string {
	return string(AppendDuration(nil, us, fsp))
}

// AppendDuration appends FormatDuration(us, fsp) to b.
func AppendDuration(b []byte, us int64, fsp int) []byte {
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	secs := us / 1_000_000
	h, m, s := secs/3600, secs/60%60, secs%60
	if h < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, h, 10)
	b = append(b, ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10))
	if fsp > 0 {
		f := strconv.FormatInt(us%1_000_000+1_000_000, 10)[1:] // 6 digits
		b = append(b, '.')
		b = append(b, f[:min(fsp, 6)]...)
	}
	return b
}

// durationFromDatum reads a TIME value from a stored or computed datum:
// text is parsed, integers are HHMMSS, floats HHMMSS.ffffff.
func durationFromDatum(d Datum) (int64, bool) {
	if d.IsNull() {
		return 0, false
	}
	s := string(AppendText(nil, d, nil))
	return ParseDuration(s)
}

// convertDuration implements Convert for TIME columns: an unparsable or
// out-of-range value is ConvBadValue (MySQL's strict mode answers both with
// 1292 "Incorrect time value").
func (ft FieldType) convertDuration(d Datum) (Datum, error) {
	us, ok := durationFromDatum(d)
	if !ok {
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "time"}
	}
	us = RoundDuration(us, ft.Decimal)
	if us > MaxDuration || us < -MaxDuration {
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "time"}
	}
	return NewBytes(AppendDuration(nil, us, ft.Decimal)), nil
}

// CastDuration is CAST(d AS TIME(fsp)): out-of-range values are clipped to
// ±838:59:59 as MySQL does (clipped is true: a warning there); ok is
// false for values that are not times at all (CAST gives NULL).
func CastDuration(d Datum, fsp int) (r Datum, clipped, ok bool) {
	us, ok := durationFromDatum(d)
	if !ok {
		return d, false, false
	}
	us = RoundDuration(us, fsp)
	c := max(min(us, MaxDuration), -MaxDuration)
	return NewBytes(AppendDuration(nil, c, fsp)), c != us, true
}
