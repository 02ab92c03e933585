package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/storetest"
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
			r := newRealStore(t, Config{}, "m")
			c := r.c
			tx := begin(t, c, tt.opts)
			keys := make([][]byte, len(tt.keys))
			for i, k := range tt.keys {
				keys[i] = []byte(k)
				require.NoError(t, tx.Set([]byte(k), []byte("v-"+k)))
			}
			if tt.opts.Pessimistic {
				_, err := tx.LockKeys(bg, kv.LockOptions{}, keys...)
				require.NoError(t, err)
			}
			// A reader at a later ts than start_ts (and for_update_ts)
			// reads every key, in both regions: the stores' max_ts is
			// then above start_ts, and async commit and 1PC must pick a
			// commit ts above the read.
			readTS := r.ts()
			rd := begin(t, c, kv.TxnOptions{ReadOnly: true, StartTS: readTS})
			m, err := rd.BatchGet(bg, keys)
			require.NoError(t, err)
			require.Empty(t, m)
			require.NoError(t, rd.Rollback(bg))

			commits := r.st.Calls("KvCommit")
			if tt.wantCommits == 0 {
				// The answer must not wait for any Commit RPC: the store
				// holds them all until Commit has returned.
				_, release := r.hold("KvCommit", nil, false)
				require.NoError(t, tx.Commit(bg))
				release()
			} else {
				require.NoError(t, tx.Commit(bg))
				require.Greater(t, r.st.Calls("KvCommit"), commits, "primary committed before the answer")
			}
			// Every key committed (secondaries in the background) at one
			// commit ts.
			require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
			var commitTS uint64
			for _, k := range tt.keys {
				ts := r.commitTSOf(k, tx.StartTS())
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
			rd = begin(t, c, kv.TxnOptions{})
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
// the reader: here the store holds it until the reader has its value).
func TestBigTxnResolvedInBackground(t *testing.T) {
	r := newRealStore(t, Config{})
	c := r.c
	for _, k := range []string{"a", "b", "c"} {
		r.put(k, "old")
	}
	start := r.ts()
	for _, k := range []string{"a", "b", "c"} {
		r.prewriteReq(&kvrpcpb.PrewriteRequest{
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte("new")}},
			PrimaryLock: []byte("a"), StartVersion: start, LockTtl: 100, TxnSize: smallTxnKeys, MinCommitTs: start + 1})
	}
	r.commit("a", start, r.ts()) // the primary: the transaction committed
	regionWide, release := r.hold("KvResolveLock", func(req proto.Message) bool {
		return len(req.(*kvrpcpb.ResolveLockRequest).GetKeys()) == 0
	}, false)
	rd := begin(t, c, kv.TxnOptions{})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	v, found, err := rd.Get(ctx, []byte("b"))
	require.NoError(t, err, "the reader waited for the region-wide resolve")
	require.True(t, found)
	require.Equal(t, "new", string(v))
	release()
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 10*time.Second, 10*time.Millisecond)
	requireRead(t, rd, "c", "new")
	require.Equal(t, 1, r.st.Hits(regionWide), "one region-wide resolve per transaction and region")
}

func TestReaderPushesLiveLock(t *testing.T) {
	r := newRealStore(t, Config{})
	c := r.c
	r.put("a", "old")
	start := r.ts()
	r.prewriteReq(&kvrpcpb.PrewriteRequest{ // alive for a minute
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("new")}},
		PrimaryLock: []byte("a"), StartVersion: start, LockTtl: 60_000, TxnSize: 1, MinCommitTs: start + 1})
	rd := begin(t, c, kv.TxnOptions{})
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	v, found, err := rd.Get(ctx, []byte("a"))
	require.NoError(t, err, "the reader pushes min_commit_ts instead of waiting")
	require.True(t, found)
	require.Equal(t, "old", string(v))
	locks := r.locks()
	require.Len(t, locks, 1)
	require.Greater(t, locks[0].GetMinCommitTs(), rd.StartTS())
}

