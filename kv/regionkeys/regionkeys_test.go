package regionkeys

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
)

func TestRegionRangeChecks(t *testing.T) {
	r := &metapb.Region{Id: 1, StartKey: []byte("b"), EndKey: []byte("d")}
	all := &metapb.Region{Id: 2}
	tests := []struct {
		name       string
		region     *metapb.Region
		start, end string
		inRange    bool
		clamped    string
	}{
		{"inside", r, "b", "c", true, "c"},
		{"to-region-end", r, "c", "", true, "d"},
		{"end-equal", r, "b", "d", true, "d"},
		{"end-beyond", r, "c", "e", false, "d"},
		{"start-before", r, "a", "c", false, "c"},
		{"start-at-end", r, "d", "", false, "d"},
		{"whole-space", all, "", "", true, ""},
		{"whole-space-end", all, "x", "z", true, "z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := CheckRange([]byte(tc.start), []byte(tc.end), tc.region)
			require.Equal(t, tc.inRange, e == nil, "%v", e)
			if e != nil {
				require.NotNil(t, e.GetKeyNotInRegion())
				require.Equal(t, tc.region.GetId(), e.GetKeyNotInRegion().GetRegionId())
			}
			require.Equal(t, tc.clamped, string(ClampEnd([]byte(tc.end), tc.region)))
		})
	}
}
