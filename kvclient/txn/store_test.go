package txn

// Transaction semantics against the real store side: store/txn and its
// Percolator commands behind store/storetest, over gRPC on loopback. Tests
// that need a store's answer held or lost at a chosen point inject a
// storetest.Fault (held) that serves the request with the real command
// once released.

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/server"
	"github.com/stratadb/strata/store/storetest"
)

// realStore is a store/storetest.Store with a transaction client over it.
type realStore struct {
	t  *testing.T
	st *storetest.Store
	c  *Client
}

// newRealStore starts a store with regions split at splits, led by two
// store nodes.
func newRealStore(t *testing.T, cfg Config, splits ...string) *realStore {
	return newRealStoreWith(t, cfg, kvclient.Config{}, splits...)
}

// newRealStoreWith is newRealStore with the KV client's configuration
// (timeouts default to 5 s of backoff and 2 s per RPC).
func newRealStoreWith(t *testing.T, cfg Config, kvCfg kvclient.Config, splits ...string) *realStore {
	opts := storetest.Options{Stores: 2}
	for _, s := range splits {
		opts.SplitKeys = append(opts.SplitKeys, []byte(s))
	}
	return newRealStoreOpts(t, cfg, kvCfg, opts)
}

// newRealStoreOpts is newRealStoreWith with the store's options.
func newRealStoreOpts(t *testing.T, cfg Config, kvCfg kvclient.Config, opts storetest.Options) *realStore {
	if kvCfg.BackoffBudget == 0 {
		kvCfg.BackoffBudget = 5 * time.Second
	}
	if kvCfg.RPCTimeout == 0 {
		kvCfg.RPCTimeout = 2 * time.Second
	}
	st, err := storetest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	kvc := kvclient.New(st, kvCfg)
	t.Cleanup(func() { _ = kvc.Close() })
	return &realStore{t: t, st: st, c: NewClient(kvc, st, cfg)}
}

// put commits key=value in a transaction of its own and returns a
// timestamp at which it is visible.
func (r *realStore) put(key, value string) uint64 {
	r.t.Helper()
	tx := begin(r.t, r.c, kv.TxnOptions{})
	require.NoError(r.t, tx.Set([]byte(key), []byte(value)))
	require.NoError(r.t, tx.Commit(bg))
	return r.ts()
}

// ts returns a fresh timestamp.
func (r *realStore) ts() uint64 {
	r.t.Helper()
	ts, err := r.st.GetTS(bg)
	require.NoError(r.t, err)
	return ts
}

func (r *realStore) lockCount() int {
	r.t.Helper()
	locks, err := r.st.Locks(bg, math.MaxUint64)
	require.NoError(r.t, err)
	return len(locks)
}

// rctx is the context of a request on key's region, at its leader.
func (r *realStore) rctx(key string) *kvrpcpb.Context {
	reg, leader, err := r.st.GetRegion(bg, []byte(key))
	require.NoError(r.t, err)
	return &kvrpcpb.Context{RegionId: reg.GetId(), RegionEpoch: reg.GetRegionEpoch(), Peer: leader}
}

// prewrite leaves a lock of transaction startTS on key (value, primary,
// ttl in ms), sent to the store as a client that then died would have.
func (r *realStore) prewrite(key, primary string, startTS, ttl uint64, value string) {
	r.t.Helper()
	resp, err := r.st.Storage().Prewrite(bg, &kvrpcpb.PrewriteRequest{Context: r.rctx(key),
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}},
		PrimaryLock: []byte(primary), StartVersion: startTS, LockTtl: ttl, TxnSize: 2})
	require.NoError(r.t, err)
	require.Nil(r.t, resp.GetRegionError())
	require.Empty(r.t, resp.GetErrors())
}

// prewriteReq sends req (its context filled in for the region of its
// first key) to the store as a client that then died would have.
func (r *realStore) prewriteReq(req *kvrpcpb.PrewriteRequest) {
	r.t.Helper()
	req.Context = r.rctx(string(req.GetMutations()[0].GetKey()))
	resp, err := r.st.Storage().Prewrite(bg, req)
	require.NoError(r.t, err)
	require.Nil(r.t, resp.GetRegionError())
	require.Empty(r.t, resp.GetErrors())
}

