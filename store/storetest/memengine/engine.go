package memengine

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
)

// Snapshot is store/txn's Snapshot (the same unnamed interface type).
type Snapshot = interface {
	mvcc.Snapshot
	Close() error
}

// Options configures an Engine. Zero values take the defaults.
type Options struct {
	// Peers returns the peers of a new region (default: one peer, id
	// regionID, on store 1). It is called with the engine's lock held.
	Peers func(regionID uint64) []*metapb.Peer
	// Leader returns the leading peer of region (default: its first peer).
	// Requests addressed to another peer get NotLeader with this one as
	// hint. A nil peer: the region has no leader (an election in
	// progress).
	Leader func(region *metapb.Region) *metapb.Peer
	// Hint, when set, returns the leader a peer that is not the leader
	// names in NotLeader (default: Leader's); nil: none, as a follower
	// that has not heard from the new leader yet answers.
	Hint func(region *metapb.Region) *metapb.Peer
	// Logger receives Pebble's errors (default: dropped).
	Logger pebble.Logger
}

// Engine is store/txn's Engine over an in-memory Pebble DB: regions are
// metadata over one key space, writes are applied at once (no raft), every
// region is led by one fixed peer in term 1. It is safe for concurrent use.
type Engine struct {
	db   *pebble.DB
	opts Options
	gen  atomic.Uint64
	// writes counts the write batches applied.
	writes atomic.Int64

	mu sync.Mutex
	// regions cover the key space, sorted by start key.
	regions []*metapb.Region
	nextID  uint64
	// handover, when set, runs before a region is split (raftstore's
	// TxnHooks.Handover).
	handover func(region *metapb.Region, propose func([]*raft_cmdpb.Request, func(error)))
	// beforeWrite, when set, runs before each write is applied, without
	// the lock held.
	beforeWrite atomic.Pointer[func()]
	// snapshot, when set, replaces the default view (benchmarks).
	snapshot func() Snapshot
}

type nopLogger struct{}

func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}
func (nopLogger) Fatalf(f string, args ...any) {
	panic(fmt.Sprintf(f, args...))
}

// Open returns an Engine with one region, id 1, over the whole key space.
// Close it when done.
func Open(opts Options) (*Engine, error) {
	if opts.Peers == nil {
		opts.Peers = func(id uint64) []*metapb.Peer { return []*metapb.Peer{{Id: id, StoreId: 1}} }
	}
	if opts.Leader == nil {
		opts.Leader = func(r *metapb.Region) *metapb.Peer {
			if len(r.GetPeers()) == 0 {
				return nil
			}
			return r.GetPeers()[0]
		}
	}
	if opts.Logger == nil {
		opts.Logger = nopLogger{}
	}
	// The key order and bloom filters of a store's engine (raftstore).
	popts := &pebble.Options{FS: vfs.NewMem(), Logger: opts.Logger, Comparer: keys.Comparer}
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open("", popts)
	if err != nil {
		return nil, fmt.Errorf("memengine: open pebble: %w", err)
	}
	e := &Engine{db: db, opts: opts, nextID: 2}
	e.regions = []*metapb.Region{{Id: 1, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}, Peers: opts.Peers(1)}}
	e.gen.Store(1)
	return e, nil
}

// Close closes the Pebble DB.
func (e *Engine) Close() error { return e.db.Close() }

// DB is the engine's Pebble DB (tests that inspect raw keys).
func (e *Engine) DB() *pebble.DB { return e.db }

// Writes is the number of write batches applied so far.
func (e *Engine) Writes() int64 { return e.writes.Load() }

// SetBeforeWrite installs fn to run before each write is applied (nil
// removes it). Safe while writes run: a write runs the fn installed when
// it began.
func (e *Engine) SetBeforeWrite(fn func()) {
	if fn == nil {
		e.beforeWrite.Store(nil)
		return
	}
	e.beforeWrite.Store(&fn)
}

// SetSnapshot replaces the view Snapshot returns (nil: the default
// mvcc.View). Not safe to call while reads run.
func (e *Engine) SetSnapshot(fn func() Snapshot) { e.snapshot = fn }

