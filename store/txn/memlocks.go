package txn

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
)

// memLocks are the in-memory pessimistic locks of the regions this store
// leads (TiKV's PeerPessimisticLocks): a PessimisticLock answered from
// here costs no raft round. Rules (see doc.go, "In-memory pessimistic
// locks"):
//   - one table per region, replaced whole on every leader change of the
//     region here (the old one is marked dead: a command that captured it
//     before the change inserts nothing into it);
//   - a table holds locks of one region epoch version: a command that
//     finds a newer version empties it (the split that made the new
//     version put its locks into the log first, see handover);
//   - an entry is memory-only (the engine has no lock of its key) or, after
//     handover, flushed (a proposed lock record carries it; it is removed
//     once that applied); a write of a flushed key goes through raft, after
//     the flush in the log;
//   - readers see the current table over the engine's lock key space.
type memLocks struct {
	freeze time.Duration // how long a handover keeps new locks out of memory
	limit  int           // locks per region

	// changes counts leader changes of all regions.
	changes atomic.Uint64

	mu      sync.RWMutex
	regions map[uint64]*regionLocks
}

// regionLocks is one region's table. Its fields are guarded by mu.
type regionLocks struct {
	mu          sync.Mutex
	dead        bool   // replaced after a leader change: no more inserts
	version     uint64 // region epoch version of the locks
	frozenUntil time.Time
	locks       map[string]*memLock // by encoded user key
}

type memLock struct {
	lock    *mvcc.Lock
	flushed bool
}

func newMemLocks(freeze time.Duration, limit int) *memLocks {
	return &memLocks{freeze: freeze, limit: limit, regions: map[uint64]*regionLocks{}}
}

// table returns region id's current table, creating it if needed.
func (m *memLocks) table(id uint64) *regionLocks {
	m.mu.RLock()
	rl := m.regions[id]
	m.mu.RUnlock()
	if rl != nil {
		return rl
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rl = m.regions[id]; rl == nil {
		rl = &regionLocks{locks: map[string]*memLock{}}
		m.regions[id] = rl
	}
	return rl
}

// leaderChanged retires region id's table: its locks are lost unless a
// handover put them into the log. A new leadership starts empty.
func (m *memLocks) leaderChanged(id uint64, leader bool) {
	m.changes.Add(1)
	m.mu.Lock()
	old := m.regions[id]
	if leader {
		m.regions[id] = &regionLocks{locks: map[string]*memLock{}}
	} else {
		delete(m.regions, id)
	}
	m.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.dead = true
		old.dropLocked("leader_change")
		old.mu.Unlock()
	}
}

// dropLocked empties the table, counting its unflushed locks as lost.
func (rl *regionLocks) dropLocked(reason string) {
	lost := 0
	for _, ml := range rl.locks {
		if !ml.flushed {
			lost++
		}
	}
	if lost > 0 {
		memLocksDropped.WithLabelValues(reason).Add(float64(lost))
	}
	memLocksGauge.Sub(float64(len(rl.locks)))
	clear(rl.locks)
}

// syncVersion empties the table when the region's epoch version moved past
// its locks' (a split applied; its handover flushed them).
func (rl *regionLocks) syncVersion(version uint64) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.version < version {
		rl.dropLocked("epoch_change")
		rl.version = version
		rl.frozenUntil = time.Time{}
	}
}

// lockView is a region's current table as an mvcc.LockOverlay.
type lockView struct {
	m  *memLocks
	id uint64
}

