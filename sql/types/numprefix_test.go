package types

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNumericPrefix(t *testing.T) {
	for _, c := range []struct {
		in    string
		num   string
		whole bool
	}{
		{"12", "12", true},
		{" 12 ", "12", true},
		{"", "", true},
		{"   ", "", true},
		{"12abc", "12", false},
		{"abc", "", false},
		{"-1.5e3x", "-1.5e3", false},
		{"1e", "1", false},
		{"1e+", "1", false},
		{".5", ".5", true},
		{"5.", "5.", true},
		{".", "", false},
		{"+", "", false},
		{"1a", "1", false},
		{"inf", "", false},
		{"0x10", "0", false},
		{"\t7\n", "7", true},
	} {
		num, whole := NumericPrefix([]byte(c.in))
		require.Equal(t, c.num, string(num), c.in)
		require.Equal(t, c.whole, whole, c.in)
	}
}

func TestIntPrefix(t *testing.T) {
	for _, c := range []struct {
		in    string
		mag   uint64
		neg   bool
		whole bool
	}{
		{"12", 12, false, true},
		{" -12", 12, true, true},
		{"+7", 7, false, true},
		{"12abc", 12, false, false},
		{"1.5", 1, false, false},
		{"1e3", 1, false, false},
		{"12 ", 12, false, false},
		{"", 0, false, false},
		{"-", 0, true, false},
		{"18446744073709551615", math.MaxUint64, false, true},
		{"18446744073709551616", math.MaxUint64, false, false},
	} {
		mag, neg, whole := IntPrefix([]byte(c.in))
		require.Equal(t, c.mag, mag, c.in)
		require.Equal(t, c.neg, neg, c.in)
		require.Equal(t, c.whole, whole, c.in)
	}
}

func TestToFloatPrefix(t *testing.T) {
	for _, c := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"12abc", 12, true},
		{"1e5x", 1e5, true},
		{" 2.5 ", 2.5, true},
		{"abc", 0, false},
		{"inf", 0, false},
		{"nan", 0, false},
	} {
		f, ok := ToFloat(NewString(c.in))
		require.Equal(t, c.f, f, c.in)
		require.Equal(t, c.ok, ok, c.in)
	}
}
