package raftstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

// Issue 25 §3: a leader read that waits on an in-memory lock (a 1PC write
// in flight on its key) while its peer loses the region must not read the
// region's data as this store has it afterwards. The write is answered
// "undetermined" when the peer installs a snapshot, is destroyed, or (5
// voters) has the write's entry overwritten and not decided in time; the
// read it released must then fail with a region error the client retries,
// or read what every later read at its timestamp reads.

// txnEngine is txn.Engine over a harness store, as store/server's raftEngine
// is over a real one (store/server imports raftstore, so this package cannot
// use it). With hold set, a write answered ErrUndetermined returns only
// once release is called: the test decides when the write's in-memory
// lock is released relative to the loop.
type txnEngine struct {
	s    *Store
	hold chan struct{}
	held atomic.Bool
}

func (e *txnEngine) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return e.s.ReadIndex(ctx, rctx)
}

func (e *txnEngine) Snapshot() txn.Snapshot {
	v, err := mvcc.NewView(e.s.Engine())
	if err != nil {
		panic(err)
	}
	return v
}

func (e *txnEngine) LeaderGeneration() uint64 { return e.s.LeaderGeneration() }

func (e *txnEngine) LeaderTerm(regionID uint64) uint64 { return e.s.LeaderTerm(regionID) }

func (e *txnEngine) Write(ctx context.Context, rctx *kvrpcpb.Context, region *metapb.Region, gen uint64, reqs []*raft_cmdpb.Request, _ *kvrpcpb.WriteDetail) (*errorpb.Error, error) {
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header:   &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), Peer: rctx.GetPeer(), RegionEpoch: region.GetRegionEpoch()},
		Requests: reqs,
	}
	resp, err := e.s.Propose(ctx, cmd, gen)
	if errors.Is(err, ErrUndetermined) && e.hold != nil {
		e.held.Store(true)
		<-e.hold
	}
	if err != nil {
		return nil, err
	}
	return resp.GetRegionError(), nil
}

func (e *txnEngine) holdUndetermined() { e.hold = make(chan struct{}) }
func (e *txnEngine) release()          { close(e.hold) }

type zeroTSO struct{}

func (zeroTSO) GetTS(context.Context) (uint64, error) { return 0, nil }

// txnNode is the transaction layer of one harness store.
type txnNode struct {
	h   *harness
	s   *Store
	eng *txnEngine
	cm  *concurrency.Manager
	st  *txn.Storage
}

func (h *harness) txnOn(s *Store) *txnNode {
	eng := &txnEngine{s: s}
	cm := concurrency.New()
	return &txnNode{h: h, s: s, eng: eng, cm: cm, st: txn.New(eng, cm, zeroTSO{}, txn.Config{})}
}

func (n *txnNode) rctx(regionID uint64) *kvrpcpb.Context {
	p := n.s.peers[regionID]
	return &kvrpcpb.Context{RegionId: regionID, RegionEpoch: proto.Clone(p.region.GetRegionEpoch()).(*metapb.RegionEpoch), Peer: p.meta}
}

// async is a call running on its own goroutine.
type async[T any] struct {
	done chan struct{}
	v    T
	err  error
}

func goAsync[T any](f func() (T, error)) *async[T] {
	a := &async[T]{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.v, a.err = f()
	}()
	return a
}

func (a *async[T]) finished() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// onePC starts a 1PC prewrite of key=value at startTS on the node.
func (n *txnNode) onePC(regionID uint64, key, value string, startTS uint64) *async[*kvrpcpb.PrewriteResponse] {
	rctx := n.rctx(regionID)
	return goAsync(func() (*kvrpcpb.PrewriteResponse, error) {
		return n.st.Prewrite(context.Background(), &kvrpcpb.PrewriteRequest{Context: rctx,
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}},
			PrimaryLock: []byte(key), StartVersion: startTS, LockTtl: 3000, TryOnePc: true})
	})
}

// get starts a leader read of key at ts on the node.
func (n *txnNode) get(regionID uint64, key string, ts uint64) *async[*kvrpcpb.GetResponse] {
	rctx := n.rctx(regionID)
	return goAsync(func() (*kvrpcpb.GetResponse, error) {
		return n.st.Get(context.Background(), &kvrpcpb.GetRequest{Context: rctx, Key: []byte(key), Version: ts})
	})
}

// driveUntil settles the stores without ticking (the manual clock, and so
// every lease, stands still) until cond holds: cond waits for a goroutine
// of the test to reach the loop or the concurrency manager. It polls with
// a wall-clock deadline.
func (h *harness) driveUntil(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		require.True(h.t, time.Now().Before(deadline), "%s: not reached\n%s", what, h.dump())
		h.settle()
		time.Sleep(time.Millisecond) // poll interval
	}
}

const (
	leaderReadKey = "k"
	leaderReadTS  = 1000 // above every commit ts of the test
)