// commit commits key's lock of transaction startTS at commitTS.
func (r *realStore) commit(key string, startTS, commitTS uint64) {
	r.t.Helper()
	resp, err := r.st.Storage().Commit(bg, &kvrpcpb.CommitRequest{Context: r.rctx(key),
		StartVersion: startTS, Keys: [][]byte{[]byte(key)}, CommitVersion: commitTS})
	require.NoError(r.t, err)
	require.Nil(r.t, resp.GetRegionError())
	require.Nil(r.t, resp.GetError())
}

func (r *realStore) locks() []*kvrpcpb.LockInfo {
	r.t.Helper()
	locks, err := r.st.Locks(bg, math.MaxUint64)
	require.NoError(r.t, err)
	return locks
}

// commitTSOf returns the commit ts of the version of key transaction
// startTS wrote (0: none, or rolled back), from the store's write records.
func (r *realStore) commitTSOf(key string, startTS uint64) uint64 {
	r.t.Helper()
	snap := r.st.Engine().Snapshot()
	defer snap.Close()
	rd := mvcc.NewTxnReader(snap)
	defer rd.Close()
	rec, err := rd.TxnCommitRecord([]byte(key), startTS)
	require.NoError(r.t, err)
	if rec.Kind != mvcc.RecordCommitted {
		return 0
	}
	return rec.CommitTS
}

// serve runs req with the store's own command, as the store would have
// served it: what a fault answers once it has done its part.
func (r *realStore) serve(req proto.Message) (proto.Message, error) {
	st := r.st.Storage()
	var resp proto.Message
	var err error
	switch req := req.(type) {
	case *kvrpcpb.PrewriteRequest:
		resp, err = st.Prewrite(bg, req)
	case *kvrpcpb.CommitRequest:
		resp, err = st.Commit(bg, req)
	case *kvrpcpb.PessimisticLockRequest:
		resp, err = st.PessimisticLock(bg, req)
	case *kvrpcpb.ResolveLockRequest:
		resp, err = st.ResolveLock(bg, req)
	case *kvrpcpb.TxnHeartBeatRequest:
		resp, err = st.TxnHeartBeat(bg, req)
	default:
		return nil, status.Errorf(codes.Unimplemented, "serve: %T", req)
	}
	if err != nil {
		return nil, server.GRPCError(err)
	}
	return resp, nil
}

// hold injects a fault that holds the requests of method that match
// (match nil: all) until release is called, at the latest when the test
// ends: then the store serves them (applied false) or, applied, the store
// applied each at once and its answer is lost (the client sees none before
// its attempt times out).
func (r *realStore) hold(method string, match func(proto.Message) bool, applied bool) (f *storetest.Fault, release func()) {
	held := make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	r.t.Cleanup(release) // before the store stops: it waits for held requests
	f = &storetest.Fault{Method: method, Match: match, Applied: applied, Answer: func(req proto.Message) (proto.Message, error) {
		<-held
		if applied {
			return nil, status.Error(codes.Unavailable, "answer lost")
		}
		return r.serve(req)
	}}
	r.st.Inject(f)
	return f, release
}

func TestOptimisticConflict(t *testing.T) {
	r := newRealStore(t, Config{}, "m")
	tx := begin(t, r.c, kv.TxnOptions{})
	require.NoError(t, tx.Set([]byte("a"), []byte("mine")))
	require.NoError(t, tx.Set([]byte("z"), []byte("mine")))
	r.put("z", "theirs")
	err := tx.Commit(bg)
	var wc *kv.WriteConflictError
	require.ErrorAs(t, err, &wc)
	require.Equal(t, "z", string(wc.Key))
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond, "prewritten keys rolled back")
	rd := begin(t, r.c, kv.TxnOptions{})
	requireRead(t, rd, "a", "")
	requireRead(t, rd, "z", "theirs")
}

