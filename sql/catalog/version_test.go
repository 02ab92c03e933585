package catalog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql"
	"github.com/stratadb/strata/sql/errno"
)

// downStore is a Storage whose PD cannot be reached.
type downStore struct{ sql.Storage }

func (downStore) GetTS(context.Context) (uint64, error) { return 0, errors.New("pd unreachable") }

func TestExpiredLeaseIs8027(t *testing.T) {
	c := New(downStore{})
	_, err := c.GetTable(context.Background(), &DBInfo{ID: 1, Name: "d"}, "t")
	var e *errno.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, errno.ErrInfoSchemaExpired, e.Code)
	require.Contains(t, e.Msg, "pd unreachable")
}

func TestCheckCommit(t *testing.T) {
	c := New(downStore{})
	c.validUntil.Store(c.clock() + int64(c.lease)*1000) // lease held: no check
	c.version = 12
	c.history = map[int64][]int64{10: {7}, 11: {8, 9}, 12: {5}}
	for _, tc := range []struct {
		name    string
		began   int64
		written []int64
		code    uint16
	}{
		{"same version", 12, []int64{5, 7}, 0},
		{"other tables changed", 9, []int64{1, 2}, 0},
		{"a written table changed", 10, []int64{1, 9}, errno.ErrInfoSchemaChanged},
		{"change before it began", 10, []int64{7}, 0},
		{"older than the history", 3, []int64{1}, errno.ErrInfoSchemaChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckCommit(context.Background(), tc.began, slices.Values(tc.written))
			if tc.code == 0 {
				require.NoError(t, err)
				return
			}
			var e *errno.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.code, e.Code)
		})
	}
}