// commitV0 commits k=v0 at start ts 10 through n (1PC).
func (n *txnNode) commitV0(regionID uint64) {
	w := n.onePC(regionID, leaderReadKey, "v0", 10)
	n.h.driveUntil("k=v0 committed", w.finished)
	require.NoError(n.h.t, w.err)
	require.NotZero(n.h.t, w.v.GetOnePcCommitTs(), "k=v0 not committed in one phase: %v", w.v)
}

// blockedRead starts the 1PC write k=v1 on n (whose store leads the
// region and whose lease stands still until the next tick) and, once its
// entry is in the local log, a read of k at leaderReadTS, and returns both
// once the read waits for the write in the concurrency manager. The
// caller's filters keep the write from committing.
func (n *txnNode) blockedRead(regionID uint64) (w *async[*kvrpcpb.PrewriteResponse], read *async[*kvrpcpb.GetResponse], index uint64) {
	h := n.h
	w = n.onePC(regionID, leaderReadKey, "v1", 20)
	h.driveUntil("k=v1 in flight", func() bool {
		p := n.s.peers[regionID]
		return n.cm.Blocks([]byte(leaderReadKey), leaderReadTS) && len(p.pending) > 0
	})
	index = n.s.peers[regionID].pending[0].index
	read = n.get(regionID, leaderReadKey, leaderReadTS)
	h.driveUntil("the read waits for k=v1", func() bool { return n.cm.WaitingReads() == 1 })
	require.False(h.t, w.finished())
	return w, read, index
}

// cutOffLeader starts a 3-store harness (tune: its config), commits k=v0
// and cuts the leader off with k=v1 in flight and a read waiting for it;
// it returns once the others elected a leader.
func cutOffLeader(t *testing.T, seed uint64, tune func(*Config)) (h *harness, rid uint64, n *txnNode, w *async[*kvrpcpb.PrewriteResponse], read *async[*kvrpcpb.GetResponse]) {
	h = newHarness(t, seed, 3, tune)
	rid = h.regionAt(leaderReadKey).GetId()
	a := h.leader(rid)
	n = h.txnOn(a)
	n.commitV0(rid)
	h.net.addFilter(isolate(a.id))
	w, read, _ = n.blockedRead(rid)
	h.waitFor("a new leader", 100, func() bool { l := h.leader(rid); return l != nil && l != a })
	return h, rid, n, w, read
}

// finishUndetermined lets the write held undetermined (holdUndetermined)
// return, which releases its in-memory lock, and waits for the read.
func (n *txnNode) finishUndetermined(w *async[*kvrpcpb.PrewriteResponse], read *async[*kvrpcpb.GetResponse]) {
	n.eng.release()
	n.h.driveUntil("the read answered", read.finished)
	<-w.done
	require.ErrorIs(n.h.t, w.err, ErrUndetermined)
}

// requireRetryableOr requires the read to have failed with a region error
// the client retries elsewhere, or to have read want.
func requireRetryableOr(t *testing.T, read *async[*kvrpcpb.GetResponse], want string, why string) {
	t.Helper()
	require.NoError(t, read.err)
	resp := read.v
	if e := resp.GetRegionError(); e != nil {
		require.True(t, e.GetNotLeader() != nil || e.GetRegionNotFound() != nil, "not a retryable region error: %v", e)
		return
	}
	require.Nil(t, resp.GetError(), "key error")
	require.False(t, resp.GetNotFound(), "the leader read at ts %d answered NotFound for %q (%s); want %q or a retryable region error",
		uint64(leaderReadTS), leaderReadKey, why, want)
	require.Equal(t, want, string(resp.GetValue()), "the leader read at ts %d (%s)", uint64(leaderReadTS), why)
}

// TestLeaderReadWaitingWhilePeerInstallsSnapshot: the leader is cut off
// with k=v1 in flight and a read of k waiting for it; the others elect a
// leader and compact their log past it; healed, it installs a snapshot
// (ingest held: the region's ranges are cleared), which answers k=v1
// undetermined and releases the read. The read must not answer from the
// cleared range.
func TestLeaderReadWaitingWhilePeerInstallsSnapshot(t *testing.T) {
	h, rid, n, w, read := cutOffLeader(t, seedOr(t, 25), aggressiveLogGC)
	a := n.s
	behind := a.peers[rid].ps.apply.applied
	h.writeKeys("b", 20)
	l := h.leader(rid)
	h.waitFor("log compacted past the old leader", 100, func() bool { return l.peers[rid].ps.apply.truncatedIndex > behind })

	held := false
	a.snaps.holdIngest = func(id uint64) bool {
		held = held || id == rid
		return id == rid
	}
	n.eng.holdUndetermined()
	h.net.clearFilters()
	h.waitFor("snapshot persisted with its ingest held, k=v1 undetermined", 100, func() bool { return held && n.eng.held.Load() })
	require.True(t, a.peers[rid].ps.installing())
	n.finishUndetermined(w, read)
	requireRetryableOr(t, read, "v0", "its peer installed a snapshot while it waited")
}

