package types

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"
)

func TestTemporalConstant(t *testing.T) {
	date := FieldType{Tp: mysql.TypeDate}
	dt0 := FieldType{Tp: mysql.TypeDatetime}
	dt3 := FieldType{Tp: mysql.TypeDatetime, Decimal: 3}
	for _, tc := range []struct {
		ft    FieldType
		in    string
		canon string
		exact bool
		ok    bool
	}{
		{date, "2024-01-02", "2024-01-02", true, true},
		{date, "2024-1-2", "2024-01-02", true, true},
		{date, "20240102", "2024-01-02", true, true},
		{date, "2024-01-02 00:00:00", "2024-01-02", true, true},
		{date, "2024-01-02 12:00", "2024-01-02", false, true},
		{dt0, "2024-1-2 3:4:5", "2024-01-02 03:04:05", true, true},
		{dt0, "2024-01-02", "2024-01-02 00:00:00", true, true},
		{dt0, "2024-01-02 10:00:00.5", "2024-01-02 10:00:00", false, true},
		{dt3, "2024-01-02 10:00:00.5", "2024-01-02 10:00:00.500", true, true},
		{dt3, "2024-01-02 10:00:00.5004", "2024-01-02 10:00:00.500", false, true},
		{date, "not a date", "", false, false},
		{dt0, "12:00:00", "", false, false},
	} {
		canon, exact, ok := TemporalConstant(tc.ft, tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		if ok {
			require.Equal(t, tc.canon, canon, tc.in)
			require.Equal(t, tc.exact, exact, tc.in)
		}
	}
}

// TestDateParts: zero dates and dates with a zero month or day parse,
// format canonically (so they round-trip through storage and sort before
// every other date, bytewise), and are told apart for sql_mode's
// NO_ZERO_DATE / NO_ZERO_IN_DATE.
func TestDateParts(t *testing.T) {
	date := FieldType{Tp: mysql.TypeDate}
	dt := FieldType{Tp: mysql.TypeDatetime}
	dt2 := FieldType{Tp: mysql.TypeDatetime, Decimal: 2}
	for _, tc := range []struct {
		ft                   FieldType
		in, out              string
		zeroDate, zeroInDate bool
	}{
		{date, "0000-00-00", "0000-00-00", true, false},
		{date, "0", "0000-00-00", true, false},
		{date, "00000000", "0000-00-00", true, false},
		{dt, "0000-00-00 00:00:00", "0000-00-00 00:00:00", true, false},
		{dt, "0000-00-00", "0000-00-00 00:00:00", true, false},
		{dt2, "0000-00-00 00:00:00", "0000-00-00 00:00:00.00", true, false},
		{date, "2020-00-15", "2020-00-15", false, true},
		{date, "2020-01-00", "2020-01-00", false, true},
		{date, "2020-1-0", "2020-01-00", false, true},
		{date, "20200100", "2020-01-00", false, true},
		{dt, "0000-00-00 01:02:03", "0000-00-00 01:02:03", false, true},
		{dt2, "2020-00-00T1:2:3.456", "2020-00-00 01:02:03.45", false, true},
		{dt, "20200015102030", "2020-00-15 10:20:30", false, true},
		{dt, "2020-00-00 1", "2020-00-00 01:00:00", false, true}, // an hour alone (relaxed)
		{date, "0000-01-01", "0000-01-01", false, false},
		{date, "2024-02-29", "2024-02-29", false, false},
	} {
		v, err := tc.ft.Convert(NewString(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.out, string(v.Bytes()), tc.in)
		zd, zin := ZeroParts(v.Bytes())
		require.Equal(t, tc.zeroDate, zd, tc.in)
		require.Equal(t, tc.zeroInDate, zin, tc.in)
	}
	for _, bad := range []string{"2020-13-00", "2020-00-32", "2023-02-29", "0000-00-00 24:00:00", "abc", "123"} {
		_, err := date.Convert(NewString(bad))
		if bad == "0000-00-00 24:00:00" {
			_, err = dt.Convert(NewString(bad))
		}
		require.Error(t, err, bad)
	}
	v, err := date.Convert(NewInt(0))
	require.NoError(t, err)
	require.Equal(t, "0000-00-00", string(v.Bytes()))
	require.Equal(t, "0000-00-00 00:00:00.00", string(ZeroValue(dt2).Bytes()))

	canon, exact, ok := TemporalConstant(date, "0000-00-00")
	require.True(t, ok)
	require.True(t, exact)
	require.Equal(t, "0000-00-00", canon)
	canon, exact, ok = TemporalConstant(dt, "2020-00-00 10:00:00.5")
	require.True(t, ok)
	require.False(t, exact)
	require.Equal(t, "2020-00-00 10:00:00", canon)
}

// TestParseInvalidDate: ALLOW_INVALID_DATES takes a day its month does
// not have, never a month past 12 or a day past 31; ParseDateParts keeps
// refusing them.
func TestParseInvalidDate(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "": refused
		valid    bool   // ParseDateParts takes it too
	}{
		{"2004-02-31", "2004-02-31", false},
		{"2004-04-31 10:20:30", "2004-04-31 10:20:30", false},
		{"20050230112233", "2005-02-30 11:22:33", false},
		{"2004-02-29", "2004-02-29", true},
		{"2004-00-31", "2004-00-31", true},
		{"2004-13-01", "", false},
		{"2004-02-32", "", false},
		{"2004-02-30 24:00:00", "", false},
		{"nonsense", "", false},
	} {
		p, ok := ParseInvalidDate(c.in)
		if c.want == "" {
			require.False(t, ok, c.in)
			continue
		}
		require.True(t, ok, c.in)
		tp := mysql.TypeDatetime
		if len(c.want) == 10 {
			tp = mysql.TypeDate
		}
		require.Equal(t, c.want, p.Format(tp, 0), c.in)
		_, ok = ParseDateParts(c.in)
		require.Equal(t, c.valid, ok, c.in)
	}
}

// TestParseRelaxed: MySQL's relaxed syntax, any punctuation between the
// parts and between the date and the time, a fraction only after the
// seconds; never letters, a trailing delimiter or a time
// zone.
func TestParseRelaxed(t *testing.T) {
	for _, c := range []struct{ in, want string }{ // want "": refused
		{"2020-10-22-16", "2020-10-22 16:00:00.000000"},
		{"2020-10-22 16-31", "2020-10-22 16:31:00.000000"},
		{"2020-10-22 16:31-15", "2020-10-22 16:31:15.000000"},
		{"2020.10-22", "2020-10-22 00:00:00.000000"},
		{"2020-10.22-16", "2020-10-22 16:00:00.000000"},
		{"2020-10-22 16.31-15", "2020-10-22 16:31:15.000000"},
		{"2020-10:22", "2020-10-22 00:00:00.000000"},
		{"2020/1/2T3@4#5.25", "2020-01-02 03:04:05.250000"},
		{"20-10-22", "2020-10-22 00:00:00.000000"},
		{"99-10-22", "1999-10-22 00:00:00.000000"},
		{"99^10^22", ""}, // two-digit years only with '-'
		{"12:00:00", ""}, // a time is no date
		{"2020-10-22-", ""},
		{"2020-10", ""},
		{"2020-10-22 16:31:15-10", ""},
		{"2020-10-22T16:31:15Z", ""},
		{"2020-1x-22", ""},
		{"20201-10-22", ""},
		{"2020-02-30", ""},
	} {
		p, ok := ParseDateParts(c.in)
		if c.want == "" {
			require.False(t, ok, c.in)
			continue
		}
		require.True(t, ok, c.in)
		require.Equal(t, c.want, p.Format(mysql.TypeDatetime, 6), c.in)
	}
}
