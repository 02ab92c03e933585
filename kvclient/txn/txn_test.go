package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/tso"
)

var bg = context.Background()

func begin(t *testing.T, c *Client, opts kv.TxnOptions) *Txn {
	t.Helper()
	tx, err := c.Begin(bg, opts)
	require.NoError(t, err)
	return tx
}

func requireRead(t *testing.T, tx *Txn, key, want string) {
	t.Helper()
	v, found, err := tx.Get(bg, []byte(key))
	require.NoError(t, err)
	if want == "" {
		require.False(t, found, key)
		return
	}
	require.True(t, found, key)
	require.Equal(t, want, string(v))
}

func TestCommitModes(t *testing.T) {
	tests := []struct {
		name        string
		opts        kv.TxnOptions
		keys        []string
		wantCommits int // Commit RPCs the answer waits for
	}{
		{"2pc one region", kv.TxnOptions{}, []string{"a1", "a2"}, 1},
		{"2pc two regions", kv.TxnOptions{}, []string{"a1", "m1", "m2"}, 1},
		{"1pc", kv.TxnOptions{OnePC: true}, []string{"a1", "a2"}, 0},
		{"1pc not possible across regions", kv.TxnOptions{OnePC: true}, []string{"a1", "m1"}, 1},
		{"async commit", kv.TxnOptions{AsyncCommit: true}, []string{"a1", "m1", "m2"}, 0},
		{"pessimistic async", kv.TxnOptions{Pessimistic: true, AsyncCommit: true, OnePC: true}, []string{"a1", "m1"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKV(t, "m")
			c := f.newClient(Config{})
			tx := begin(t, c, tt.opts)
			for _, k := range tt.keys {
				require.NoError(t, tx.Set([]byte(k), []byte("v-"+k)))
			}
			if tt.opts.Pessimistic {
				keys := make([][]byte, len(tt.keys))
				for i, k := range tt.keys {
					keys[i] = []byte(k)
				}
				_, err := tx.LockKeys(bg, kv.LockOptions{}, keys...)
				require.NoError(t, err)
			}
			// A reader at a later ts pushes max_ts in region 2 so async
			// commit must pick a commit ts above it.
			readTS := f.ts() + 1000
			f.mu.Lock()
			f.maxTS = max(f.maxTS, readTS)
			f.mu.Unlock()
			// readTS stands for a timestamp PD handed out: every later
			// one (the final reader's) is above it, as with a real PD.
			f.lastTS.Store(max(f.lastTS.Load(), readTS))

			if tt.wantCommits == 0 {
				// The answer must not wait for any Commit RPC: hold them
				// all until Commit has returned.
				release := make(chan struct{})
				f.setHook(func(method string, _ any) time.Duration {
					if method == "Commit" {
						<-release
					}
					return 0
				})
				require.NoError(t, tx.Commit(bg))
				close(release)
			} else {
				require.NoError(t, tx.Commit(bg))
				require.GreaterOrEqual(t, f.count("Commit"), 1, "primary committed before the answer")
			}
			// Every key committed (secondaries in the background) at one
			// commit ts.
			require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond)
			var commitTS uint64
			for _, k := range tt.keys {
				ts := f.commitTSOf(k, tx.StartTS())
				require.NotZero(t, ts, k)
				if commitTS == 0 {
					commitTS = ts
				}
				require.Equal(t, commitTS, ts, "one commit ts for the whole transaction")
			}
			if tt.opts.AsyncCommit || tt.opts.OnePC {
				if tt.wantCommits == 0 {
					require.Greater(t, commitTS, readTS, "commit ts above every read the stores served")
				}
			}
			rd := begin(t, c, kv.TxnOptions{})
			for _, k := range tt.keys {
				requireRead(t, rd, k, "v-"+k)
			}
		})
	}
}

// TestBigTxnResolvedInBackground: a reader meeting a lock of a finished
// big transaction resolves its own key and goes on; the region-wide
// ResolveLock of the transaction's other locks runs in the background (a
// slow one, as a region full of deleted locks makes it, no longer fails
// the reader).
func TestBigTxnResolvedInBackground(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	start := f.ts() - tso.ComposeTS(1000, 0)
	for _, k := range []string{"a", "b", "c"} {
		f.put(k, "old")
		f.lock(k, "a", start, 100, "new")
		f.mu.Lock()
		f.locks[k].info.TxnSize = smallTxnKeys
		f.mu.Unlock()
	}
	f.mu.Lock()
	require.Nil(t, f.finish([]byte("a"), start, f.lastTS.Add(1)))
	f.mu.Unlock()
	var regionWide atomic.Int32
	f.setHook(func(method string, req any) time.Duration {
		if r, ok := req.(*kvrpcpb.ResolveLockRequest); ok && len(r.Keys) == 0 {
			regionWide.Add(1)
			return 2 * time.Second
		}
		return 0
	})
	rd := begin(t, c, kv.TxnOptions{})
	began := time.Now()
	requireRead(t, rd, "b", "new")
	require.Less(t, time.Since(began), 1500*time.Millisecond, "the reader waited for the region-wide resolve")
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 10*time.Second, 10*time.Millisecond)
	requireRead(t, rd, "c", "new")
	require.Equal(t, int32(1), regionWide.Load(), "one region-wide resolve per transaction and region")
}