// TestLeaderReadWaitingWhilePeerDestroyed: as above, but the new leader
// removes the old one's peer, which learns it from a tombstone once
// healed and deletes the region's data; k=v1 is answered undetermined and
// its in-memory lock released only after the deletion.
func TestLeaderReadWaitingWhilePeerDestroyed(t *testing.T) {
	h, rid, n, w, read := cutOffLeader(t, seedOr(t, 26), nil)
	a := n.s
	l := h.leader(rid)
	h.pdStep(rid, changePeer(pdpb.ConfChangeType_RemoveNode, peerOf(a, rid)))
	h.waitFor("the old leader removed", 100, func() bool { return l.peers[rid].peerOnStore(a.id) == nil })

	n.eng.holdUndetermined()
	h.net.clearFilters()
	h.waitFor("the old leader's peer destroyed, k=v1 undetermined", 100, func() bool { return a.peers[rid] == nil && n.eng.held.Load() })
	require.NotNil(t, a.tombstone(rid))
	n.finishUndetermined(w, read)
	requireRetryableOr(t, read, "v0", "its peer was destroyed while it waited")
}

// isAppend reports whether m carries log entries or a snapshot.
func isAppend(m *raft_serverpb.RaftMessage) bool {
	var msg raftpb.Message
	if err := proto.Unmarshal(m.GetMessage(), &msg); err != nil {
		return false
	}
	return msg.GetType() == raftpb.MessageType_MsgApp || msg.GetType() == raftpb.MessageType_MsgSnap
}

// TestLeaderReadWaitingWhileEntryOverwritten (5 voters): leader A has
// k=v1 in flight, replicated to C only; B, D, E elect X among them, whose
// entries reach nobody but A, where X's entry overwrites k=v1's; after
// four election timeouts A answers k=v1 undetermined and the read waiting
// for it goes on. Then C, D and E elect C, which commits k=v1 (commit ts
// below the read's). A read at the same ts through C sees v1: the first
// read must have failed, or seen v1 too.
func TestLeaderReadWaitingWhileEntryOverwritten(t *testing.T) {
	h := newHarness(t, seedOr(t, 27), 5, nil)
	rid := h.regionAt(leaderReadKey).GetId()
	h.addVoter(rid, h.ids[3])
	h.addVoter(rid, h.ids[4])
	a := h.leader(rid)
	var c *Store
	var trio []uint64
	for _, id := range h.ids {
		switch {
		case id == a.id:
		case c == nil:
			c = h.stores[id]
		default:
			trio = append(trio, id)
		}
	}
	n := h.txnOn(a)
	n.commitV0(rid)

	var phase atomic.Int32
	var x atomic.Uint64 // the leader the trio elects
	phase.Store(1)
	h.net.addFilter(func(from, to uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		between := func(p, q uint64) bool { return (from == p && to == q) || (from == q && to == p) }
		touches := func(id uint64) bool { return from == id || to == id }
		switch phase.Load() {
		case 1: // A reaches C only; the trio exchanges votes and heartbeats
			if touches(a.id) {
				return !between(a.id, c.id), 0
			}
			if touches(c.id) {
				return true, 0
			}
			return isAppend(m), 0
		case 2: // A reaches X only
			if between(a.id, x.Load()) {
				return false, 0
			}
			if touches(a.id) || touches(c.id) {
				return true, 0
			}
			return isAppend(m), 0
		default: // X and A cut off; C, D and E talk freely
			return touches(x.Load()) || touches(a.id), 0
		}
	})
	w, read, index := n.blockedRead(rid)
	h.driveUntil("k=v1 on C", func() bool { return c.peers[rid].ps.lastIndex >= index })

	h.waitFor("the trio elects a leader", 100, func() bool {
		l := h.leader(rid)
		return l != nil && l != a && l != c
	})
	x.Store(h.leader(rid).id)
	n.eng.holdUndetermined()
	phase.Store(2)
	h.waitFor("k=v1 overwritten on A and undetermined", 100, func() bool { return n.eng.held.Load() })
	n.finishUndetermined(w, read)

	phase.Store(3)
	h.waitFor("C elected", 200, func() bool { return h.leader(rid) == c })
	h.waitFor("k=v1 applied on C", 100, func() bool {
		p := c.peers[rid]
		return p.ps.apply.applied > index
	})
	again := h.txnOn(c).get(rid, leaderReadKey, leaderReadTS)
	h.driveUntil("the read through C answered", again.finished)
	require.NoError(t, again.err)
	require.Nil(t, again.v.GetRegionError())
	require.Equal(t, "v1", string(again.v.GetValue()), "k=v1 committed through C")
	requireRetryableOr(t, read, "v1", "its entry was overwritten while it waited and committed later through another peer")
}