// A FailOnLock transaction whose prewrite meets another transaction's
// lock fails at once with kv.ErrWriteLocked: what it prewrote in the other
// region is rolled back, and the other transaction's lock is left alone.
func TestFailOnLock(t *testing.T) {
	r := newRealStore(t, Config{}, "m")
	other := r.ts()
	r.prewrite("z", "z", other, 60_000, "theirs") // a live lock, 1 min TTL
	tx := begin(t, r.c, kv.TxnOptions{FailOnLock: true})
	require.NoError(t, tx.Set([]byte("a"), []byte("mine")))
	require.NoError(t, tx.Set([]byte("z"), []byte("mine")))
	start := time.Now()
	require.ErrorIs(t, tx.Commit(bg), kv.ErrWriteLocked)
	require.Less(t, time.Since(start), 5*time.Second, "did not wait for the lock's TTL")
	require.Eventually(t, func() bool { return r.lockCount() == 1 }, 5*time.Second, time.Millisecond, "own prewrite rolled back")
	locks, err := r.st.Locks(bg, math.MaxUint64)
	require.NoError(t, err)
	require.Equal(t, "z", string(locks[0].GetKey()))
	require.Equal(t, other, locks[0].GetLockVersion())
	r.commit("z", other, r.ts())
	rd := begin(t, r.c, kv.TxnOptions{})
	requireRead(t, rd, "a", "")
	requireRead(t, rd, "z", "theirs")
}

// A key the transaction inserted and then deleted is only checked
// (Op_CheckNotExists): no lock is left on it, so it can be neither the
// primary nor an async-commit secondary. Here it sorts first. A reader
// that meets the transaction's locks before the background commit (held
// here) must find it committed, not roll it back.
func TestCheckNotExistsIsNeverPrimaryNorSecondary(t *testing.T) {
	for _, opts := range []kv.TxnOptions{{AsyncCommit: true}, {}} {
		t.Run(fmt.Sprintf("async=%v", opts.AsyncCommit), func(t *testing.T) {
			r := newRealStore(t, Config{}, "m")
			tx := begin(t, r.c, opts)
			require.NoError(t, tx.Insert([]byte("a"), []byte("gone")))
			require.NoError(t, tx.Delete([]byte("a")))
			require.NoError(t, tx.Set([]byte("b"), []byte("v")))
			require.NoError(t, tx.Set([]byte("z"), []byte("v")))
			if opts.AsyncCommit {
				_, release := r.hold("KvCommit", nil, false)
				require.NoError(t, tx.Commit(bg))
				rd := begin(t, r.c, kv.TxnOptions{})
				requireRead(t, rd, "z", "v")
				requireRead(t, rd, "b", "v")
				release()
			} else {
				require.NoError(t, tx.Commit(bg))
			}
			require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
			rd := begin(t, r.c, kv.TxnOptions{})
			requireRead(t, rd, "a", "")
			requireRead(t, rd, "b", "v")
			requireRead(t, rd, "z", "v")
		})
	}
}

func TestInsertExists(t *testing.T) {
	r := newRealStore(t, Config{})
	r.put("a", "1")
	tx := begin(t, r.c, kv.TxnOptions{})
	require.NoError(t, tx.Insert([]byte("a"), []byte("2")))
	var ke *kv.KeyExistsError
	require.ErrorAs(t, tx.Commit(bg), &ke)

	tx = begin(t, r.c, kv.TxnOptions{})
	require.NoError(t, tx.Insert([]byte("b"), []byte("1")))
	require.ErrorAs(t, tx.Insert([]byte("b"), []byte("2")), &ke, "buffered value exists")
	require.NoError(t, tx.Commit(bg))
}

