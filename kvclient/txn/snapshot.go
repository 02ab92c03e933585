package txn

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

var errLocked = errors.New("kvclient/txn: key locked by a live transaction")

// readCtx is the request context of a snapshot read.
func (t *Txn) readCtx() *kvrpcpb.Context {
	rc := &kvrpcpb.Context{}
	t.fillReadCtx(rc)
	return rc
}

// fillReadCtx sets rc as readCtx's.
func (t *Txn) fillReadCtx(rc *kvrpcpb.Context) {
	rc.ResolvedLocks = slices.Clone(t.skip)
	if t.opts.Isolation == kv.ReadCommitted {
		rc.IsolationLevel = kvrpcpb.IsolationLevel_RC
	}
}

// onLocks resolves locks a read at ts met; afterwards the read is resent.
func (t *Txn) onLocks(ctx context.Context, bo *kvclient.Backoffer, ts uint64, locks []*kvrpcpb.LockInfo) error {
	res, err := t.c.resolver.Resolve(ctx, bo, ts, locks)
	if err != nil {
		return err
	}
	for _, s := range res.Skip {
		if !slices.Contains(t.skip, s) {
			t.skip = append(t.skip, s)
		}
	}
	if res.Wait {
		return bo.Backoff(ctx, fmt.Errorf("%w: txn %d on key %x", errLocked, locks[0].LockVersion, locks[0].Key))
	}
	return nil
}

// Get reads key: the transaction's own write if any, else the snapshot.
// The value is owned by the caller.
func (t *Txn) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	if t.finished {
		return nil, false, ErrFinished
	}
	if e, ok := t.mem.Get(key); ok && e.HasValue() {
		if e.Deleted() {
			return nil, false, nil
		}
		return slices.Clone(e.Value), true, nil
	}
	ts, err := t.snapshotTS(ctx)
	if err != nil {
		return nil, false, err
	}
	v, found, err := t.snapshotGet(ctx, key, ts)
	return v, found, mapErr(err)
}

func (t *Txn) snapshotGet(ctx context.Context, key []byte, ts uint64) ([]byte, bool, error) {
	bo := t.c.kv.NewBackoffer()
	for {
		r, err := t.c.kv.Locate(ctx, bo, key)
		if err != nil {
			return nil, false, err
		}
		// One allocation for the request's parts (a point select sends
		// nothing else).
		call := &struct {
			rc  kvrpcpb.Context
			get kvrpcpb.GetRequest
			cmd storepb.BatchCommandsRequest_Request_Get
			req kvclient.Request
		}{}
		t.fillReadCtx(&call.rc)
		call.get.Context, call.get.Key, call.get.Version = &call.rc, key, ts
		call.cmd.Get = &call.get
		call.req.Cmd = &call.cmd
		resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &call.req)
		if err != nil {
			return nil, false, err
		}
		if retry {
			continue
		}
		g := resp.GetGet()
		if ke := g.GetError(); ke != nil {
			if ke.Locked != nil {
				if err := t.onLocks(ctx, bo, ts, []*kvrpcpb.LockInfo{ke.Locked}); err != nil {
					return nil, false, err
				}
				continue
			}
			return nil, false, fmt.Errorf("kvclient/txn: get %x: %w", key, keyError(ke, t.startTS))
		}
		if g.GetNotFound() {
			return nil, false, nil
		}
		return g.GetValue(), true, nil
	}
}

// BatchGet reads keys (the buffer first, the snapshot for the rest, one
// request per region, regions in parallel) and returns the found ones.
func (t *Txn) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	if t.finished {
		return nil, ErrFinished
	}
	out := make(map[string][]byte, len(keys))
	var rest [][]byte
	for _, k := range keys {
		if e, ok := t.mem.Get(k); ok && e.HasValue() {
			if !e.Deleted() {
				out[string(k)] = slices.Clone(e.Value)
			}
			continue
		}
		rest = append(rest, k)
	}
	if len(rest) == 0 {
		return out, nil
	}
	slices.SortFunc(rest, compareBytes)
	rest = slices.CompactFunc(rest, func(a, b []byte) bool { return compareBytes(a, b) == 0 })
	ts, err := t.snapshotTS(ctx)
	if err != nil {
		return nil, err
	}
	return out, mapErr(t.snapshotBatchGet(ctx, rest, ts, out))
}

