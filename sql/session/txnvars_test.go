package session

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// TestNormalizeTxnVars: the transaction variables accept MySQL's and TiDB's
// spellings, store one canonical text, and refuse the rest with the codes
// MySQL / TiDB use.
func TestNormalizeTxnVars(t *testing.T) {
	cases := []struct {
		name, val string
		want      string
		code      uint16
	}{
		{"autocommit", "ON", "1", 0},
		{"autocommit", "off", "0", 0},
		{"autocommit", "2", "", errno.ErrWrongValueForVar},
		{"transaction_isolation", "read committed", "READ-COMMITTED", 0},
		{"tx_isolation", "REPEATABLE_READ", "REPEATABLE-READ", 0},
		{"transaction_isolation", "SERIALIZABLE", "", errno.ErrIsolationLevelNotSupported},
		{"transaction_isolation", "READ-UNCOMMITTED", "", errno.ErrIsolationLevelNotSupported},
		{"transaction_isolation", "snapshot", "", errno.ErrWrongValueForVar},
		{"tidb_txn_mode", "OPTIMISTIC", "optimistic", 0},
		{"tidb_txn_mode", "", "pessimistic", 0},
		{"tidb_txn_mode", "lazy", "", errno.ErrWrongValueForVar},
		{"innodb_lock_wait_timeout", "0", "1", 0},
		{"innodb_lock_wait_timeout", "99999999999", "1073741824", 0},
		{"innodb_lock_wait_timeout", "soon", "", 1232},
		{"tidb_enable_1pc", "OFF", "0", 0},
		{"tidb_enable_async_commit", "yes", "", errno.ErrWrongValueForVar},
		{"tidb_replica_read", "FOLLOWER", "follower", 0},
		{"tidb_replica_read", "leader-and-follower", "leader-and-follower", 0},
		{"tidb_replica_read", "closest-replicas", "closest-replicas", 0},
		{"tidb_replica_read", "learner", "", errno.ErrWrongValueForVar},
	}
	s := &Session{vars: map[string]sysVar{}}
	for _, c := range cases {
		got, err := s.normalizeSysVar(c.name, c.name, types.NewString(c.val))
		if c.code != 0 {
			require.Equal(t, c.code, errno.FromError(err).Code, "%s = %q: %v", c.name, c.val, err)
			continue
		}
		require.NoError(t, err, "%s = %q", c.name, c.val)
		require.Equal(t, c.want, got, "%s = %q", c.name, c.val)
	}
}

// TestReplicaReadMode: tidb_replica_read picks the replicas of
// non-locking reads; the closest-* values act like leader-and-follower
// (no zone labels).
func TestReplicaReadMode(t *testing.T) {
	cases := map[string]replicaread.Mode{
		"leader": replicaread.Leader, "follower": replicaread.Follower,
		"leader-and-follower": replicaread.LeaderAndFollower, "closest-adaptive": replicaread.LeaderAndFollower,
	}
	for v, want := range cases {
		s := &Session{vars: map[string]sysVar{"tidb_replica_read": {value: v}}}
		require.Equal(t, want, s.replicaReadMode(), v)
	}
	require.Equal(t, replicaread.Leader, (&Session{vars: map[string]sysVar{}}).replicaReadMode(), "default")
}

// TestNextTxnOptions: the options a new transaction gets follow the
// session variables, and a one-shot isolation level wins once.
func TestNextTxnOptions(t *testing.T) {
	s := &Session{vars: map[string]sysVar{}}
	require.Equal(t, kv.TxnOptions{Pessimistic: true, AsyncCommit: true, OnePC: true}, s.nextTxnOptions())
	s.vars["tidb_txn_mode"] = sysVar{value: "optimistic"}
	s.vars["tidb_enable_1pc"] = sysVar{value: "0", numeric: true}
	s.vars["transaction_read_only"] = sysVar{value: "1", numeric: true}
	s.oneShotIsolation = "READ-COMMITTED"
	require.Equal(t, kv.TxnOptions{Isolation: kv.ReadCommitted, ReadOnly: true, AsyncCommit: true}, s.nextTxnOptions())
	s.vars["transaction_isolation"] = sysVar{value: "SERIALIZABLE"} // accepted with the check skipped
	s.oneShotIsolation = ""
	require.Equal(t, kv.RepeatableRead, s.nextTxnOptions().Isolation)
	require.Equal(t, int64(50000), s.LockWaitTimeoutMs())
}