// SetHandover installs the hook run before a split, as raftstore runs
// TxnHooks.Handover (store/txn's Storage.Handover).
func (e *Engine) SetHandover(fn func(region *metapb.Region, propose func([]*raft_cmdpb.Request, func(error)))) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handover = fn
}

// SetRegion replaces the region with r's id by r (a copy), for tests that
// change a region's epoch under the transaction layer. r must keep the
// region's range.
func (e *Engine) SetRegion(r *metapb.Region) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, cur := range e.regions {
		if cur.GetId() == r.GetId() {
			e.regions[i] = proto.Clone(r).(*metapb.Region)
			return
		}
	}
	panic(fmt.Sprintf("memengine: no region %d", r.GetId()))
}

// Regions returns copies of the current regions in key order.
func (e *Engine) Regions() []*metapb.Region {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*metapb.Region, len(e.regions))
	for i, r := range e.regions {
		out[i] = proto.Clone(r).(*metapb.Region)
	}
	return out
}

// RegionByKey returns a copy of the region holding key.
func (e *Engine) RegionByKey(key []byte) *metapb.Region {
	e.mu.Lock()
	defer e.mu.Unlock()
	return proto.Clone(e.regions[e.indexLocked(key)]).(*metapb.Region)
}

// RegionByID returns a copy of region id, or nil.
func (e *Engine) RegionByID(id uint64) *metapb.Region {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.byIDLocked(id); r != nil {
		return proto.Clone(r).(*metapb.Region)
	}
	return nil
}

// Leader returns the leading peer of region.
func (e *Engine) Leader(region *metapb.Region) *metapb.Peer { return e.opts.Leader(region) }

func (e *Engine) indexLocked(key []byte) int {
	return sort.Search(len(e.regions), func(i int) bool {
		end := e.regions[i].GetEndKey()
		return len(end) == 0 || bytes.Compare(key, end) < 0
	})
}

func (e *Engine) byIDLocked(id uint64) *metapb.Region {
	for _, r := range e.regions {
		if r.GetId() == id {
			return r
		}
	}
	return nil
}

// checkLocked returns the current region of rctx or the region error a
// store answers: RegionNotFound (no such region, or no peer of it on the
// store rctx addresses), NotLeader (the request was addressed to
// another peer than the leader) or EpochNotMatch (with every current
// region, so the client replaces what it cached).
func (e *Engine) checkLocked(rctx *kvrpcpb.Context, id uint64, epoch *metapb.RegionEpoch) (*metapb.Region, *errorpb.Error) {
	r := e.byIDLocked(id)
	if r == nil {
		return nil, &errorpb.Error{Message: fmt.Sprintf("region %d not found", id), RegionNotFound: &errorpb.RegionNotFound{RegionId: id}}
	}
	if p := rctx.GetPeer(); p != nil && !hasStore(r, p.GetStoreId()) {
		// The store has no peer of the region (removed by a conf change).
		return nil, &errorpb.Error{Message: fmt.Sprintf("region %d not found on store %d", id, p.GetStoreId()), RegionNotFound: &errorpb.RegionNotFound{RegionId: id}}
	}
	if p := rctx.GetPeer(); p != nil && !rctx.GetReplicaRead() && !rctx.GetStaleRead() {
		if l := e.opts.Leader(r); l == nil || p.GetStoreId() != l.GetStoreId() {
			hint := l
			if e.opts.Hint != nil {
				hint = e.opts.Hint(r)
			}
			nl := &errorpb.NotLeader{RegionId: id}
			if hint != nil {
				nl.Leader = proto.Clone(hint).(*metapb.Peer)
			}
			return nil, &errorpb.Error{Message: fmt.Sprintf("peer %d of region %d is not leader", p.GetId(), id), NotLeader: nl}
		}
	}
	if epoch != nil && (epoch.GetVersion() != r.GetRegionEpoch().GetVersion() || epoch.GetConfVer() != r.GetRegionEpoch().GetConfVer()) {
		cur := make([]*metapb.Region, len(e.regions))
		for i, r := range e.regions {
			cur[i] = proto.Clone(r).(*metapb.Region)
		}
		return nil, &errorpb.Error{Message: fmt.Sprintf("epoch of region %d does not match", id),
			EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: cur}}
	}
	return r, nil
}

