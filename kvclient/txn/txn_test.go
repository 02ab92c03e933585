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

func TestOptimisticConflict(t *testing.T) {
	f := newFakeKV(t, "m")
	c := f.newClient(Config{})
	tx := begin(t, c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), []byte("mine")))
	require.NoError(t, tx.Set([]byte("z"), []byte("mine")))
	f.put("z", "theirs")
	err := tx.Commit(bg)
	var wc *kv.WriteConflictError
	require.ErrorAs(t, err, &wc)
	require.Equal(t, "z", string(wc.Key))
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond, "prewritten keys rolled back")
	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "a", "")
	requireRead(t, rd, "z", "theirs")
}

func TestInsertExists(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	f.put("a", "1")
	tx := begin(t, c, kv.TxnOptions{})
	require.NoError(t, tx.Insert([]byte("a"), []byte("2")))
	var ke *kv.KeyExistsError
	require.ErrorAs(t, tx.Commit(bg), &ke)

	tx = begin(t, c, kv.TxnOptions{})
	require.NoError(t, tx.Insert([]byte("b"), []byte("1")))
	require.ErrorAs(t, tx.Insert([]byte("b"), []byte("2")), &ke, "buffered value exists")
	require.NoError(t, tx.Commit(bg))
}

func TestSnapshotAndOwnWrites(t *testing.T) {
	f := newFakeKV(t, "c", "f")
	c := f.newClient(Config{})
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		f.put(k, "old-"+k)
	}
	tx := begin(t, c, kv.TxnOptions{})
	f.put("d", "newer") // after start_ts: invisible
	require.NoError(t, tx.Set([]byte("b"), []byte("mine")))
	require.NoError(t, tx.Delete([]byte("e")))
	require.NoError(t, tx.Set([]byte("ee"), []byte("mine")))
	requireRead(t, tx, "d", "old-d")
	requireRead(t, tx, "e", "")
	m, err := tx.BatchGet(bg, [][]byte{[]byte("a"), []byte("b"), []byte("d"), []byte("e"), []byte("g"), []byte("zz")})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"a": []byte("old-a"), "b": []byte("mine"), "d": []byte("old-d"), "g": []byte("old-g")}, m)

	render := func(ps []kv.KvPair) string {
		s := ""
		for _, p := range ps {
			s += fmt.Sprintf("%s=%s ", p.Key, p.Value)
		}
		return s
	}
	tests := []struct {
		start, end string
		limit      int
		reverse    bool
		want       string
	}{
		{"", "", 0, false, "a=old-a b=mine c=old-c d=old-d ee=mine f=old-f g=old-g "},
		{"b", "f", 0, false, "b=mine c=old-c d=old-d ee=mine "},
		{"", "", 3, false, "a=old-a b=mine c=old-c "},
		{"", "", 0, true, "g=old-g f=old-f ee=mine d=old-d c=old-c b=mine a=old-a "},
		{"b", "f", 2, true, "ee=mine d=old-d "},
		{"a", "c", 0, true, "b=mine a=old-a "},
		{"d", "e", 0, false, "d=old-d "},
	}
	for _, tt := range tests {
		ps, err := tx.Scan(bg, []byte(tt.start), []byte(tt.end), tt.limit, tt.reverse)
		require.NoError(t, err)
		require.Equal(t, tt.want, render(ps), "%+v", tt)
	}
}

func TestStatementRollbackAndSavepoints(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	tx.StmtBegin()
	require.NoError(t, tx.Set([]byte("a"), []byte("1")))
	tx.StmtCommit()
	tx.Savepoint("s1")
	tx.StmtBegin()
	_, err := tx.LockKeys(bg, kv.LockOptions{}, []byte("b"))
	require.NoError(t, err)
	require.NoError(t, tx.Set([]byte("b"), []byte("1")))
	tx.StmtRollback()
	requireRead(t, tx, "b", "")
	require.NoError(t, tx.Set([]byte("c"), []byte("1")))
	require.NoError(t, tx.RollbackToSavepoint("S1"))
	requireRead(t, tx, "c", "")
	requireRead(t, tx, "a", "1")
	require.ErrorIs(t, tx.ReleaseSavepoint("nope"), ErrNoSavepoint)
	require.NoError(t, tx.Commit(bg))
	// b's lock, kept after its statement failed, was released by commit.
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "a", "1")
	requireRead(t, rd, "b", "")
}

