package locate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/proto/metapb"
)

// ErrBadRegion is returned when PD answers with a region that cannot be used
// (no peers, or a range that does not contain the key asked for).
var ErrBadRegion = errors.New("locate: unusable region from PD")

// PD is the part of the placement driver client the cache needs.
// *pdclient.Client satisfies it.
type PD interface {
	// GetRegion returns the region containing key and its leader (nil when
	// unknown).
	GetRegion(ctx context.Context, key []byte) (*metapb.Region, *metapb.Peer, error)
}

var (
	cacheLookups = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "region_cache_lookups_total",
		Help:      "Region cache lookups by result (hit, miss).",
	}, []string{"result"})
	cacheHit      = cacheLookups.WithLabelValues("hit")
	cacheMiss     = cacheLookups.WithLabelValues("miss")
	pdRegionLoads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "pd_region_loads_total",
		Help:      "Region loads from PD by result (ok, error).",
	}, []string{"result"})
	pdLoadOK  = pdRegionLoads.WithLabelValues("ok")
	pdLoadErr = pdRegionLoads.WithLabelValues("error")
)

// Region is one cached region: an immutable metapb.Region plus the mutable
// index of the peer believed to be its leader.
type Region struct {
	meta    *metapb.Region
	leader  atomic.Int32 // index into meta.Peers
	invalid atomic.Bool
}

func newRegion(meta *metapb.Region, leader *metapb.Peer) *Region {
	r := &Region{meta: meta}
	if leader != nil {
		if i := peerIndex(meta, leader); i >= 0 {
			r.leader.Store(int32(i))
		}
	}
	return r
}

func peerIndex(meta *metapb.Region, p *metapb.Peer) int {
	for i, q := range meta.GetPeers() {
		if q.GetId() == p.GetId() && (p.GetStoreId() == 0 || q.GetStoreId() == p.GetStoreId()) {
			return i
		}
	}
	return -1
}

// ID is the region id.
func (r *Region) ID() uint64 { return r.meta.GetId() }

// Meta is the region's metadata. It is shared and must not be modified.
func (r *Region) Meta() *metapb.Region { return r.meta }

// StartKey is the inclusive start of the region's range.
func (r *Region) StartKey() []byte { return r.meta.GetStartKey() }

// EndKey is the exclusive end of the region's range; empty means +infinity.
func (r *Region) EndKey() []byte { return r.meta.GetEndKey() }

// Epoch is the region's epoch. It is shared and must not be modified.
func (r *Region) Epoch() *metapb.RegionEpoch { return r.meta.GetRegionEpoch() }

// Contains reports whether key lies in [StartKey, EndKey).
func (r *Region) Contains(key []byte) bool {
	return contains(r.meta, key)
}

func contains(m *metapb.Region, key []byte) bool {
	return bytes.Compare(m.GetStartKey(), key) <= 0 &&
		(len(m.GetEndKey()) == 0 || bytes.Compare(key, m.GetEndKey()) < 0)
}

// Leader returns the peer believed to lead the region and its index in the
// region's peers; the index is what SwitchPeer expects back.
func (r *Region) Leader() (int, *metapb.Peer) {
	i := int(r.leader.Load())
	return i, r.meta.Peers[i]
}

// ReplicaPeer picks the peer seq selects for a replica read: among the
// peers other than the believed leader, or among all peers when
// withLeader. It returns the leader when the region has no other peer.
func (r *Region) ReplicaPeer(seq uint32, withLeader bool) (int, *metapb.Peer) {
	li, leader := r.Leader()
	n := len(r.meta.Peers)
	if withLeader {
		i := int(seq % uint32(n))
		return i, r.meta.Peers[i]
	}
	if n < 2 {
		return li, leader
	}
	i := int(seq % uint32(n-1))
	if i >= li {
		i++
	}
	return i, r.meta.Peers[i]
}

// Valid reports whether the region is still in the cache. A request holding
// an invalid region should locate its key again.
func (r *Region) Valid() bool { return !r.invalid.Load() }