// Lock implements mvcc.LockOverlay.
func (v lockView) Lock(encKey []byte) *mvcc.Lock {
	v.m.mu.RLock()
	rl := v.m.regions[v.id]
	v.m.mu.RUnlock()
	if rl == nil {
		return nil
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	ml := rl.locks[string(encKey)]
	if ml == nil {
		return nil
	}
	l := *ml.lock
	return &l
}

// Locks implements mvcc.LockOverlay.
func (v lockView) Locks(lo, hi []byte) []mvcc.OverlayLock {
	v.m.mu.RLock()
	rl := v.m.regions[v.id]
	v.m.mu.RUnlock()
	if rl == nil {
		return nil
	}
	rl.mu.Lock()
	var out []mvcc.OverlayLock
	for k, ml := range rl.locks {
		kb := []byte(k)
		if bytes.Compare(kb, lo) >= 0 && (len(hi) == 0 || bytes.Compare(kb, hi) < 0) {
			l := *ml.lock
			out = append(out, mvcc.OverlayLock{EncKey: kb, Lock: &l})
		}
	}
	rl.mu.Unlock()
	slices.SortFunc(out, func(a, b mvcc.OverlayLock) int { return bytes.Compare(a.EncKey, b.EncKey) })
	return out
}

// absorb applies the in-memory side of command c's writes before they go
// to raft and drops from c's writes what only the table needed:
//   - a pessimistic lock put stays in memory when c's table is still
//     current (not retired by a leader change, same epoch version, no
//     handover in progress) and the key's lock is memory-only (a heartbeat
//     or a re-lock updates it) or, for a PessimisticLock command, the key
//     has no lock anywhere and the table is under its limit; else it is
//     written through raft as before;
//   - a delete of a memory-only lock only removes it from the table;
//   - any other lock write of a key removes the key from the table first
//     (so a handover proposed after this never writes the old lock over
//     the new one) and goes to raft.
func (m *memLocks) absorb(c *command) error {
	rl := c.memTable
	rl.mu.Lock()
	defer rl.mu.Unlock()
	usable := !rl.dead && m.changes.Load() == c.memChanges &&
		rl.version == c.region.GetRegionEpoch().GetVersion() && !time.Now().Before(rl.frozenUntil)
	locking := c.kind == "pessimistic_lock"
	var err error
	c.t.Retain(func(w *raft_cmdpb.Request) bool {
		if w.GetCf() != raft_cmdpb.CF_LOCK || err != nil {
			return true
		}
		k := string(w.GetKey())
		ml := rl.locks[k]
		if ml != nil {
			delete(rl.locks, k)
			memLocksGauge.Dec()
		}
		switch w.GetCmdType() {
		case raft_cmdpb.CmdType_Delete:
			return ml == nil || ml.flushed // memory-only: nothing in the engine
		case raft_cmdpb.CmdType_Put:
			if !usable || (ml == nil && !locking) || (ml != nil && ml.flushed) {
				break
			}
			l, derr := mvcc.DecodeLock(w.GetValue())
			if derr != nil || l.Type != mvcc.LockPessimistic {
				break
			}
			if ml == nil {
				if len(rl.locks) >= m.limit {
					memLockFull.Inc()
					break
				}
				inEngine, e := c.r.EngineHasLock(w.GetKey())
				if err = e; e != nil || inEngine {
					break
				}
			}
			rl.locks[k] = &memLock{lock: l}
			memLocksGauge.Inc()
			if locking {
				pessimisticLockWrites.WithLabelValues("memory").Inc()
			}
			return false
		}
		if locking {
			pessimisticLockWrites.WithLabelValues("raft").Inc()
		}
		return true
	})
	return err
}

// handover puts region's in-memory locks into the log ahead of a leader
// transfer or split (raftstore's TxnHooks.Handover) and keeps new locks out
// of memory for a while (the transfer or split then ends the table; an
// aborted transfer lets locks back in after the freeze).
func (m *memLocks) handover(region *metapb.Region, propose func([]*raft_cmdpb.Request, func(error))) {
	rl := m.table(region.GetId())
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.frozenUntil = time.Now().Add(m.freeze)
	lo := keys.Encode(nil, region.GetStartKey())
	var hi []byte
	if len(region.GetEndKey()) > 0 {
		hi = keys.Encode(nil, region.GetEndKey())
	}
	var (
		reqs    []*raft_cmdpb.Request
		flushed []*memLock
		fkeys   []string
	)
	for k, ml := range rl.locks {
		kb := []byte(k)
		if ml.flushed || bytes.Compare(kb, lo) < 0 || (hi != nil && bytes.Compare(kb, hi) >= 0) {
			continue
		}
		ml.flushed = true
		flushed, fkeys = append(flushed, ml), append(fkeys, k)
		reqs = append(reqs, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_LOCK,
			Key: kb, Value: ml.lock.Encode(nil)})
	}
	if len(reqs) == 0 {
		return
	}
	propose(reqs, func(err error) {
		outcome := "ok"
		if err != nil {
			// Refused (raft's uncommitted-size limit on a hot region, or
			// leadership already gone): the locks stay in memory, unflushed,
			// valid while this store leads; raftstore does not start the
			// transfer after a refused handover. Lost only if leadership
			// changes anyway (as in a crash).
			outcome = "failed"
		}
		memLocksFlushed.WithLabelValues(outcome).Add(float64(len(flushed)))
		rl.mu.Lock()
		defer rl.mu.Unlock()
		for i, k := range fkeys {
			if rl.locks[k] != flushed[i] {
				continue
			}
			if err != nil {
				flushed[i].flushed = false
				continue
			}
			delete(rl.locks, k)
			memLocksGauge.Dec()
		}
	})
}
