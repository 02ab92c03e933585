package catalog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/tso"
)

// downStore is a Storage whose PD cannot be reached.
type downStore struct{ kv.Storage }

func (downStore) GetTS(context.Context) (uint64, error) { return 0, errors.New("pd unreachable") }

// Begin needs a start ts from PD.
func (downStore) Begin(context.Context, kv.TxnOptions) (kv.Txn, error) {
	return nil, errors.New("pd unreachable")
}

func TestExpiredLeaseIs8027(t *testing.T) {
	c := New(downStore{})
	_, err := c.GetTable(context.Background(), &model.DBInfo{ID: 1, Name: "d"}, "t")
	var e *errno.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, errno.ErrInfoSchemaExpired, e.Code)
	require.Contains(t, e.Msg, "pd unreachable")
}

func TestCheckCommit(t *testing.T) {
	c := New(downStore{})
	c.validUntil.Store(c.clock() + int64(c.lease)*1000) // lease held: no check
	c.version = 12
	c.history = map[int64]schemaDiff{10: {TableIDs: []int64{7}}, 11: {TableIDs: []int64{8, 9}}, 12: {TableIDs: []int64{5}}}
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
			g, err := c.CheckCommit(context.Background(), &TxnSchema{version: tc.began}, slices.Values(tc.written))
			if tc.code == 0 {
				require.NoError(t, err)
				require.True(t, g.Allows(g.MaxCommitTS))
				require.False(t, g.Allows(g.MaxCommitTS+1), "a later commit is checked again")
				return
			}
			var e *errno.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.code, e.Code)
		})
	}
}

// TestCheckCommitCompatibleSteps: a transaction may span one index state
// step of a table it wrote (the DDL owner waits for it before the next),
// never two, and never a drop or truncate.
func TestCheckCommitCompatibleSteps(t *testing.T) {
	c := New(downStore{})
	c.version = 14
	c.history = map[int64]schemaDiff{
		11: {TableIDs: []int64{1}, Compatible: true},
		12: {TableIDs: []int64{2}, Compatible: true},
		13: {TableIDs: []int64{1}, Compatible: true},
		14: {TableIDs: []int64{3}},
	}
	for _, tc := range []struct {
		began       int64
		written     []int64
		ok, oneStep bool
	}{
		{13, []int64{1, 2}, true, false},
		{12, []int64{1}, false, true},
		{11, []int64{2}, false, true},
		{10, []int64{1}, false, false}, // two steps of table 1
		{10, []int64{2, 9}, false, true},
		{13, []int64{3}, false, false}, // not compatible
		{2, []int64{9}, false, false},  // older than the history
	} {
		ok, one := c.checkCommit(tc.began, c.version, tc.written)
		require.Equal(t, tc.ok, ok, "%+v", tc)
		require.Equal(t, tc.oneStep, one, "%+v", tc)
	}
}

// TestTxnSchemaHoldsReportedVersion: a node reports the oldest version a
// running transaction began at, so a DDL step waits for it.
func TestTxnSchemaHoldsReportedVersion(t *testing.T) {
	c := New(downStore{})
	c.mu.Lock()
	c.version = 5
	c.txnSchemaLocked(5)
	c.mu.Unlock()
	old := c.TxnBegin()
	require.Equal(t, int64(5), old.Version())
	c.mu.Lock()
	c.version = 6
	c.txnSchemaLocked(6)
	require.Equal(t, int64(5), c.effectiveLocked())
	c.mu.Unlock()
	cur := c.TxnBegin()
	require.Equal(t, int64(6), cur.Version())
	c.TxnEnd(old)
	c.mu.RLock()
	require.Equal(t, int64(6), c.effectiveLocked())
	c.mu.RUnlock()
	c.TxnEnd(cur)
}

// TestCommitGuardWindow: a commit may go without another check up to the
// commit window after the read that confirmed the loaded version.
func TestCommitGuardWindow(t *testing.T) {
	c := New(downStore{})
	c.validUntil.Store(c.clock() + int64(c.lease)*1000)
	c.version = 3
	confirmedAt := tso.ComposeTS(1_000_000, 7)
	c.refreshTS.Store(confirmedAt)
	g, err := c.CheckCommit(context.Background(), &TxnSchema{version: 3}, slices.Values([]int64{1}))
	require.NoError(t, err)
	require.Equal(t, tso.ComposeTS(1_000_000+c.commitWindow().Milliseconds(), 0), g.MaxCommitTS)
	require.Less(t, c.commitWindow(), 2*c.lease, "inside the owner's two-lease wait")
}

// TestLapsedTransactionsFail: once this node's sync row expired before its
// renewal, the transactions that were running fail at commit (the DDL owner
// may have gone on without them); those that begin afterwards do not.
func TestLapsedTransactionsFail(t *testing.T) {
	c := New(downStore{})
	c.validUntil.Store(c.clock() + int64(c.lease)*1000)
	c.mu.Lock()
	c.version = 4
	c.txnSchemaLocked(4)
	c.mu.Unlock()
	running := c.TxnBegin()
	c.mu.Lock()
	c.lapseLocked(1500)
	c.mu.Unlock()
	_, err := c.CheckCommit(context.Background(), running, slices.Values([]int64{1}))
	var e *errno.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, errno.ErrInfoSchemaChanged, e.Code)
	c.TxnEnd(running)

	fresh := c.TxnBegin()
	require.NotSame(t, running, fresh)
	_, err = c.CheckCommit(context.Background(), fresh, slices.Values([]int64{1}))
	require.NoError(t, err)
	c.TxnEnd(fresh)
}