// SwitchPeer moves the believed leader to the peer after index from (round
// robin), unless another request already moved it. It is used when the peer
// at from is unreachable or denies leadership without a hint.
func (r *Region) SwitchPeer(from int) {
	n := len(r.meta.Peers)
	r.leader.CompareAndSwap(int32(from), int32((from+1)%n))
}

// UpdateLeader records leader as the region's leader. It returns false when
// leader is not one of the region's peers (membership changed): the region is
// then no longer trustworthy and the caller should invalidate it.
func (r *Region) UpdateLeader(leader *metapb.Peer) bool {
	i := peerIndex(r.meta, leader)
	if i < 0 {
		return false
	}
	r.leader.Store(int32(i))
	return true
}

// RegionCache maps keys to regions. See the package documentation.
type RegionCache struct {
	pd PD

	// index is the current snapshot, read without a lock; writers replace
	// it under mu.
	index atomic.Pointer[regionIndex]
	mu    sync.Mutex // serialises writers; guards byID
	byID  map[uint64]*Region

	sfMu     sync.Mutex
	inflight map[string]*loadCall
}

type loadCall struct {
	done    chan struct{}
	waiters atomic.Int32 // for tests
	region  *Region
	err     error
}

// NewRegionCache returns an empty cache that loads misses from pd.
func NewRegionCache(pd PD) *RegionCache {
	c := &RegionCache{
		pd:       pd,
		byID:     make(map[uint64]*Region),
		inflight: make(map[string]*loadCall),
	}
	c.index.Store(&regionIndex{})
	return c
}

