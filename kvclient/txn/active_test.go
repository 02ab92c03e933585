package txn

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/tso"
)

// TestMinStartTS: the GC leader hears the oldest running transaction's
// start_ts until it commits or rolls back; a newest-version point read is
// not a snapshot to protect, and a transaction older than MaxGCWait no
// longer holds GC back.
func TestMinStartTS(t *testing.T) {
	c := newRealStore(t, Config{}).c
	require.Zero(t, c.MinStartTS())

	a := begin(t, c, kv.TxnOptions{})
	b := begin(t, c, kv.TxnOptions{})
	point := begin(t, c, kv.TxnOptions{StartTS: math.MaxUint64, ReadOnly: true})
	require.Equal(t, a.StartTS(), c.MinStartTS())

	require.NoError(t, a.Commit(bg))
	require.Equal(t, b.StartTS(), c.MinStartTS(), "a committed")
	require.NoError(t, a.Rollback(bg)) // finished already: no change
	require.Equal(t, b.StartTS(), c.MinStartTS())
	require.NoError(t, b.Rollback(bg))
	require.NoError(t, point.Rollback(bg))
	require.Zero(t, c.MinStartTS(), "none running")

	old := tso.ComposeTS(time.Now().Add(-MaxGCWait-time.Minute).UnixMilli(), 0)
	stale := begin(t, c, kv.TxnOptions{StartTS: old, ReadOnly: true})
	require.Zero(t, c.MinStartTS(), "older than MaxGCWait: ignored")
	require.NoError(t, stale.Rollback(bg))
}

// TestLockLostCause: a lock found missing at prewrite after its TTL ran
// out (no renewal since) is reported as expired, not as a leader's loss.
func TestLockLostCause(t *testing.T) {
	c := newRealStore(t, Config{LockTTL: time.Second}).c
	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	lost := fmt.Errorf("%w: lost", kv.ErrPessimisticLockLost)
	require.NotErrorIs(t, tx.lockLost(lost), kv.ErrPessimisticLockExpired, "no lock yet")
	tx.renewed(time.Now())
	require.NotErrorIs(t, tx.lockLost(lost), kv.ErrPessimisticLockExpired, "renewed within its TTL")
	tx.aliveUntil.Store(time.Now().Add(-time.Millisecond).UnixMilli())
	require.ErrorIs(t, tx.lockLost(lost), kv.ErrPessimisticLockExpired)
	require.ErrorIs(t, tx.lockLost(lost), kv.ErrPessimisticLockLost)
}