func TestReaderPushesLiveLock(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	f.put("a", "old")
	start := f.ts()
	f.lock("a", "a", start, 60_000, "new") // alive for a minute
	rd := begin(t, c, kv.TxnOptions{})
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	v, found, err := rd.Get(ctx, []byte("a"))
	require.NoError(t, err, "the reader pushes min_commit_ts instead of waiting")
	require.True(t, found)
	require.Equal(t, "old", string(v))
	f.mu.Lock()
	require.Greater(t, f.locks["a"].info.MinCommitTs, rd.StartTS())
	f.mu.Unlock()
}

func TestResolveExpiredAsyncCommit(t *testing.T) {
	f := newFakeKV(t, "m")
	c := f.newClient(Config{})
	start := f.ts() - tso.ComposeTS(1000, 0)
	f.lock("a", "a", start, 50, "v")
	f.lock("z", "a", start, 50, "v")
	f.mu.Lock()
	for _, k := range []string{"a", "z"} {
		f.locks[k].info.UseAsyncCommit = true
		f.locks[k].info.MinCommitTs = start + 10
	}
	f.locks["z"].info.MinCommitTs = start + 20
	f.locks["a"].info.Secondaries = [][]byte{[]byte("z")}
	f.mu.Unlock()
	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "z", "v") // all prewrites there: committed at max min_commit_ts
	require.Equal(t, start+20, f.commitTSOf("a", start))
	require.Equal(t, start+20, f.commitTSOf("z", start))
}

func TestPessimisticRetryAtNewForUpdateTS(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	var once bool
	f.setHook(func(method string, req any) time.Duration {
		if method == "PessimisticLock" && !once {
			once = true
			f.put("a", "late") // committed after the first for_update_ts
		}
		return 0
	})
	vals, err := tx.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "late", string(vals[0]))
	require.Equal(t, 2, f.count("PessimisticLock"))
	require.NoError(t, tx.Rollback(bg))
	require.Equal(t, 0, f.lockCount(), "rollback released the lock")
}

func TestPrimaryCommitLostIsUndetermined(t *testing.T) {
	f := newFakeKV(t, "m")
	kvCfg := Config{}
	c := f.newClient(kvCfg)
	tx := begin(t, c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), []byte("1")))
	require.NoError(t, tx.Set([]byte("z"), []byte("1")))
	f.setHook(func(method string, req any) time.Duration {
		if method == "Commit" {
			return 3 * time.Second // past the 2s RPC timeout
		}
		return 0
	})
	err := tx.Commit(bg)
	require.ErrorIs(t, err, kv.ErrUndetermined)
	require.Equal(t, 0, f.count("BatchRollback"), "never rolled back")
}

func TestTxnTooLarge(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{MaxTxnSize: 100})
	tx := begin(t, c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), make([]byte, 50)))
	var tl *kv.TxnTooLargeError
	require.ErrorAs(t, tx.Set([]byte("b"), make([]byte, 60)), &tl)
}

func TestKeyErrorMapping(t *testing.T) {
	var dl *kv.DeadlockError
	require.ErrorAs(t, keyError(&kvrpcpb.KeyError{Deadlock: &kvrpcpb.Deadlock{LockKey: []byte("k")}}, 1), &dl)
	require.ErrorIs(t, keyError(&kvrpcpb.KeyError{LockWaitTimeout: &kvrpcpb.LockWaitTimeout{Key: []byte("k")}}, 1), kv.ErrLockWaitTimeout)
	require.ErrorIs(t, keyError(&kvrpcpb.KeyError{TxnLockNotFound: &kvrpcpb.TxnLockNotFound{}}, 1), ErrTxnAborted)
	require.True(t, errors.Is(mapErr(fmt.Errorf("x: %w", errFake)), errFake))
}

func TestGCTooEarly(t *testing.T) {
	require.ErrorIs(t, keyError(&kvrpcpb.KeyError{GcTooEarly: &kvrpcpb.GCTooEarly{StartTs: 1, SafePoint: 2}}, 1), ErrGCTooEarly)
}