func TestResolveAbandonedTxn(t *testing.T) {
	tests := []struct {
		name      string
		committed bool // the primary was committed before the client died
	}{{"rolled back", false}, {"committed", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKV(t, "m")
			c := f.newClient(Config{})
			f.put("a", "old")
			f.put("z", "old")
			start := f.ts() - tso.ComposeTS(1000, 0) // a second ago
			f.lock("a", "a", start, 100, "new")      // ttl 100ms: expired
			f.lock("z", "a", start, 100, "new")
			want := "old"
			if tt.committed {
				f.mu.Lock()
				require.Nil(t, f.finish([]byte("a"), start, f.lastTS.Add(1)))
				f.mu.Unlock()
				want = "new"
			}
			rd := begin(t, c, kv.TxnOptions{})
			// Waits (backs off) until the TTL expires, then resolves.
			requireRead(t, rd, "z", want)
			requireRead(t, rd, "a", want)
			require.Equal(t, 0, f.lockCount())
			ps, err := rd.Scan(bg, nil, nil, 0, false)
			require.NoError(t, err)
			require.Len(t, ps, 2)
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

func TestPessimisticLocks(t *testing.T) {
	f := newFakeKV(t, "m")
	c := f.newClient(Config{})
	f.put("a", "1")
	t1 := begin(t, c, kv.TxnOptions{Pessimistic: true})
	vals, err := t1.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("z"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte(nil), []byte("1")}, vals)
	// The lock answered both values, the absent one too: no read follows
	// (an INSERT's unique checks read nothing per key).
	require.Zero(t, f.count("Get")+f.count("BatchGet"))

	t2 := begin(t, c, kv.TxnOptions{Pessimistic: true})
	_, err = t2.LockKeys(bg, kv.LockOptions{NoWait: true}, []byte("a"))
	var lc *kv.LockConflictError
	require.ErrorAs(t, err, &lc)
	start := time.Now()
	_, err = t2.LockKeys(bg, kv.LockOptions{WaitTimeoutMs: 200}, []byte("a"))
	require.ErrorIs(t, err, kv.ErrLockWaitTimeout)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	// t2 waits; t1 commits a new value; t2's lock then meets a commit after
	// its for_update_ts... it took a fresh one, so it sees the new value.
	done := make(chan error, 1)
	var got [][]byte
	go func() {
		var err error
		got, err = t2.LockKeys(bg, kv.LockOptions{ReturnValues: true, WaitTimeoutMs: 5000}, []byte("a"))
		done <- err
	}()
	require.NoError(t, t1.Set([]byte("a"), []byte("2")))
	require.NoError(t, t1.Commit(bg))
	require.NoError(t, <-done)
	require.Equal(t, "2", string(got[0]))
	require.NoError(t, t2.Set([]byte("a"), []byte("3")))
	require.NoError(t, t2.Commit(bg))
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	requireRead(t, begin(t, c, kv.TxnOptions{}), "a", "3")
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

func TestReadOnlyAndFinished(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	ts := f.put("a", "1")
	f.put("a", "2")
	tx := begin(t, c, kv.TxnOptions{ReadOnly: true, StartTS: ts})
	requireRead(t, tx, "a", "1")
	require.ErrorIs(t, tx.Set([]byte("a"), nil), ErrReadOnly)
	require.NoError(t, tx.Commit(bg))
	_, _, err := tx.Get(bg, []byte("a"))
	require.ErrorIs(t, err, ErrFinished)
	_, err = c.Begin(bg, kv.TxnOptions{StartTS: ts})
	require.Error(t, err)
}

func TestReadCommittedFreshSnapshotPerStatement(t *testing.T) {
	f := newFakeKV(t)
	c := f.newClient(Config{})
	f.put("a", "1")
	tx := begin(t, c, kv.TxnOptions{Isolation: kv.ReadCommitted})
	tx.StmtBegin()
	requireRead(t, tx, "a", "1")
	tx.StmtCommit()
	f.put("a", "2")
	requireRead(t, tx, "a", "1") // same statement snapshot until the next statement
	tx.StmtBegin()
	requireRead(t, tx, "a", "2")
	tx.StmtCommit()
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

// TestUpdateTxn: the transaction kv.Update runs (catalog, DDL and the
// schema sync rows write through it): optimistic, 1PC in one region; a
// key written after its start_ts conflicts and nothing is written; an
// Insert of a live key fails.
func TestUpdateTxn(t *testing.T) {
	f := newFakeKV(t, "m")
	c := f.newClient(Config{})
	f.put("c", "1")
	opts := kv.TxnOptions{OnePC: true, AsyncCommit: true}
	tx := begin(t, c, opts)
	late := begin(t, c, opts) // a second one that read "a" before the first committed
	requireRead(t, late, "a", "")
	require.NoError(t, kv.Mutate(tx, []*kvrpcpb.Mutation{
		{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("1")},
		{Op: kvrpcpb.Op_Insert, Key: []byte("b"), Value: []byte("1")},
		{Op: kvrpcpb.Op_Del, Key: []byte("c")},
	}))
	require.NoError(t, tx.Commit(bg))
	require.Equal(t, 0, f.count("Commit"), "one region: 1PC")
	require.Equal(t, 1, f.count("Prewrite"))
	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "a", "1")
	requireRead(t, rd, "c", "")

	// A key written after start_ts conflicts; nothing is written.
	require.NoError(t, kv.Mutate(late, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("2")},
		{Op: kvrpcpb.Op_Put, Key: []byte("z"), Value: []byte("2")}}))
	var wc *kv.WriteConflictError
	require.ErrorAs(t, late.Commit(bg), &wc)
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	requireRead(t, begin(t, c, kv.TxnOptions{}), "z", "")

	var ke *kv.KeyExistsError
	ins := begin(t, c, opts)
	require.NoError(t, kv.Mutate(ins, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: []byte("b")}}))
	require.ErrorAs(t, ins.Commit(bg), &ke)
}

func TestLargeTxnChunked(t *testing.T) {
	f := newFakeKV(t, "k5")
	c := f.newClient(Config{})
	tx := begin(t, c, kv.TxnOptions{OnePC: true, AsyncCommit: true})
	const n = 10_000
	for i := range n {
		require.NoError(t, tx.Set([]byte(fmt.Sprintf("k%05d", i)), make([]byte, 200)))
	}
	require.NoError(t, tx.Commit(bg))
	// 2 regions, ~2 MB in each: several prewrites per region; too many
	// keys for async commit and too big for 1PC, so plain 2PC.
	require.GreaterOrEqual(t, f.count("Prewrite"), 4)
	require.GreaterOrEqual(t, f.count("Commit"), 1)
	require.Eventually(t, func() bool { return f.lockCount() == 0 }, 10*time.Second, time.Millisecond)
	m, err := begin(t, c, kv.TxnOptions{}).BatchGet(bg, [][]byte{[]byte("k00000"), []byte("k09999")})
	require.NoError(t, err)
	require.Len(t, m, 2)
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