// snapshotBatchGet reads sorted, distinct keys at ts into out.
func (t *Txn) snapshotBatchGet(ctx context.Context, keys [][]byte, ts uint64, out map[string][]byte) error {
	bo := t.c.kv.NewBackoffer()
	var mu sync.Mutex
	for len(keys) > 0 {
		var (
			locks  []*kvrpcpb.LockInfo
			locked [][]byte
		)
		rc := t.readCtx()
		// one region's keys; retried (regrouped) by OnSorted.
		runGroup := func(bo *kvclient.Backoffer, ks [][]byte) error {
			return t.c.kv.OnSorted(ctx, bo, len(ks), func(i int) []byte { return ks[i] },
				func(r *locate.Region, lo, hi int) (bool, error) {
					req := &kvrpcpb.BatchGetRequest{Context: proto_clone(rc), Keys: ks[lo:hi], Version: ts}
					resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_BatchGet{BatchGet: req}})
					if err != nil || retry {
						return retry, err
					}
					bg := resp.GetBatchGet()
					mu.Lock()
					defer mu.Unlock()
					if ke := bg.GetError(); ke != nil {
						if ke.Locked == nil {
							return false, fmt.Errorf("kvclient/txn: batch get: %w", keyError(ke, t.startTS))
						}
						locks = append(locks, ke.Locked)
						locked = append(locked, ks[lo:hi]...)
						return false, nil
					}
					for _, p := range bg.GetPairs() {
						if p.Error != nil {
							if p.Error.Locked == nil {
								return false, fmt.Errorf("kvclient/txn: batch get %x: %w", p.Key, keyError(p.Error, t.startTS))
							}
							locks = append(locks, p.Error.Locked)
							locked = append(locked, p.Key)
							continue
						}
						out[string(p.Key)] = p.Value
					}
					return false, nil
				})
		}
		groups, err := t.c.kv.GroupSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] })
		if err != nil {
			return err
		}
		if len(groups) == 1 {
			err = runGroup(bo, keys)
		} else {
			errs := make([]error, len(groups))
			var wg sync.WaitGroup
			for i, g := range groups[1:] {
				sub := bo.Fork()
				wg.Go(func() { errs[i+1] = runGroup(sub, keys[g.Lo:g.Hi]) })
			}
			errs[0] = runGroup(bo.Fork(), keys[groups[0].Lo:groups[0].Hi])
			wg.Wait()
			err = errors.Join(errs...)
		}
		if err != nil {
			return err
		}
		if len(locks) == 0 {
			return nil
		}
		if err := t.onLocks(ctx, bo, ts, locks); err != nil {
			return err
		}
		slices.SortFunc(locked, compareBytes)
		keys = slices.CompactFunc(locked, func(a, b []byte) bool { return compareBytes(a, b) == 0 })
	}
	return nil
}

func proto_clone(c *kvrpcpb.Context) *kvrpcpb.Context {
	return &kvrpcpb.Context{IsolationLevel: c.IsolationLevel, ResolvedLocks: c.ResolvedLocks}
}