func TestSnapshotAndOwnWrites(t *testing.T) {
	r := newRealStore(t, Config{}, "c", "f")
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		r.put(k, "old-"+k)
	}
	tx := begin(t, r.c, kv.TxnOptions{})
	r.put("d", "newer") // after start_ts: invisible
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
	r := newRealStore(t, Config{})
	tx := begin(t, r.c, kv.TxnOptions{Pessimistic: true})
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
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	rd := begin(t, r.c, kv.TxnOptions{})
	requireRead(t, rd, "a", "1")
	requireRead(t, rd, "b", "")
}

// A transaction whose client died after prewriting (its TTL expired) is
// resolved by a reader: rolled back, or committed if its primary was.
func TestResolveAbandonedTxn(t *testing.T) {
	tests := []struct {
		name      string
		committed bool // the primary was committed before the client died
	}{{"rolled back", false}, {"committed", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRealStore(t, Config{}, "m")
			r.put("a", "old")
			start := r.put("z", "old")
			r.prewrite("a", "a", start, 100, "new") // ttl 100ms
			r.prewrite("z", "a", start, 100, "new")
			want := "old"
			if tt.committed {
				resp, err := r.st.Storage().Commit(bg, &kvrpcpb.CommitRequest{Context: r.rctx("a"),
					StartVersion: start, Keys: [][]byte{[]byte("a")}, CommitVersion: r.ts()})
				require.NoError(t, err)
				require.Nil(t, resp.GetError())
				want = "new"
			}
			rd := begin(t, r.c, kv.TxnOptions{})
			// Waits (backs off) until the TTL expires, then resolves.
			requireRead(t, rd, "z", want)
			requireRead(t, rd, "a", want)
			require.Equal(t, 0, r.lockCount())
			ps, err := rd.Scan(bg, nil, nil, 0, false)
			require.NoError(t, err)
			require.Len(t, ps, 2)
		})
	}
}