func TestResolveExpiredAsyncCommit(t *testing.T) {
	r := newRealStore(t, Config{}, "m")
	c := r.c
	start := r.ts()
	put := func(k string) []*kvrpcpb.Mutation {
		return []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte("v")}}
	}
	r.prewriteReq(&kvrpcpb.PrewriteRequest{Mutations: put("a"), PrimaryLock: []byte("a"), StartVersion: start,
		LockTtl: 50, TxnSize: 2, MinCommitTs: start + 1, UseAsyncCommit: true, Secondaries: [][]byte{[]byte("z")}})
	// A read between the two prewrites raises max_ts: z's prewrite gets
	// the larger min_commit_ts.
	requireRead(t, begin(t, c, kv.TxnOptions{}), "y", "")
	r.prewriteReq(&kvrpcpb.PrewriteRequest{Mutations: put("z"), PrimaryLock: []byte("a"), StartVersion: start,
		LockTtl: 50, TxnSize: 2, MinCommitTs: start + 1, UseAsyncCommit: true})
	locks := r.locks()
	require.Len(t, locks, 2)
	minA, minZ := locks[0].GetMinCommitTs(), locks[1].GetMinCommitTs()
	require.Greater(t, minZ, minA)

	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "z", "v") // all prewrites there: committed at max min_commit_ts
	require.Equal(t, minZ, r.commitTSOf("a", start))
	require.Equal(t, minZ, r.commitTSOf("z", start))
}

func TestPessimisticRetryAtNewForUpdateTS(t *testing.T) {
	r := newRealStore(t, Config{})
	c := r.c
	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	// Another transaction commits a after the first request's
	// for_update_ts, before the store serves it.
	r.st.Inject(&storetest.Fault{Method: "KvPessimisticLock", Times: 1, Answer: func(req proto.Message) (proto.Message, error) {
		other, err := c.Begin(bg, kv.TxnOptions{})
		if err == nil {
			err = other.Set([]byte("a"), []byte("late"))
		}
		if err == nil {
			err = other.Commit(bg)
		}
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return r.serve(req)
	}})
	vals, err := tx.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "late", string(vals[0]))
	require.Equal(t, 2, r.st.Calls("KvPessimisticLock"))
	require.NoError(t, tx.Rollback(bg))
	require.Equal(t, 0, r.lockCount(), "rollback released the lock")
}

// countingOracle counts the timestamps a transaction client asks for.
type countingOracle struct {
	Oracle
	n atomic.Int64
}

func (o *countingOracle) GetTS(ctx context.Context) (uint64, error) {
	o.n.Add(1)
	return o.Oracle.GetTS(ctx)
}

// TestFirstLockRoundAtReadTS: a transaction's first lock round locks at
// its snapshot (no timestamp fetched), and a key committed after that
// snapshot makes the round run again at a fresh timestamp, so the value
// the lock returns is still the newest committed one; later rounds fetch a
// fresh for_update_ts each.
func TestFirstLockRoundAtReadTS(t *testing.T) {
	r := newRealStore(t, Config{})
	r.put("b", "old")
	o := &countingOracle{Oracle: r.st}
	c := NewClient(r.c.kv, o, Config{})

	tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
	require.Equal(t, int64(1), o.n.Load(), "start_ts")
	vals, err := tx.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "old", string(vals[0]))
	require.Equal(t, int64(1), o.n.Load(), "the first round locks at start_ts")
	require.Equal(t, tx.StartTS(), tx.ForUpdateTS())
	require.Equal(t, 1, r.st.Calls("KvPessimisticLock"))
	_, err = tx.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("c"))
	require.NoError(t, err)
	require.Equal(t, int64(2), o.n.Load(), "a later round fetches its for_update_ts")
	require.Greater(t, tx.ForUpdateTS(), tx.StartTS())
	require.NoError(t, tx.Rollback(bg))

	// Committed after start_ts, before the first round: the round at
	// start_ts conflicts and runs again at a fresh timestamp.
	tx = begin(t, c, kv.TxnOptions{Pessimistic: true})
	r.put("b", "new")
	calls := r.st.Calls("KvPessimisticLock")
	vals, err = tx.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "new", string(vals[0]))
	require.Equal(t, calls+2, r.st.Calls("KvPessimisticLock"))
	require.Greater(t, tx.ForUpdateTS(), tx.StartTS())
	require.NoError(t, tx.Set([]byte("b"), []byte("mine")))
	require.NoError(t, tx.Commit(bg))
	requireRead(t, begin(t, c, kv.TxnOptions{}), "b", "mine")
}

