package txn

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func (h *harness) prewritePessimistic(t *testing.T, startTS, forUpdateTS uint64, key, value string) *kvrpcpb.PrewriteResponse {
	t.Helper()
	r, err := h.s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
		Mutations:          []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}},
		PessimisticActions: []kvrpcpb.PessimisticAction{kvrpcpb.PessimisticAction_DoPessimisticCheck},
		PrimaryLock:        []byte(key), StartVersion: startTS, ForUpdateTs: forUpdateTS, LockTtl: 60000,
	})
	require.NoError(t, err)
	require.Nil(t, r.RegionError)
	return r
}

func (h *harness) commit(t *testing.T, startTS, commitTS uint64, keys ...string) {
	t.Helper()
	var ks [][]byte
	for _, k := range keys {
		ks = append(ks, []byte(k))
	}
	c, err := h.s.Commit(bg, &kvrpcpb.CommitRequest{Keys: ks, StartVersion: startTS, CommitVersion: commitTS})
	require.NoError(t, err)
	require.Nil(t, c.Error)
}

// TestMemLockNoRaftRound: a pessimistic lock lives in the leader's memory
// (no engine write), blocks other lockers, is seen and replaced by its
// transaction's prewrite, and a pessimistic rollback of it writes nothing.
func TestMemLockNoRaftRound(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a", "b").Errors)
	require.Equal(t, int64(0), h.e.Writes(), "locks in memory")
	require.Equal(t, "lock a: key=a primary=a start=10 ttl=60000 type=PessimisticLock for_update=10\n"+
		"lock b: key=b primary=a start=10 ttl=60000 type=PessimisticLock for_update=10\n", h.dump())

	// Another transaction meets the in-memory lock (NOWAIT).
	r := h.lock(t, 20, -1, "a")
	require.Len(t, r.Errors, 1)
	require.Equal(t, uint64(10), r.Errors[0].GetLocked().GetLockVersion())

	h.pessimisticRollback(t, 10, "b")
	require.Equal(t, int64(0), h.e.Writes(), "rollback of an in-memory lock")

	require.Empty(t, h.prewritePessimistic(t, 10, 10, "a", "v").Errors)
	require.Equal(t, int64(1), h.e.Writes())
	h.commit(t, 10, 11, "a")
	require.Equal(t, "write a@11: Put start=10 value=v\n", h.dump())
}

// TestMemLockLostOnLeaderChange: a leader change loses the in-memory locks;
// the prewrite amends a missing lock when nothing was committed or locked
// on the key after for_update_ts, and fails retryably when something was.
func TestMemLockLostOnLeaderChange(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a").Errors)
	require.Empty(t, h.lock(t, 20, 1000, "b").Errors)
	h.s.LeaderChanged(1, false)
	h.s.LeaderChanged(1, true)
	require.Equal(t, "<empty>\n", h.dump())

	amended := counterValue(t, prewriteAmended)
	require.Empty(t, h.prewritePessimistic(t, 10, 10, "a", "v").Errors)
	require.Equal(t, amended+1, counterValue(t, prewriteAmended))

	// Txn 30 takes b's lost lock and commits; txn 20's prewrite fails.
	require.Empty(t, h.lock(t, 30, 1000, "b").Errors)
	require.Empty(t, h.prewritePessimistic(t, 30, 30, "b", "w").Errors)
	h.commit(t, 30, 31, "b")
	r := h.prewritePessimistic(t, 20, 20, "b", "x")
	require.Len(t, r.Errors, 1)
	require.Contains(t, r.Errors[0].GetRetryable(), "not found", "%v", r.Errors[0])

	// Txn 40 holds c's lock (in memory) while txn 35's was lost: 35's
	// prewrite must not take c.
	require.Empty(t, h.lock(t, 35, 1000, "c").Errors)
	h.s.LeaderChanged(1, false)
	h.s.LeaderChanged(1, true)
	require.Empty(t, h.lock(t, 40, 1000, "c").Errors)
	r = h.prewritePessimistic(t, 35, 35, "c", "y")
	require.Len(t, r.Errors, 1)
	require.Contains(t, r.Errors[0].GetRetryable(), "not found", "%v", r.Errors[0])
}

