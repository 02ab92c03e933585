package txn

import (
	"hash/fnv"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// Detector finds deadlocks among waiting pessimistic transactions with a
// wait-for graph (TiKV's deadlock detector). Detect is called before a
// transaction starts waiting for another: it returns the cycle the new edge
// would close (the caller is the victim and fails at once), or records the
// edge. CleanUp removes the edge once the wait ends. Safe for concurrent
// use. A cluster needs one detector for every store's waits (TiKV runs it
// on the leader of the region holding the empty key); LocalDetector is
// correct for the waits of one store.
type Detector interface {
	Detect(waiter, holder uint64, key []byte) *kvrpcpb.Deadlock
	CleanUp(waiter, holder uint64)
}

// LocalDetector is an in-process wait-for graph. An edge whose CleanUp
// was lost (a detector reached over the network) expires EdgeTTL after it
// was last recorded, so it cannot make an innocent victim forever.
type LocalDetector struct {
	mu sync.Mutex
	// edges[waiter][holder] is the key hash and count of waits.
	edges map[uint64]map[uint64]*waitEdge
	now   func() time.Time
}

// EdgeTTL is how long a wait-for edge lives without being recorded again.
const EdgeTTL = 2 * time.Minute

type waitEdge struct {
	key     []byte
	keyHash uint64
	n       int
	at      time.Time
}

// Reset forgets every edge (the detector role moved).
func (d *LocalDetector) Reset() {
	d.mu.Lock()
	d.edges = map[uint64]map[uint64]*waitEdge{}
	d.mu.Unlock()
}

// expire drops edges older than EdgeTTL.
func (d *LocalDetector) expire(now time.Time) {
	for w, hs := range d.edges {
		for h, e := range hs {
			if now.Sub(e.at) > EdgeTTL {
				delete(hs, h)
			}
		}
		if len(hs) == 0 {
			delete(d.edges, w)
		}
	}
}

// NewLocalDetector returns an empty detector.
func NewLocalDetector() *LocalDetector {
	return &LocalDetector{edges: map[uint64]map[uint64]*waitEdge{}, now: time.Now}
}

func keyHash(k []byte) uint64 {
	h := fnv.New64a()
	h.Write(k)
	return h.Sum64()
}

// Detect implements Detector.
func (d *LocalDetector) Detect(waiter, holder uint64, key []byte) *kvrpcpb.Deadlock {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.expire(now)
	if chain := d.path(holder, waiter); chain != nil || waiter == holder {
		dl := &kvrpcpb.Deadlock{LockTs: holder, LockKey: key, DeadlockKeyHash: keyHash(key)}
		dl.WaitChain = append(dl.WaitChain, &kvrpcpb.WaitForEntry{Txn: waiter, WaitForTxn: holder, KeyHash: keyHash(key), Key: key})
		dl.WaitChain = append(dl.WaitChain, chain...)
		return dl
	}
	hs := d.edges[waiter]
	if hs == nil {
		hs = map[uint64]*waitEdge{}
		d.edges[waiter] = hs
	}
	e := hs[holder]
	if e == nil {
		e = &waitEdge{key: key, keyHash: keyHash(key)}
		hs[holder] = e
	}
	e.n++
	e.at = now
	return nil
}

// path returns the wait chain from -> ... -> to, or nil.
func (d *LocalDetector) path(from, to uint64) []*kvrpcpb.WaitForEntry {
	type step struct {
		txn  uint64
		prev int
		edge *waitEdge
	}
	visited := map[uint64]bool{from: true}
	queue := []step{{txn: from, prev: -1}}
	for i := 0; i < len(queue); i++ {
		for h, e := range d.edges[queue[i].txn] {
			if visited[h] {
				continue
			}
			visited[h] = true
			queue = append(queue, step{txn: h, prev: i, edge: e})
			if h == to {
				var chain []*kvrpcpb.WaitForEntry
				for j := len(queue) - 1; queue[j].prev >= 0; j = queue[j].prev {
					p := queue[queue[j].prev]
					chain = append([]*kvrpcpb.WaitForEntry{{Txn: p.txn, WaitForTxn: queue[j].txn, KeyHash: queue[j].edge.keyHash, Key: queue[j].edge.key}}, chain...)
				}
				return chain
			}
		}
	}
	return nil
}

// CleanUp implements Detector.
func (d *LocalDetector) CleanUp(waiter, holder uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hs := d.edges[waiter]
	if e := hs[holder]; e != nil {
		if e.n--; e.n <= 0 {
			delete(hs, holder)
		}
		if len(hs) == 0 {
			delete(d.edges, waiter)
		}
	}
}
