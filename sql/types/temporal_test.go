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