// TestMemLockHandover: before a transfer or split the locks are proposed
// through raft; meanwhile new locks go through raft too, and once the
// handover write applied the table lets go of the flushed locks.
func TestMemLockHandover(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a", "b").Errors)
	var (
		reqs []*raft_cmdpb.Request
		done func(error)
	)
	h.s.Handover(h.e.RegionByID(1), func(r []*raft_cmdpb.Request, d func(error)) { reqs, done = r, d })
	require.Len(t, reqs, 2)
	// The flush is in the log ahead of anything later (raftstore
	// guarantees it); apply it first here.
	_, err := h.e.Write(bg, nil, h.e.RegionByID(1), 0, reqs, nil)
	require.NoError(t, err)

	// While frozen a new lock is written through raft, and a write of a
	// flushed key goes through raft too (after the flush).
	writes := h.e.Writes()
	require.Empty(t, h.lock(t, 20, 1000, "c").Errors)
	require.Equal(t, writes+1, h.e.Writes())
	h.pessimisticRollback(t, 10, "b")
	require.Equal(t, writes+2, h.e.Writes())

	done(nil)
	h.s.mem.regions[1].mu.Lock()
	require.Empty(t, h.s.mem.regions[1].locks)
	h.s.mem.regions[1].mu.Unlock()
	require.Equal(t, "lock a: key=a primary=a start=10 ttl=60000 type=PessimisticLock for_update=10\n"+
		"lock c: key=c primary=c start=20 ttl=60000 type=PessimisticLock for_update=20\n", h.dump())
	require.Empty(t, h.prewritePessimistic(t, 10, 10, "a", "v").Errors)
}

// TestMemLockHandoverRefused: a handover write raft refused (a hot
// region's uncommitted-size limit; raftstore then does not transfer)
// leaves the locks in memory, unflushed: the transaction's prewrite still
// finds its lock, and a later handover proposes them again.
func TestMemLockHandoverRefused(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a", "b").Errors)
	var done func(error)
	h.s.Handover(h.e.RegionByID(1), func(_ []*raft_cmdpb.Request, d func(error)) { done = d })
	done(errors.New("raft refused the proposal"))
	h.s.mem.regions[1].mu.Lock()
	require.Len(t, h.s.mem.regions[1].locks, 2)
	for _, ml := range h.s.mem.regions[1].locks {
		require.False(t, ml.flushed)
	}
	h.s.mem.regions[1].mu.Unlock()
	require.Equal(t, "lock a: key=a primary=a start=10 ttl=60000 type=PessimisticLock for_update=10\n"+
		"lock b: key=b primary=a start=10 ttl=60000 type=PessimisticLock for_update=10\n", h.dump(), "still visible to readers")

	var reqs []*raft_cmdpb.Request
	h.s.Handover(h.e.RegionByID(1), func(r []*raft_cmdpb.Request, d func(error)) { reqs, done = r, d })
	require.Len(t, reqs, 2, "proposed again")
	_, err := h.e.Write(bg, nil, h.e.RegionByID(1), 0, reqs, nil)
	require.NoError(t, err)
	done(nil)
	require.Empty(t, h.prewritePessimistic(t, 10, 10, "a", "v").Errors)
}

// TestMemLockEpochChange: a table whose locks predate the region's epoch
// version (a split applied after their handover) is emptied, and only locks
// inside the region are handed over.
func TestMemLockEpochChange(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a", "m").Errors)
	var reqs []*raft_cmdpb.Request
	h.s.Handover(&metapb.Region{Id: 1, EndKey: []byte("k")}, func(r []*raft_cmdpb.Request, d func(error)) { reqs = r })
	require.Len(t, reqs, 1, "only a lies in [, k)")

	h.e.SetRegion(&metapb.Region{Id: 1, RegionEpoch: &metapb.RegionEpoch{Version: 2}})
	require.Empty(t, h.lock(t, 20, 1000, "z").Errors)
	require.Equal(t, "lock z: key=z primary=z start=20 ttl=60000 type=PessimisticLock for_update=20\n", h.dump())
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