func TestPessimisticLocks(t *testing.T) {
	r := newRealStore(t, Config{}, "m")
	r.put("a", "1")
	gets := r.st.Calls("KvGet") + r.st.Calls("KvBatchGet")
	t1 := begin(t, r.c, kv.TxnOptions{Pessimistic: true})
	vals, err := t1.LockKeys(bg, kv.LockOptions{ReturnValues: true}, []byte("z"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte(nil), []byte("1")}, vals)
	// The lock answered both values, the absent one too: no read follows
	// (an INSERT's unique checks read nothing per key).
	require.Equal(t, gets, r.st.Calls("KvGet")+r.st.Calls("KvBatchGet"))

	t2 := begin(t, r.c, kv.TxnOptions{Pessimistic: true})
	_, err = t2.LockKeys(bg, kv.LockOptions{NoWait: true}, []byte("a"))
	var lc *kv.LockConflictError
	require.ErrorAs(t, err, &lc)
	start := time.Now()
	_, err = t2.LockKeys(bg, kv.LockOptions{WaitTimeoutMs: 200}, []byte("a"))
	require.ErrorIs(t, err, kv.ErrLockWaitTimeout)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	// t2 waits in the store; t1 commits a new value; t2's lock, taken at
	// a fresh for_update_ts, returns it.
	done := make(chan error, 1)
	var got [][]byte
	go func() {
		var err error
		got, err = t2.LockKeys(bg, kv.LockOptions{ReturnValues: true, WaitTimeoutMs: 5000}, []byte("a"))
		done <- err
	}()
	require.Eventually(t, func() bool { return r.st.LockWaiters() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, t1.Set([]byte("a"), []byte("2")))
	require.NoError(t, t1.Commit(bg))
	require.NoError(t, <-done)
	require.Equal(t, "2", string(got[0]))
	require.NoError(t, t2.Set([]byte("a"), []byte("3")))
	require.NoError(t, t2.Commit(bg))
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	requireRead(t, begin(t, r.c, kv.TxnOptions{}), "a", "3")
}

func TestReadOnlyAndFinished(t *testing.T) {
	r := newRealStore(t, Config{})
	ts := r.put("a", "1")
	r.put("a", "2")
	tx := begin(t, r.c, kv.TxnOptions{ReadOnly: true, StartTS: ts})
	requireRead(t, tx, "a", "1")
	require.ErrorIs(t, tx.Set([]byte("a"), nil), ErrReadOnly)
	require.NoError(t, tx.Commit(bg))
	_, _, err := tx.Get(bg, []byte("a"))
	require.ErrorIs(t, err, ErrFinished)
	_, err = r.c.Begin(bg, kv.TxnOptions{StartTS: ts})
	require.Error(t, err)
}

func TestReadCommittedFreshSnapshotPerStatement(t *testing.T) {
	r := newRealStore(t, Config{})
	r.put("a", "1")
	tx := begin(t, r.c, kv.TxnOptions{Isolation: kv.ReadCommitted})
	tx.StmtBegin()
	requireRead(t, tx, "a", "1")
	tx.StmtCommit()
	r.put("a", "2")
	requireRead(t, tx, "a", "1") // same statement snapshot until the next statement
	tx.StmtBegin()
	requireRead(t, tx, "a", "2")
	tx.StmtCommit()
}

// TestUpdateTxn: the transaction kv.Update runs (catalog, DDL and the
// schema sync rows write through it): optimistic, 1PC in one region; a
// key written after its start_ts conflicts and nothing is written; an
// Insert of a live key fails.
func TestUpdateTxn(t *testing.T) {
	r := newRealStore(t, Config{}, "m")
	c := r.c
	r.put("c", "1")
	opts := kv.TxnOptions{OnePC: true, AsyncCommit: true}
	tx := begin(t, c, opts)
	late := begin(t, c, opts) // a second one that read "a" before the first committed
	requireRead(t, late, "a", "")
	require.NoError(t, kv.Mutate(tx, []*kvrpcpb.Mutation{
		{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("1")},
		{Op: kvrpcpb.Op_Insert, Key: []byte("b"), Value: []byte("1")},
		{Op: kvrpcpb.Op_Del, Key: []byte("c")},
	}))
	commits, prewrites := r.st.Calls("KvCommit"), r.st.Calls("KvPrewrite")
	require.NoError(t, tx.Commit(bg))
	require.Equal(t, commits, r.st.Calls("KvCommit"), "one region: 1PC")
	require.Equal(t, prewrites+1, r.st.Calls("KvPrewrite"))
	rd := begin(t, c, kv.TxnOptions{})
	requireRead(t, rd, "a", "1")
	requireRead(t, rd, "c", "")

	// A key written after start_ts conflicts; nothing is written.
	require.NoError(t, kv.Mutate(late, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("2")},
		{Op: kvrpcpb.Op_Put, Key: []byte("z"), Value: []byte("2")}}))
	var wc *kv.WriteConflictError
	require.ErrorAs(t, late.Commit(bg), &wc)
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, 5*time.Second, time.Millisecond)
	requireRead(t, begin(t, c, kv.TxnOptions{}), "z", "")

	var ke *kv.KeyExistsError
	ins := begin(t, c, opts)
	require.NoError(t, kv.Mutate(ins, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: []byte("b")}}))
	require.ErrorAs(t, ins.Commit(bg), &ke)
}

func TestLargeTxnChunked(t *testing.T) {
	// A commit request of thousands of keys can outlast the tests' 2 s RPC
	// timeout under -race on a loaded machine: the secondaries' commit
	// then stops (undetermined) and leaves their locks to readers, which
	// is correct but not what this test checks.
	r := newRealStoreWith(t, Config{}, kvclient.Config{RPCTimeout: 20 * time.Second}, "k5")
	c := r.c
	tx := begin(t, c, kv.TxnOptions{OnePC: true, AsyncCommit: true})
	const n = 10_000
	for i := range n {
		require.NoError(t, tx.Set([]byte(fmt.Sprintf("k%05d", i)), make([]byte, 200)))
	}
	require.NoError(t, tx.Commit(bg))
	// 2 regions, ~2 MB in each: several prewrites per region; too many
	// keys for async commit and too big for 1PC, so plain 2PC.
	require.GreaterOrEqual(t, r.st.Calls("KvPrewrite"), 4)
	require.GreaterOrEqual(t, r.st.Calls("KvCommit"), 1)
	// The secondaries are committed in the background: a bound on a stuck
	// commit.
	require.Eventually(t, func() bool { return r.lockCount() == 0 }, time.Minute, time.Millisecond)
	m, err := begin(t, c, kv.TxnOptions{}).BatchGet(bg, [][]byte{[]byte("k00000"), []byte("k09999")})
	require.NoError(t, err)
	require.Len(t, m, 2)
}

