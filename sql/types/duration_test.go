package types

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		want string // FormatDuration(us, 6)
	}{
		{"12:34:56", true, "12:34:56.000000"},
		{"-12:34:56.7", true, "-12:34:56.700000"},
		{"838:59:59", true, "838:59:59.000000"},
		{"1 02:03:04", true, "26:03:04.000000"},
		{"2 03", true, "51:00:00.000000"},
		{"11:12", true, "11:12:00.000000"},
		{"112233", true, "11:22:33.000000"},
		{"123", true, "00:01:23.000000"},
		{"1.0000005", true, "00:00:01.000001"},
		{"2011-11-20 21:27:37.5", true, "21:27:37.500000"},
		{"2011-11-20", true, "00:00:00.000000"},
		{"0000-00-00", true, "00:00:00.000000"},
		{"0000-00-00 01:02:03", true, "01:02:03.000000"},
		{"2011-11-20 25:00:00", false, ""},
		{"12:60:00", false, ""},
		{"12:00:60", false, ""},
		{"1:2:3:4", false, ""},
		{"abc", false, ""},
		{"", false, ""},
		{"-", false, ""},
		{"12:3a", false, ""},
	} {
		us, ok := ParseDuration(c.in)
		require.Equal(t, c.ok, ok, c.in)
		if ok {
			require.Equal(t, c.want, FormatDuration(us, 6), c.in)
		}
	}
}

func TestRoundDuration(t *testing.T) {
	require.Equal(t, "12:34:57", FormatDuration(RoundDuration(45296_500000, 0), 0))
	require.Equal(t, "-12:34:57", FormatDuration(RoundDuration(-45296_500000, 0), 0))
	require.Equal(t, "00:00:00.1", FormatDuration(RoundDuration(149999, 1), 1))
	d, clipped, ok := CastDuration(Datum(NewString("900:00:00")), 0)
	require.True(t, ok)
	require.True(t, clipped)
	require.Equal(t, "838:59:59", string(d.Bytes()))
	d, clipped, ok = CastDuration(Datum(NewString("-12:00:00")), 0)
	require.True(t, ok)
	require.False(t, clipped)
	require.Equal(t, "-12:00:00", string(d.Bytes()))
}