// Scan returns up to limit (0: all) pairs of [start, end) (end empty: no
// bound) merging the buffer over the snapshot, descending when reverse.
// Pairs are owned by the caller.
func (t *Txn) Scan(ctx context.Context, start, end []byte, limit int, reverse bool) ([]kv.KvPair, error) {
	if t.finished {
		return nil, ErrFinished
	}
	if limit < 0 {
		return nil, fmt.Errorf("kvclient/txn: scan: negative limit %d", limit)
	}
	if len(end) != 0 && compareBytes(start, end) >= 0 {
		return nil, nil
	}
	ts, err := t.snapshotTS(ctx)
	if err != nil {
		return nil, err
	}
	batch := 256
	if limit > 0 {
		batch = min(max(limit+8, 16), 1024)
	}
	sc := &scanner{t: t, ts: ts, start: start, end: end, reverse: reverse, batch: batch, bo: t.c.kv.NewBackoffer()}
	if !reverse {
		sc.cur = start
	} else {
		sc.cur = end
	}
	memNext, memStop := iter.Pull2(t.mem.Iter(start, end, reverse))
	defer memStop()
	nextMem := func() ([]byte, []byte, bool, bool) { // key, value, deleted, ok
		for {
			k, e, ok := memNext()
			if !ok {
				return nil, nil, false, false
			}
			if e.HasValue() {
				return k, e.Value, e.Deleted(), true
			}
		}
	}
	before := func(a, b []byte) bool { // a comes first in scan order
		if reverse {
			return compareBytes(a, b) > 0
		}
		return compareBytes(a, b) < 0
	}
	var out []kv.KvPair
	mk, mv, mdel, mok := nextMem()
	sp, err := sc.next(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	for (mok || sp != nil) && (limit == 0 || len(out) < limit) {
		switch {
		case mok && (sp == nil || before(mk, sp.Key) || compareBytes(mk, sp.Key) == 0):
			if sp != nil && compareBytes(mk, sp.Key) == 0 {
				if sp, err = sc.next(ctx); err != nil {
					return nil, mapErr(err)
				}
			}
			if !mdel {
				out = append(out, kv.KvPair{Key: slices.Clone(mk), Value: slices.Clone(mv)})
			}
			mk, mv, mdel, mok = nextMem()
		default:
			out = append(out, kv.KvPair{Key: sp.Key, Value: sp.Value})
			if sp, err = sc.next(ctx); err != nil {
				return nil, mapErr(err)
			}
		}
	}
	return out, nil
}

// scanner pulls snapshot pairs of [start, end) in order, batch at a time,
// region by region, resolving locks it meets.
type scanner struct {
	t          *Txn
	ts         uint64
	start, end []byte
	reverse    bool
	batch      int
	bo         *kvclient.Backoffer

	cur  []byte // forward: next start key; reverse: next end key (exclusive, empty = +inf)
	buf  []*kvrpcpb.KvPair
	done bool
}

func (s *scanner) next(ctx context.Context) (*kvrpcpb.KvPair, error) {
	for len(s.buf) == 0 {
		if s.done {
			return nil, nil
		}
		if err := s.fill(ctx); err != nil {
			return nil, err
		}
	}
	p := s.buf[0]
	s.buf = s.buf[1:]
	return p, nil
}

func (s *scanner) fill(ctx context.Context) error {
	r, err := s.region(ctx)
	if err != nil {
		return err
	}
	req := &kvrpcpb.ScanRequest{Context: s.t.readCtx(), Limit: uint32(s.batch), Version: s.ts, Reverse: s.reverse}
	if !s.reverse {
		req.StartKey, req.EndKey = s.cur, s.end
		if e := r.EndKey(); len(e) != 0 && (len(s.end) == 0 || compareBytes(e, s.end) < 0) {
			req.EndKey = e
		}
	} else {
		req.StartKey, req.EndKey = s.start, s.cur
		if st := r.StartKey(); compareBytes(st, s.start) > 0 {
			req.StartKey = st
		}
		if len(req.EndKey) == 0 {
			req.EndKey = r.EndKey()
		}
	}
	resp, retry, err := s.t.c.kv.SendRequest(ctx, s.bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Scan{Scan: req}})
	if err != nil {
		return err
	}
	if retry {
		return nil
	}
	sr := resp.GetScan()
	pairs := sr.GetPairs()
	var lock *kvrpcpb.LockInfo
	for i, p := range pairs {
		if p.Error != nil {
			if p.Error.Locked == nil {
				return fmt.Errorf("kvclient/txn: scan %x: %w", p.Key, keyError(p.Error, s.t.startTS))
			}
			lock, pairs = p.Error.Locked, pairs[:i]
			break
		}
	}
	if ke := sr.GetError(); ke != nil && lock == nil {
		if ke.Locked == nil {
			return fmt.Errorf("kvclient/txn: scan: %w", keyError(ke, s.t.startTS))
		}
		lock = ke.Locked
	}
	s.buf = pairs
	if len(pairs) > 0 {
		last := pairs[len(pairs)-1].Key
		if !s.reverse {
			s.cur = append(slices.Clip(last), 0) // next key after last
		} else {
			s.cur = last
		}
	}
	if lock != nil {
		return s.t.onLocks(ctx, s.bo, s.ts, []*kvrpcpb.LockInfo{lock})
	}
	if len(sr.GetPairs()) >= s.batch {
		return nil // more in this region
	}
	// The region is exhausted: move to the next one.
	if !s.reverse {
		e := r.EndKey()
		if len(e) == 0 || (len(s.end) != 0 && compareBytes(e, s.end) >= 0) {
			s.done = true
		} else {
			s.cur = e
		}
	} else {
		st := r.StartKey()
		if len(st) == 0 || compareBytes(st, s.start) <= 0 {
			s.done = true
		} else {
			s.cur = st
		}
	}
	return nil
}

// region returns the region holding the next keys to scan: for a forward
// scan the one holding cur; for a reverse one the one holding the keys just
// below cur, found by walking the route forward from start (the cache
// answers; a region cannot be located by its end key).
func (s *scanner) region(ctx context.Context) (*locate.Region, error) {
	if !s.reverse {
		return s.t.c.kv.Locate(ctx, s.bo, s.cur)
	}
	if len(s.cur) != 0 {
		r, err := s.t.c.kv.Locate(ctx, s.bo, s.cur)
		if err != nil {
			return nil, err
		}
		if compareBytes(r.StartKey(), s.cur) < 0 {
			return r, nil
		}
	}
	key := s.start
	for {
		r, err := s.t.c.kv.Locate(ctx, s.bo, key)
		if err != nil {
			return nil, err
		}
		e := r.EndKey()
		if len(e) == 0 || (len(s.cur) != 0 && compareBytes(e, s.cur) >= 0) {
			return r, nil
		}
		key = e
	}
}