// Locate returns the region containing key, loading it from PD on a miss.
// Errors are PD's, wrapped, or ErrBadRegion; ctx cancellation is honoured
// while waiting for a load started by another caller.
func (c *RegionCache) Locate(ctx context.Context, key []byte) (*Region, error) {
	if r := c.lookup(key); r != nil {
		cacheHit.Inc()
		return r, nil
	}
	cacheMiss.Inc()
	for {
		r, err := c.load(ctx, key)
		if err == nil {
			return r, nil
		}
		// A load started by another caller may have failed only because
		// that caller's context ended; ours may still be live.
		if (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// lookup is the cache hit path: a search of the current snapshot, without
// a lock.
func (c *RegionCache) lookup(key []byte) *Region {
	return c.index.Load().get(key)
}

func (c *RegionCache) load(ctx context.Context, key []byte) (*Region, error) {
	c.sfMu.Lock()
	if call, ok := c.inflight[string(key)]; ok {
		c.sfMu.Unlock()
		call.waiters.Add(1)
		select {
		case <-call.done:
			return call.region, call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// A load for this key may have finished between our lookup and now.
	if r := c.lookup(key); r != nil {
		c.sfMu.Unlock()
		return r, nil
	}
	call := &loadCall{done: make(chan struct{})}
	k := string(key)
	c.inflight[k] = call
	c.sfMu.Unlock()

	call.region, call.err = c.loadFromPD(ctx, key)

	c.sfMu.Lock()
	delete(c.inflight, k)
	c.sfMu.Unlock()
	close(call.done)
	return call.region, call.err
}

func (c *RegionCache) loadFromPD(ctx context.Context, key []byte) (*Region, error) {
	meta, leader, err := c.pd.GetRegion(ctx, key)
	if err != nil {
		pdLoadErr.Inc()
		return nil, fmt.Errorf("locate: load region for key %q: %w", key, err)
	}
	if meta == nil || len(meta.GetPeers()) == 0 {
		pdLoadErr.Inc()
		return nil, fmt.Errorf("%w: key %q: region %d has no peers", ErrBadRegion, key, meta.GetId())
	}
	if !contains(meta, key) {
		pdLoadErr.Inc()
		return nil, fmt.Errorf("%w: key %q not in region %d [%q, %q)", ErrBadRegion, key, meta.GetId(), meta.GetStartKey(), meta.GetEndKey())
	}
	r := c.Insert(meta, leader)
	if !r.Contains(key) {
		// PD is behind a split we already know about: Insert kept our
		// newer region, which does not hold key.
		pdLoadErr.Inc()
		return nil, fmt.Errorf("%w: key %q: PD returned region %d with an older epoch than cached", ErrBadRegion, key, meta.GetId())
	}
	pdLoadOK.Inc()
	return r, nil
}

// Insert puts meta in the cache with leader (nil = unknown, first peer),
// evicting and invalidating every cached region that overlaps it, and
// returns the cached region. If a cached region with the same id has a newer
// epoch, meta is stale: nothing changes and the cached region is returned.
// meta must not be modified afterwards.
func (c *RegionCache) Insert(meta *metapb.Region, leader *metapb.Peer) *Region {
	r := newRegion(meta, leader)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[meta.Id]; ok {
		if isStale(meta.RegionEpoch, old.meta.RegionEpoch) {
			return old
		}
		if leader == nil {
			// Keep what we learnt about the leader across a reload.
			_, p := old.Leader()
			if i := peerIndex(meta, p); i >= 0 {
				r.leader.Store(int32(i))
			}
		}
	}
	ix := c.index.Load().update(meta.StartKey, meta.EndKey, func(es []indexEntry) []indexEntry {
		lo := lastStartLE(es, meta.StartKey)
		if lo < 0 {
			lo = 0
		} else if e := es[lo].end; len(e) != 0 && bytes.Compare(e, meta.StartKey) <= 0 {
			lo++ // the region at lo ends before meta starts
		}
		hi := len(es)
		if len(meta.EndKey) != 0 {
			hi = sort.Search(len(es), func(i int) bool {
				return bytes.Compare(es[i].start, meta.EndKey) >= 0
			})
		}
		if hi < lo {
			hi = lo
		}
		for _, o := range es[lo:hi] {
			o.r.invalid.Store(true)
			delete(c.byID, o.r.meta.Id)
		}
		return slices.Replace(es, lo, hi, entryOf(r))
	})
	c.index.Store(ix)
	c.byID[meta.Id] = r
	return r
}

// isStale reports whether epoch a is older than b in either dimension.
func isStale(a, b *metapb.RegionEpoch) bool {
	return a.GetVersion() < b.GetVersion() || a.GetConfVer() < b.GetConfVer()
}

// Invalidate removes r from the cache (if it is still there) and marks it
// invalid; the next lookup of its keys goes to PD.
func (c *RegionCache) Invalidate(r *Region) {
	r.invalid.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.byID[r.meta.Id]; !ok || cur != r {
		return
	}
	delete(c.byID, r.meta.Id)
	start := r.meta.StartKey
	c.index.Store(c.index.Load().update(start, start, func(es []indexEntry) []indexEntry {
		if i := lastStartLE(es, start); i >= 0 && es[i].r == r {
			return slices.Delete(es, i, i+1)
		}
		return es
	}))
}

// OnEpochNotMatch replaces stale with the current regions a store reported
// in EpochNotMatch. The leader of each new region is guessed to be its peer
// on leaderStore (the store that answered), since a split keeps leaders in
// place. It returns false when current is empty; stale is then invalidated.
func (c *RegionCache) OnEpochNotMatch(stale *Region, current []*metapb.Region, leaderStore uint64) bool {
	if len(current) == 0 {
		c.Invalidate(stale)
		return false
	}
	stale.invalid.Store(true)
	for _, m := range current {
		if m == nil || len(m.Peers) == 0 {
			continue
		}
		var leader *metapb.Peer
		for _, p := range m.Peers {
			if p.StoreId == leaderStore {
				leader = p
				break
			}
		}
		c.Insert(m, leader)
	}
	// Insert evicts stale only if one of current overlaps it; make sure.
	c.Invalidate(stale)
	slog.Debug("locate: epoch not match, regions replaced",
		"stale_region", stale.ID(), "current", len(current))
	return true
}

// Len is the number of cached regions.
func (c *RegionCache) Len() int {
	return c.index.Load().n
}