// TestOnePCRegionSplitFallsBackTo2PC: a transaction that chose 1PC (its keys
// in one cached region) finds at prewrite that the region split: it must
// not 1PC each part on its own (two commits at two timestamps, the part
// in the first region visible before the other exists) but commit both
// parts with 2PC at one commit ts.
func TestOnePCRegionSplitFallsBackTo2PC(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	warm := begin(t, c, kv.TxnOptions{})
	requireMissing := func(k string) {
		_, ok, err := warm.Get(bg, []byte(k))
		require.NoError(t, err)
		require.False(t, ok)
	}
	requireMissing("a1") // the client caches the one region
	var mu sync.Mutex
	var partialOnePC int
	split := sync.OnceFunc(func() { f.split("m") })
	f.setHook(func(method string, req any) time.Duration {
		if method != "Prewrite" {
			return 0
		}
		split() // before the first prewrite is served
		if pr := req.(*kvrpcpb.PrewriteRequest); pr.TryOnePc && len(pr.Mutations) != 2 {
			mu.Lock()
			partialOnePC++
			mu.Unlock()
		}
		return 0
	})
	tx := begin(t, c, kv.TxnOptions{OnePC: true})
	for _, k := range []string{"a1", "z1"} {
		require.NoError(t, tx.Set([]byte(k), []byte("v-"+k)))
	}
	require.NoError(t, tx.Commit(bg))
	require.Zero(t, partialOnePC, "no 1PC of a part of the transaction")
	require.GreaterOrEqual(t, f.count("Commit"), 1, "committed with 2PC")
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	require.NotZero(t, f.commitTSOf("a1", tx.StartTS()))
	require.Equal(t, f.commitTSOf("a1", tx.StartTS()), f.commitTSOf("z1", tx.StartTS()), "one commit ts")
}

// TestPessimisticLockResentWhenUndetermined: a lock request whose answer
// is lost (here: it outlives its attempt timeout, as when the leader dies
// under it) is sent again while the statement's lock wait lasts, and the
// resend finds the key locked by this transaction or locks it; past the
// lock wait the statement fails undetermined (9002) as before.
func TestPessimisticLockResentWhenUndetermined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		waitMs int64
		ok     bool
	}{
		{"resent within the lock wait", 0, true},
		{"lock wait over before the answer", 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeKV(t, "m")
			c := f.newClient(Config{})
			f.put("a", "1")
			var calls atomic.Int32
			f.setHook(func(method string, req any) time.Duration {
				if method == "PessimisticLock" && calls.Add(1) == 1 {
					// Past the attempt timeout: 2 s RPC timeout plus the
					// request's wait (at most 1 s). The fake then applies it.
					return 3500 * time.Millisecond
				}
				return 0
			})
			tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
			vals, err := tx.LockKeys(bg, kv.LockOptions{ReturnValues: true, WaitTimeoutMs: tc.waitMs}, []byte("a"), []byte("z"))
			if !tc.ok {
				require.ErrorIs(t, err, kv.ErrUndetermined)
				require.Equal(t, int32(1), calls.Load(), "no resend past the lock wait")
				require.NoError(t, tx.Rollback(bg))
				return
			}
			require.NoError(t, err)
			require.Equal(t, [][]byte{[]byte("1"), nil}, vals)
			require.GreaterOrEqual(t, calls.Load(), int32(3), "primary resent, then the secondary")
			require.NoError(t, tx.Set([]byte("a"), []byte("2")))
			require.NoError(t, tx.Commit(bg))
			require.Eventually(t, func() bool { return f.lockCount() == 0 }, 10*time.Second, time.Millisecond)
			requireRead(t, begin(t, c, kv.TxnOptions{}), "a", "2")
		})
	}
}

// A lock's TTL counts from its start_ts's physical part, on PD's clock;
// heartbeats must advise LockTTL past the transaction's age, measured here,
// whatever PD's clock says. With PD's timestamps an hour ahead of this
// node's clock, the old formula (this node's wall clock minus start_ts's
// physical part, as a uint64) advised a TTL of about 2^64 ms, and a
// transaction whose node then died kept its locks for ever.
func TestHeartbeatTTLIsTheTransactionsAge(t *testing.T) {
	f := newFakeKV(t)
	f.pdAhead = time.Hour
	ttls := make(chan uint64, 16)
	f.hook = func(method string, req any) time.Duration {
		if hb, ok := req.(*kvrpcpb.TxnHeartBeatRequest); ok {
			select {
			case ttls <- hb.GetAdviseLockTtl():
			default:
			}
		}
		return 0
	}
	c := f.newClient(Config{LockTTL: 3 * time.Second, HeartbeatInterval: 10 * time.Millisecond})
	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	defer func() { _ = tx.Rollback(bg) }()
	_, err := tx.LockKeys(bg, kv.LockOptions{}, []byte("a"))
	require.NoError(t, err)
	ttl := <-ttls
	require.GreaterOrEqual(t, ttl, uint64(3000))
	require.Less(t, ttl, uint64(3000+60_000), "LockTTL past the transaction's age, not past PD's clock offset")
}