// hasStore reports whether region r has a peer on store storeID.
func hasStore(r *metapb.Region, storeID uint64) bool {
	for _, p := range r.GetPeers() {
		if p.GetStoreId() == storeID {
			return true
		}
	}
	return false
}

// ReadIndex implements store/txn's Engine: the region of rctx if this peer
// leads it in the request's epoch, else a region error. A request without
// a region id (tests of one region) reads region 1.
func (e *Engine) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	id := rctx.GetRegionId()
	if id == 0 {
		id = 1
	}
	r, rerr := e.checkLocked(rctx, id, rctx.GetRegionEpoch())
	return r, rerr, nil
}

// Snapshot implements store/txn's Engine with the view store nodes use
// (mvcc.View).
func (e *Engine) Snapshot() Snapshot {
	if e.snapshot != nil {
		return e.snapshot()
	}
	v, err := mvcc.NewView(e.db)
	if err != nil {
		return e.db.NewSnapshot()
	}
	return v
}

// LeaderGeneration implements store/txn's Engine.
func (e *Engine) LeaderGeneration() uint64 { return e.gen.Load() }

// BumpLeaderGeneration counts one more leadership gained (a write proposed
// at an older generation is refused), and returns the new generation.
func (e *Engine) BumpLeaderGeneration() uint64 { return e.gen.Add(1) }

// LeaderTerm implements store/txn's Engine: every existing region is led
// here in term 1.
func (e *Engine) LeaderTerm(regionID uint64) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if regionID == 0 || e.byIDLocked(regionID) != nil {
		return 1
	}
	return 0
}

