package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/promtext"
)

const page = `# TYPE strata_sql_errors_total counter
strata_sql_errors_total{code="1062"} 3
strata_sql_errors_total{code="1205"} 1
# TYPE strata_raftstore_regions gauge
strata_raftstore_regions{type="leaders"} 7
strata_raftstore_regions{type="peers"} 20
# TYPE strata_x_seconds histogram
strata_x_seconds_bucket{le="1"} 2
strata_x_seconds_bucket{le="+Inf"} 3
strata_x_seconds_sum 4.5
strata_x_seconds_count 3
`

func TestWrite(t *testing.T) {
	f, err := promtext.Parse(strings.NewReader(page))
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		match []string
		sum   bool
		want  string
	}{
		{"strata_sql_errors_total", nil, false, "strata_sql_errors_total{code=\"1062\"} 3\nstrata_sql_errors_total{code=\"1205\"} 1\n"},
		{"strata_raftstore_regions", []string{"type=leaders"}, false, "strata_raftstore_regions{type=\"leaders\"} 7\n"},
		{"strata_raftstore_regions", []string{"type=leaders"}, true, "7\n"},
		{"strata_raftstore_regions", nil, true, "27\n"},
		{"strata_x_seconds_sum", nil, true, "4.5\n"},
		{"strata_missing", nil, false, ""},
		{"strata_missing", nil, true, "0\n"},
	} {
		var b strings.Builder
		require.NoError(t, write(&b, f, tc.name, tc.match, tc.sum))
		require.Equal(t, tc.want, b.String(), "%s %v sum=%v", tc.name, tc.match, tc.sum)
	}
	require.Error(t, write(&strings.Builder{}, f, "x", []string{"nolabel"}, false))
}