// TestOnePCAnswerLostIsSettled: a 1PC prewrite whose answer was lost
// (the store answers codes.Unknown: its write's outcome is unknown, as
// when the leader dies under it) is never sent again; the client asks the
// primary's leader instead (Cleanup at current_ts 0). If the store had
// applied it, the commit succeeds; if not, the primary is rolled back
// there (which fences a late 1PC) and the commit fails with
// kv.ErrCommitLost, which the client may retry (1213). On a BatchCommands
// stream the handler's error carries the same code (error_code); before
// it did, the client took the error for "not run", sent the prewrite
// again, and reported the write conflict with its own commit (an
// autocommit statement would then have run twice).
func TestOnePCAnswerLostIsSettled(t *testing.T) {
	for _, applied := range []bool{true, false} {
		for _, pessimistic := range []bool{false, true} {
			unary := pessimistic // both transports, each mode once
			t.Run(fmt.Sprintf("applied=%v/pessimistic=%v/unary=%v", applied, pessimistic, unary), func(t *testing.T) {
				r := newRealStoreWith(t, Config{}, kvclient.Config{DisableBatch: unary})
				r.put("a", "0")
				lost := &storetest.Fault{Method: "KvPrewrite", Times: 1, Applied: applied, Answer: func(proto.Message) (proto.Message, error) {
					return nil, server.GRPCError(raftstore.ErrUndetermined)
				}}
				r.st.Inject(lost)
				prewrites, cleanups := r.st.Calls("KvPrewrite"), r.st.Calls("KvCleanup")
				tx := begin(t, r.c, kv.TxnOptions{OnePC: true, AsyncCommit: true, Pessimistic: pessimistic})
				if pessimistic {
					_, err := tx.LockKeys(bg, kv.LockOptions{}, []byte("a"))
					require.NoError(t, err)
				}
				require.NoError(t, tx.Set([]byte("a"), []byte("1")))
				err := tx.Commit(bg)
				require.Equal(t, 1, r.st.Hits(lost))
				require.Equal(t, prewrites+1, r.st.Calls("KvPrewrite"), "the prewrite was not sent again")
				require.Equal(t, cleanups+1, r.st.Calls("KvCleanup"), "the primary was settled at its leader")
				if applied {
					require.NoError(t, err)
					requireRead(t, begin(t, r.c, kv.TxnOptions{}), "a", "1")
					return
				}
				require.ErrorIs(t, err, kv.ErrCommitLost)
				require.NotErrorIs(t, err, kv.ErrUndetermined)
				requireRead(t, begin(t, r.c, kv.TxnOptions{}), "a", "0")
				// The rollback record fences the lost 1PC: sent again, it fails.
				late := &kvrpcpb.PrewriteRequest{
					Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("late")}},
					PrimaryLock: []byte("a"), StartVersion: tx.StartTS(), LockTtl: 3000, TryOnePc: true,
				}
				if pessimistic {
					late.ForUpdateTs = tx.ForUpdateTS()
					late.PessimisticActions = []kvrpcpb.PessimisticAction{kvrpcpb.PessimisticAction_DoPessimisticCheck}
				}
				resp, rerr := r.serve(late)
				require.NoError(t, rerr)
				require.NotEmpty(t, resp.(*kvrpcpb.PrewriteResponse).GetErrors(), "a late 1PC of the rolled-back transaction is refused")
				requireRead(t, begin(t, r.c, kv.TxnOptions{}), "a", "0")
			})
		}
	}
}