// TestPrimaryCommitLostIsUndetermined: the store applies the primary's
// commit but its answer never comes (the attempt times out): the commit
// is undetermined, never rolled back.
func TestPrimaryCommitLostIsUndetermined(t *testing.T) {
	r := newRealStoreWith(t, Config{}, kvclient.Config{RPCTimeout: time.Second}, "m")
	tx := begin(t, r.c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), []byte("1")))
	require.NoError(t, tx.Set([]byte("z"), []byte("1")))
	lost, _ := r.hold("KvCommit", nil, true)
	err := tx.Commit(bg)
	require.ErrorIs(t, err, kv.ErrUndetermined)
	require.Equal(t, 1, r.st.Hits(lost))
	require.Equal(t, 0, r.st.Calls("KvBatchRollback"), "never rolled back")
}

func TestTxnTooLarge(t *testing.T) {
	c := newRealStore(t, Config{MaxTxnSize: 100}).c
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
	errX := errors.New("x")
	require.True(t, errors.Is(mapErr(fmt.Errorf("x: %w", errX)), errX))
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
	r := newRealStore(t, Config{})
	c := r.c
	warm := begin(t, c, kv.TxnOptions{})
	requireRead(t, warm, "a1", "") // the client caches the one region
	var partialOnePC atomic.Int32
	split := sync.OnceFunc(func() { r.st.Split([]byte("m")) })
	r.st.Inject(&storetest.Fault{Method: "KvPrewrite", Answer: func(req proto.Message) (proto.Message, error) {
		split() // before the first prewrite is served
		if pr := req.(*kvrpcpb.PrewriteRequest); pr.GetTryOnePc() && len(pr.GetMutations()) != 2 {
			partialOnePC.Add(1)
		}
		return r.serve(req)
	}})
	tx := begin(t, c, kv.TxnOptions{OnePC: true})
	for _, k := range []string{"a1", "z1"} {
		require.NoError(t, tx.Set([]byte(k), []byte("v-"+k)))
	}
	require.NoError(t, tx.Commit(bg))
	require.Len(t, r.st.Engine().Regions(), 2)
	require.Zero(t, partialOnePC.Load(), "no 1PC of a part of the transaction")
	require.GreaterOrEqual(t, r.st.Calls("KvCommit"), 1, "committed with 2PC")
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	require.NotZero(t, r.commitTSOf("a1", tx.StartTS()))
	require.Equal(t, r.commitTSOf("a1", tx.StartTS()), r.commitTSOf("z1", tx.StartTS()), "one commit ts")
}

// TestPessimisticLockResentWhenUndetermined: a lock request whose answer
// is lost (the store applies it but the answer never comes: the attempt
// times out, as when the leader dies under it) is sent again while the
// statement's lock wait lasts, and the resend finds the key locked by
// this transaction; past the lock wait the statement fails undetermined
// (9002) as before.
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
			// Attempts time out after the 1 s RPC timeout plus the
			// request's wait (at most half of it).
			r := newRealStoreWith(t, Config{}, kvclient.Config{RPCTimeout: time.Second}, "m")
			c := r.c
			r.put("a", "1")
			lost := &storetest.Fault{Method: "KvPessimisticLock", Times: 1, Applied: true}
			held := make(chan struct{})
			t.Cleanup(func() { close(held) }) // before the store stops
			lost.Answer = func(proto.Message) (proto.Message, error) {
				<-held
				return nil, status.Error(codes.Unavailable, "answer lost")
			}
			r.st.Inject(lost)
			calls := r.st.Calls("KvPessimisticLock")
			tx := begin(t, c, kv.TxnOptions{Pessimistic: true})
			vals, err := tx.LockKeys(bg, kv.LockOptions{ReturnValues: true, WaitTimeoutMs: tc.waitMs}, []byte("a"), []byte("z"))
			calls = r.st.Calls("KvPessimisticLock") - calls
			require.Equal(t, 1, r.st.Hits(lost))
			if !tc.ok {
				require.ErrorIs(t, err, kv.ErrUndetermined)
				require.Equal(t, 1, calls, "no resend past the lock wait")
				require.NoError(t, tx.Rollback(bg))
				return
			}
			require.NoError(t, err)
			require.Equal(t, [][]byte{[]byte("1"), nil}, vals)
			require.GreaterOrEqual(t, calls, 3, "primary resent, then the secondary")
			require.NoError(t, tx.Set([]byte("a"), []byte("2")))
			require.NoError(t, tx.Commit(bg))
			require.Eventually(t, func() bool { return r.lockCount() == 0 }, 10*time.Second, time.Millisecond)
			requireRead(t, begin(t, c, kv.TxnOptions{}), "a", "2")
		})
	}
}

