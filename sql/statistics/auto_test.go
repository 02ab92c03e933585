package statistics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNeedsAnalyze(t *testing.T) {
	analyzed := &Table{Count: 2000}
	off := AutoSettings{Enabled: false, Ratio: 0.5}
	for _, tc := range []struct {
		name string
		st   *Table
		d    Delta
		s    AutoSettings
		want bool
	}{
		{"small never analyzed table", nil, Delta{Count: 999, Modify: 999}, DefaultAutoSettings, false},
		{"never analyzed, 1000 rows", nil, Delta{Count: 1000, Modify: 1000}, DefaultAutoSettings, true},
		{"never analyzed, nothing written since", nil, Delta{Count: 5000}, DefaultAutoSettings, false},
		{"below the ratio", analyzed, Delta{Count: 2000, Modify: 1000}, DefaultAutoSettings, false},
		{"above the ratio", analyzed, Delta{Count: 2000, Modify: 1001}, DefaultAutoSettings, true},
		{"ratio 0.1", analyzed, Delta{Count: 2000, Modify: 201}, AutoSettings{Enabled: true, Ratio: 0.1}, true},
		{"shrunk below the minimum", analyzed, Delta{Count: 500, Modify: 1500}, DefaultAutoSettings, false},
		{"disabled", nil, Delta{Count: 5000, Modify: 5000}, off, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, NeedsAnalyze(tc.st, tc.d, tc.s) != "")
		})
	}
}
