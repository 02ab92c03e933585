package expr_test

import (
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
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
		want               string // UTC
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

// zoned is the test env in a session time zone.
type zoned struct {
	env
	loc *time.Location
}

func (z zoned) TimeZone() *time.Location { return z.loc }

func TestTimestampConversions(t *testing.T) {
	kolkata, _, _ := expr.ParseTimeZone("+05:30")
	berlin, _, _ := expr.ParseTimeZone("Europe/Berlin")
	for _, c := range []struct {
		in   types.Datum
		loc  *time.Location
		utc  string // TimestampToUTC
		back string // TimestampToLocal(utc, fsp 3)
	}{
		{types.NewString("2024-01-01 05:30:00"), kolkata, "2024-01-01 00:00:00", "2024-01-01 05:30:00.000"},
		{types.NewString("2024-01-01 05:30:00.25"), kolkata, "2024-01-01 00:00:00.250000", "2024-01-01 05:30:00.250"},
		{types.NewString("2024-01-01"), kolkata, "2023-12-31 18:30:00", "2024-01-01 00:00:00.000"},
		{types.NewInt(20240101053000), kolkata, "2024-01-01 00:00:00", "2024-01-01 05:30:00.000"},
		{types.NewString("2024-07-01 12:00:00"), berlin, "2024-07-01 10:00:00", "2024-07-01 12:00:00.000"},
		{types.NewString("2024-03-31 02:30:00"), berlin, "2024-03-31 01:00:00", "2024-03-31 03:00:00.000"}, // the gap
		{types.NewString("0000-00-00 00:00:00"), kolkata, "0000-00-00 00:00:00", "0000-00-00 00:00:00"},
		{types.NewString("not a date"), kolkata, "not a date", "not a date"},
		{types.NullDatum, kolkata, "NULL", "NULL"},
		{types.NewString("2024-01-01 05:30:00"), nil, "2024-01-01 05:30:00", "2024-01-01 05:30:00"},
	} {
		utc := expr.TimestampToUTC(c.in, c.loc)
		require.Equal(t, c.utc, utc.String(), "%v", c.in)
		require.Equal(t, c.back, expr.TimestampToLocal(utc, c.loc, 3).String(), "%v", c.in)
	}
	ts := types.FieldType{Tp: mysql.TypeTimestamp}
	dt := types.FieldType{Tp: mysql.TypeDatetime}
	v := types.NewString("2024-01-01 05:30:00")
	require.Equal(t, "2024-01-01 00:00:00", expr.WriteDatum(v, dt, ts, kolkata).String())
	require.Equal(t, "2024-01-01 11:00:00", expr.WriteDatum(v, ts, dt, kolkata).String())
	require.Equal(t, v, expr.WriteDatum(v, ts, ts, kolkata))
	require.Equal(t, v, expr.WriteDatum(v, dt, dt, kolkata))
	require.Equal(t, v, expr.WriteDatum(v, dt, ts, nil))
}

func TestTimestampZone(t *testing.T) {
	for _, c := range []struct {
		zone string
		utc  bool
	}{{"UTC", true}, {"+00:00", true}, {"-00:00", true}, {"+05:30", false}, {"Europe/London", false}, {"Europe/Berlin", false}} {
		loc, _, ok := expr.ParseTimeZone(c.zone)
		require.True(t, ok)
		require.Equal(t, c.utc, expr.TimestampZone(zoned{loc: loc}) == nil, c.zone)
	}
}

// TestTimestampCompile: in a zone that is not UTC, a constant compared
// with a TIMESTAMP becomes UTC (and the comparison stays pushable), and
// anything else reading a TIMESTAMP reads it in the zone (not pushable).
func TestTimestampCompile(t *testing.T) {
	kolkata, _, _ := expr.ParseTimeZone("+05:30")
	cols := []expr.SchemaColumn{
		{Table: "t", Name: "ts", Type: types.FieldType{Tp: mysql.TypeTimestamp, Flen: 19}},
		{Table: "t", Name: "dt", Type: types.FieldType{Tp: mysql.TypeDatetime, Flen: 19}},
	}
	r := []types.Datum{types.NewString("2024-01-01 00:00:00"), types.NewString("2024-01-01 05:30:00")}
	for _, c := range []struct {
		expr     string
		want     string
		pushable bool
	}{
		{"ts = '2024-01-01 05:30:00'", "1", true},
		{"'2024-01-01 05:30:00' = ts", "1", true},
		{"ts < '2024-01-01 05:30:01'", "1", true},
		{"ts BETWEEN '2024-01-01' AND '2024-01-01 05:30:00'", "1", true},
		{"ts IN ('2024-01-01 00:00:00', '2024-01-01 05:30:00')", "1", true},
		{"ts = dt", "1", false},
		{"ts IN (dt, '2024-01-01 00:00:00')", "1", false},
		{"HOUR(ts)", "5", false},
		{"CAST(ts AS CHAR)", "2024-01-01 05:30:00", false},
		{"ts LIKE '%05:30%'", "1", false},
		{"CASE WHEN 1 THEN ts ELSE dt END", "2024-01-01 05:30:00", false},
		{"CASE WHEN 1 THEN ts ELSE ts END", "2024-01-01 00:00:00", true}, // a TIMESTAMP: UTC, shown converted
		{"UNIX_TIMESTAMP(ts)", "1704067200", false},
		{"UNIX_TIMESTAMP(dt)", "1704067200", false},
	} {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: cols, Env: zoned{loc: kolkata}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(r)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
		require.Equal(t, c.pushable, expr.Pushable(e), c.expr)
	}
}
