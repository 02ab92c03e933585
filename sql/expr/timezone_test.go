package expr_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/expr"
)

func TestParseTimeZone(t *testing.T) {
	for _, c := range []struct {
		in, name string
		off      int // the offset in January 2024, seconds east of UTC
		ok       bool
	}{
		{"SYSTEM", "SYSTEM", 0, true},
		{"system", "SYSTEM", 0, true},
		{"+05:30", "+05:30", 19800, true},
		{"+5:30", "+05:30", 19800, true},
		{"-08:00", "-08:00", -28800, true},
		{"-8:00", "-08:00", -28800, true},
		{"+00:00", "+00:00", 0, true},
		{"+14:00", "+14:00", 50400, true},
		{"-13:59", "-13:59", -50340, true},
		{"UTC", "UTC", 0, true},
		{"Europe/Berlin", "Europe/Berlin", 3600, true},
		{"Asia/Kolkata", "Asia/Kolkata", 19800, true},
		{"+14:01", "", 0, false},
		{"-14:00", "", 0, false},
		{"+05:60", "", 0, false},
		{"+005:00", "", 0, false},
		{"+05:3", "", 0, false},
		{"05:30", "", 0, false},
		{"+05", "", 0, false},
		{"", "", 0, false},
		{"Local", "", 0, false},
		{"local", "", 0, false},
		{"Mars/Olympus", "", 0, false},
		{"../etc/passwd", "", 0, false},
	} {
		loc, name, ok := expr.ParseTimeZone(c.in)
		require.Equal(t, c.ok, ok, c.in)
		if !ok {
			continue
		}
		require.Equal(t, c.name, name, c.in)
		if c.in == "SYSTEM" || c.in == "system" {
			require.Equal(t, time.Local, loc)
			continue
		}
		_, off := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC).In(loc).Zone()
		require.Equal(t, c.off, off, c.in)
	}
}

func TestLocalInstant(t *testing.T) {
	berlin, _, ok := expr.ParseTimeZone("Europe/Berlin")
	require.True(t, ok)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, s)
		require.NoError(t, err)
		return v
	}
	for _, c := range []struct {
		y, mo, d, h, mi, s int
		want                string // UTC
	}{
		{2024, 1, 1, 1, 0, 0, "2024-01-01 00:00:00"},
		{2024, 7, 1, 2, 0, 0, "2024-07-01 00:00:00"},
		// The spring-forward gap (02:00 to 03:00 on 2024-03-31): its
		// times are the instant 03:00 CEST names, as MySQL maps them.
		{2024, 3, 31, 1, 59, 59, "2024-03-31 00:59:59"},
		{2024, 3, 31, 2, 0, 0, "2024-03-31 01:00:00"},
		{2024, 3, 31, 2, 30, 0, "2024-03-31 01:00:00"},
		{2024, 3, 31, 3, 0, 0, "2024-03-31 01:00:00"},
		{2024, 3, 31, 3, 0, 1, "2024-03-31 01:00:01"},
	} {
		got := expr.LocalInstant(c.y, c.mo, c.d, c.h, c.mi, c.s, 0, berlin)
		require.Equal(t, utc(c.want), got.UTC(), "%v", c)
	}
	// A fall-back repeated clock is one of its two instants.
	got := expr.LocalInstant(2024, 10, 27, 2, 30, 0, 0, berlin).UTC()
	require.Contains(t, []time.Time{utc("2024-10-27 00:30:00"), utc("2024-10-27 01:30:00")}, got)
}