// TestPrewriteResentWhenUndetermined: a 2PC prewrite whose answer is lost
// after the store applied it (the attempt times out, as when the leader's
// store dies under it) is sent again, finds its own locks,
// and the transaction commits: a 2PC prewrite commits nothing by itself,
// so a resend is safe (a 1PC one is not: TestOnePCAnswerLostIsUndetermined).
func TestPrewriteResentWhenUndetermined(t *testing.T) {
	r := newRealStoreWith(t, Config{}, kvclient.Config{RPCTimeout: time.Second}, "m")
	var first atomic.Bool
	lost, _ := r.hold("KvPrewrite", func(proto.Message) bool { return first.CompareAndSwap(false, true) }, true)
	prewrites, resends := r.st.Calls("KvPrewrite"), counterValue(t, prewriteResends)
	tx := begin(t, r.c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), []byte("1")))
	require.NoError(t, tx.Set([]byte("z"), []byte("1")))
	require.NoError(t, tx.Commit(bg))
	require.Equal(t, 1, r.st.Hits(lost))
	require.GreaterOrEqual(t, r.st.Calls("KvPrewrite"), prewrites+3, "two regions, one resent")
	require.Equal(t, 1.0, counterValue(t, prewriteResends)-resends)
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 10*time.Second, time.Millisecond)
	requireRead(t, begin(t, r.c, kv.TxnOptions{}), "a", "1")
	requireRead(t, begin(t, r.c, kv.TxnOptions{}), "z", "1")
}

// counterValue reads a counter of this package.
func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// A lock's TTL counts from its start_ts's physical part, on PD's clock;
// heartbeats must advise LockTTL past the transaction's age, measured here,
// whatever PD's clock says. With PD's timestamps an hour ahead of this
// node's clock, the old formula (this node's wall clock minus start_ts's
// physical part, as a uint64) advised a TTL of about 2^64 ms, and a
// transaction whose node then died kept its locks for ever.
func TestHeartbeatTTLIsTheTransactionsAge(t *testing.T) {
	r := newRealStoreOpts(t, Config{LockTTL: 3 * time.Second, HeartbeatInterval: 10 * time.Millisecond},
		kvclient.Config{}, storetest.Options{ClockAhead: time.Hour})
	ttls := make(chan uint64, 16)
	r.st.Inject(&storetest.Fault{Method: "KvTxnHeartBeat", Answer: func(req proto.Message) (proto.Message, error) {
		select {
		case ttls <- req.(*kvrpcpb.TxnHeartBeatRequest).GetAdviseLockTtl():
		default:
		}
		return r.serve(req)
	}})
	tx := begin(t, r.c, kv.TxnOptions{Pessimistic: true})
	defer func() { _ = tx.Rollback(bg) }()
	require.Greater(t, tso.Physical(tx.StartTS()), time.Now().Add(59*time.Minute).UnixMilli(), "PD's clock an hour ahead")
	_, err := tx.LockKeys(bg, kv.LockOptions{}, []byte("a"))
	require.NoError(t, err)
	ttl := <-ttls
	require.GreaterOrEqual(t, ttl, uint64(3000))
	require.Less(t, ttl, uint64(3000+60_000), "LockTTL past the transaction's age, not past PD's clock offset")
}
