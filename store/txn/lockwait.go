package txn

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// lockWaits queues pessimistic lock requests per key while another
// transaction holds the key's lock (TiKV's lock manager waiter table).
// Waiters of a key are ordered by arrival (a waiter that retries keeps its
// place); a release wakes the first, and a woken waiter that does not get
// to wait again (it took the lock, or failed) wakes the next. When another
// transaction takes a key's lock (the first waiter, or one that came in
// between), the key's other waiters are told to evaluate again (recheck):
// each then waits for the new holder, and the deadlock detector learns
// that edge (a waiter left pointing at the old holder hid every deadlock
// through the key until its wait timed out). Safe for concurrent use; no
// goroutine per waiter beyond the caller's.
type lockWaits struct {
	mu   sync.Mutex
	seq  uint64
	keys map[string][]*lockWaiter
}

type lockWaiter struct {
	key     []byte
	region  uint64 // the region the request was addressed to
	startTS uint64
	lock    *kvrpcpb.LockInfo // the lock waited for
	seq     uint64
	ch      chan struct{} // closed-once signal: woken
	queued  bool          // under lockWaits.mu
	recheck bool          // woken because the key changed holder (set before ch closes)
}

type waitOutcome int

const (
	waitWoken    waitOutcome = iota // the holder released the key
	waitRecheck                     // another transaction took the key: evaluate again
	waitExpired                     // the holder's TTL ran out: evaluate again
	waitTimeout                     // wait_timeout passed
	waitCanceled                    // the request's context ended
)

func newLockWaits() *lockWaits { return &lockWaits{keys: map[string][]*lockWaiter{}} }

// add queues a waiter for key; prev (may be nil) is the same request's
// earlier waiter, whose place it keeps.
func (q *lockWaits) add(key []byte, region, startTS uint64, lock *kvrpcpb.LockInfo, prev *lockWaiter) *lockWaiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := &lockWaiter{key: key, region: region, startTS: startTS, lock: lock, ch: make(chan struct{}), queued: true}
	if prev != nil {
		w.seq = prev.seq
	} else {
		q.seq++
		w.seq = q.seq
	}
	ws := q.keys[string(key)]
	i, _ := slices.BinarySearchFunc(ws, w.seq, func(x *lockWaiter, s uint64) int {
		switch {
		case x.seq < s:
			return -1
		case x.seq > s:
			return 1
		}
		return 0
	})
	q.keys[string(key)] = slices.Insert(ws, i, w)
	return w
}

// remove takes w out of its queue; it reports false if w was woken first.
func (q *lockWaits) remove(w *lockWaiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !w.queued {
		return false
	}
	w.queued = false
	ws := q.keys[string(w.key)]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(q.keys, string(w.key))
	} else {
		q.keys[string(w.key)] = ws
	}
	return true
}

// wakeNext wakes the first waiter of key, if any.
func (q *lockWaits) wakeNext(key []byte) {
	q.mu.Lock()
	ws := q.keys[string(key)]
	if len(ws) == 0 {
		q.mu.Unlock()
		return
	}
	w := ws[0]
	w.queued = false
	if len(ws) == 1 {
		delete(q.keys, string(key))
	} else {
		q.keys[string(key)] = ws[1:]
	}
	q.mu.Unlock()
	close(w.ch)
}

// recheck wakes every waiter of key, which another transaction just
// locked, to evaluate again (and wait for the new holder). It reports how
// many it woke.
func (q *lockWaits) recheck(key []byte) int {
	q.mu.Lock()
	ws := q.keys[string(key)]
	delete(q.keys, string(key))
	for _, w := range ws {
		w.queued, w.recheck = false, true
	}
	q.mu.Unlock()
	for _, w := range ws {
		close(w.ch)
	}
	return len(ws)
}

// recheckRegion wakes every waiter addressed to region to evaluate again:
// this store stopped leading it, so the release of the lock they wait for
// will be served by another store and never wake them here. Evaluating
// again answers them NotLeader, and the client goes to the new leader at
// once instead of when its wait slice ends. It reports how many it woke.
func (q *lockWaits) recheckRegion(region uint64) int {
	q.mu.Lock()
	var woken []*lockWaiter
	for k, ws := range q.keys {
		kept := ws[:0]
		for _, w := range ws {
			if w.region == region {
				w.queued, w.recheck = false, true
				woken = append(woken, w)
			} else {
				kept = append(kept, w)
			}
		}
		if len(kept) == 0 {
			delete(q.keys, k)
		} else {
			q.keys[k] = kept
		}
	}
	q.mu.Unlock()
	for _, w := range woken {
		close(w.ch)
	}
	return len(woken)
}

// LockWaiters is the number of pessimistic lock requests queued behind
// another transaction's lock.
func (s *Storage) LockWaiters() int { return s.waits.waiters() }

// waiters is the number of queued waiters (tests, metrics).
func (q *lockWaits) waiters() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, ws := range q.keys {
		n += len(ws)
	}
	return n
}

// wait blocks until w is woken, the deadline passes, the held lock's TTL
// runs out (at expiry: its TTL on PD's clock, see tsoNowMS, translated to
// this store's monotonic clock) or ctx ends. Unless woken, w leaves
// its queue; a waiter woken at the moment it gives up passes the wake-up
// on.
func (q *lockWaits) wait(ctx context.Context, w *lockWaiter, deadline, expiry time.Time) waitOutcome {
	outcome := waitTimeout
	until := time.Until(deadline)
	if d := time.Until(expiry); d < until {
		until, outcome = d, waitExpired
	}
	if until < time.Millisecond {
		until = time.Millisecond
	}
	t := time.NewTimer(until)
	defer t.Stop()
	select {
	case <-w.ch:
		if w.recheck {
			return waitRecheck
		}
		return waitWoken
	case <-t.C:
	case <-ctx.Done():
		outcome = waitCanceled
	}
	if !q.remove(w) {
		// Woken meanwhile.
		if w.recheck {
			if outcome == waitCanceled {
				return waitCanceled
			}
			return waitRecheck
		}
		if outcome == waitCanceled {
			q.wakeNext(w.key)
			return waitCanceled
		}
		return waitWoken
	}
	return outcome
}
