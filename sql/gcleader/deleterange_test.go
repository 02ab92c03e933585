package gcleader_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/sql/gcleader"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/store/gc"
)

// engineKeysIn counts a store engine's keys of user range [start, end) in
// all three key spaces.
func engineKeysIn(t *testing.T, db *pebble.DB, start, end []byte) int {
	n := 0
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, start, end)
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		require.NoError(t, err)
		for valid := it.First(); valid; valid = it.Next() {
			n++
		}
		require.NoError(t, it.Close())
	}
	return n
}

// TestClusterDeleteRanges: a recorded range is deleted only by a round
// whose safe point is at or above the commit of the transaction that
// recorded it; then its keys are gone from every replica (across a region
// boundary), the keys around it stay, and it is marked done. A range
// deleted by a leader that died before marking it done is deleted again
// harmlessly by the next round.
func TestClusterDeleteRanges(t *testing.T) {
	c := startCluster(t, gc.Config{PollInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	meta := txn.NewStorage(c.pd, c.kv, c.txn)
	l := gcleader.New(c.pd, c.kv, c.txn.Resolver(), gcleader.Config{NodeID: "sql-1", MinLifeTime: time.Millisecond, Meta: meta})

	start, end := tablecodec.TableRange(77)
	rowKey := func(h int64) string { return string(tablecodec.RowKey(77, h)) }
	for h := range int64(40) {
		c.put(t, rowKey(h), fmt.Sprintf("row%d", h))
	}
	c.put(t, string(tablecodec.RowKey(76, 1)), "before")
	c.put(t, string(tablecodec.RowKey(78, 1)), "after")
	// The range spans two regions.
	_, err := c.kv.SplitRegions(ctx, [][]byte{[]byte(rowKey(20))})
	require.NoError(t, err)

	beforeRecord, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	r := deleterange.Table(5, 77)
	require.NoError(t, kv.Update(ctx, meta, func(tx kv.Txn) error {
		return kv.Mutate(tx, deleterange.Mutations([]deleterange.Range{r}, tx.StartTS()))
	}))
	countAll := func(s, e []byte) (min int) {
		min = -1
		for _, st := range c.stores {
			n := engineKeysIn(t, st.Store().Engine(), s, e)
			if min < 0 || n < min {
				min = n
			}
		}
		return min
	}
	require.Equal(t, 40, countAll(start, end))

	// Below the record's commit: not deleted.
	require.NoError(t, l.DeleteRanges(ctx, beforeRecord, beforeRecord))
	require.Equal(t, 40, countAll(start, end))

	// A leader that deleted the range and died before marking it done.
	sp, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	st, err := c.kv.DeleteRange(ctx, r.StartKey, r.EndKey, sp)
	require.NoError(t, err)
	require.Equal(t, 2, st.Regions)

	// The next round deletes it again and marks it done.
	require.NoError(t, l.DeleteRanges(ctx, sp, sp))
	now, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	pending, err := deleterange.Pending(ctx, meta, now, 0)
	require.NoError(t, err)
	require.Empty(t, pending)
	done, err := deleterange.Done(ctx, meta, now, 0)
	require.NoError(t, err)
	require.Len(t, done, 1)
	require.Equal(t, "table 77", done[0].What)

	require.Eventually(t, func() bool {
		for _, st := range c.stores {
			if engineKeysIn(t, st.Store().Engine(), start, end) != 0 || st.Store().GCSafePoint() < sp {
				return false
			}
		}
		return true
	}, waitFor, 10*time.Millisecond, "every replica deleted the range and learned the safe point")
	for _, k := range []string{string(tablecodec.RowKey(76, 1)), string(tablecodec.RowKey(78, 1))} {
		v, ok, err := c.readAt(ctx, k, now)
		require.NoError(t, err)
		require.True(t, ok)
		require.NotEmpty(t, v)
	}
}