// Write implements store/txn's Engine: reqs are applied at once if region's
// epoch is still current (as raftstore checks at apply; a split in between
// makes it EpochNotMatch, nothing written) and leaderGen, when not zero, is
// the current generation (else StaleCommand). There is no raft round: the
// whole write (beforeWrite included) is its apply in wd.
func (e *Engine) Write(ctx context.Context, rctx *kvrpcpb.Context, region *metapb.Region, leaderGen uint64, reqs []*raft_cmdpb.Request, wd *kvrpcpb.WriteDetail) (*errorpb.Error, error) {
	if leaderGen != 0 && leaderGen != e.gen.Load() {
		return &errorpb.Error{Message: "leader changed", StaleCommand: &errorpb.StaleCommand{}}, nil
	}
	if wd != nil {
		defer func(start time.Time) { wd.ApplyLogNanos += uint64(time.Since(start)) }(time.Now())
	}
	if fn := e.beforeWrite.Load(); fn != nil {
		(*fn)()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	id := region.GetId()
	if id == 0 {
		id = 1
	}
	if _, rerr := e.checkLocked(nil, id, region.GetRegionEpoch()); rerr != nil {
		return rerr, nil
	}
	return nil, e.applyLocked(reqs)
}

func (e *Engine) applyLocked(reqs []*raft_cmdpb.Request) error {
	b := e.db.NewBatch()
	defer b.Close()
	if err := mvcc.ApplyWrites(b, reqs); err != nil {
		return err
	}
	e.writes.Add(1)
	return b.Commit(pebble.NoSync)
}

// Split splits the regions holding splitKeys so that each key starts a
// region (a key already starting one is skipped), as a raftstore split
// does: the handover hook first puts the region's in-memory locks into the
// engine, then the region keeps its id and the part before the first key,
// new regions take the rest, and every resulting region's epoch version is
// the old one plus one. It returns the regions that resulted, or nil when
// nothing was split.
func (e *Engine) Split(splitKeys ...[]byte) []*metapb.Region {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.splitLocked(splitKeys)
}

// SplitRegion splits the region of rctx at splitKeys (which must lie in
// it) if this peer leads it in the request's epoch, as a store's
// SplitRegion RPC does, and returns the resulting regions (the region
// alone when every key already starts a region) or a region error.
func (e *Engine) SplitRegion(rctx *kvrpcpb.Context, splitKeys [][]byte) ([]*metapb.Region, *errorpb.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, rerr := e.checkLocked(rctx, rctx.GetRegionId(), rctx.GetRegionEpoch())
	if rerr != nil {
		return nil, rerr
	}
	for _, k := range splitKeys {
		if rerr := regionkeys.CheckKey(k, r); rerr != nil {
			return nil, rerr
		}
	}
	if out := e.splitLocked(splitKeys); len(out) > 0 {
		return out, nil
	}
	return []*metapb.Region{proto.Clone(r).(*metapb.Region)}, nil
}

func (e *Engine) splitLocked(splitKeys [][]byte) []*metapb.Region {
	splitKeys = append([][]byte(nil), splitKeys...)
	sort.Slice(splitKeys, func(i, j int) bool { return bytes.Compare(splitKeys[i], splitKeys[j]) < 0 })
	var out []*metapb.Region
	for i := 0; i < len(splitKeys); {
		idx := e.indexLocked(splitKeys[i])
		r := e.regions[idx]
		// The keys of this region, in order.
		var in [][]byte
		for ; i < len(splitKeys) && (len(r.GetEndKey()) == 0 || bytes.Compare(splitKeys[i], r.GetEndKey()) < 0); i++ {
			k := splitKeys[i]
			if bytes.Equal(k, r.GetStartKey()) || (len(in) > 0 && bytes.Equal(k, in[len(in)-1])) {
				continue
			}
			in = append(in, k)
		}
		if len(in) == 0 {
			continue
		}
		e.handoverLocked(r)
		version := r.GetRegionEpoch().GetVersion() + 1
		left := proto.Clone(r).(*metapb.Region)
		left.EndKey = in[0]
		left.RegionEpoch.Version = version
		parts := []*metapb.Region{left}
		for j, start := range in {
			end := r.GetEndKey()
			if j+1 < len(in) {
				end = in[j+1]
			}
			id := e.nextID
			e.nextID++
			parts = append(parts, &metapb.Region{Id: id, StartKey: bytes.Clone(start), EndKey: bytes.Clone(end),
				RegionEpoch: &metapb.RegionEpoch{ConfVer: r.GetRegionEpoch().GetConfVer(), Version: version},
				Peers:       e.opts.Peers(id)})
		}
		e.regions = append(e.regions[:idx], append(parts, e.regions[idx+1:]...)...)
		for _, p := range parts {
			out = append(out, proto.Clone(p).(*metapb.Region))
		}
	}
	return out
}

// handoverLocked runs the handover hook for r: its writes are applied
// before the split, their outcome reported after the hook returned.
func (e *Engine) handoverLocked(r *metapb.Region) {
	if e.handover == nil {
		return
	}
	var done []func()
	e.handover(r, func(reqs []*raft_cmdpb.Request, fn func(error)) {
		err := e.applyLocked(reqs)
		done = append(done, func() { fn(err) })
	})
	for _, d := range done {
		d()
	}
}

// SplitBySize splits every region holding more than maxKeys committed user
// keys (keys with a write record, any version) into regions of maxKeys
// keys, as a store's split checker does by size. It returns how many
// regions it created.
func (e *Engine) SplitBySize(maxKeys int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, nil, nil)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var (
		splitKeys [][]byte
		last      []byte
		n, ri     int
	)
	for valid := it.First(); valid; valid = it.Next() {
		k, _, err := keys.DecodeVersioned(it.Key()[1:], nil)
		if err != nil {
			return 0, fmt.Errorf("memengine: write key %x: %w", it.Key(), err)
		}
		if last != nil && bytes.Equal(k, last) {
			continue
		}
		last = k
		// Count per region: restart at a region boundary.
		for end := e.regions[ri].GetEndKey(); len(end) > 0 && bytes.Compare(k, end) >= 0; end = e.regions[ri].GetEndKey() {
			ri++
			n = 0
		}
		if n == maxKeys {
			splitKeys = append(splitKeys, k)
			n = 0
		}
		n++
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	before := len(e.regions)
	e.splitLocked(splitKeys)
	return len(e.regions) - before, nil
}
