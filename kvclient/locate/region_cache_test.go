package locate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
)

func region(id uint64, start, end string, ver uint64, stores ...uint64) *metapb.Region {
	m := &metapb.Region{
		Id:          id,
		StartKey:    []byte(start),
		EndKey:      []byte(end),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: ver},
	}
	for _, s := range stores {
		m.Peers = append(m.Peers, &metapb.Peer{Id: id*100 + s, StoreId: s})
	}
	return m
}

// fakePD serves a fixed set of regions; GetRegion blocks while gate is
// non-nil and open.
type fakePD struct {
	mu      sync.Mutex
	regions []*metapb.Region
	calls   atomic.Int32
	gate    chan struct{}
	err     error
}

func (p *fakePD) GetRegion(ctx context.Context, key []byte) (*metapb.Region, *metapb.Peer, error) {
	p.calls.Add(1)
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, nil, p.err
	}
	for _, r := range p.regions {
		if contains(r, key) {
			if len(r.Peers) == 0 {
				return r, nil, nil
			}
			return r, r.Peers[len(r.Peers)-1], nil
		}
	}
	return nil, nil, errors.New("fake pd: no region")
}

// cachedRanges lists the cached ranges in order, checking the index's
// invariants on the way.
func cachedRanges(c *RegionCache) []string {
	ix := c.index.Load()
	var out []string
	var prevEnd []byte
	n := 0
	for ci, ch := range ix.chunks {
		if len(ch) == 0 || len(ch) > chunkSize || !bytes.Equal(ix.firsts[ci], ch[0].start) {
			panic(fmt.Sprintf("region cache: chunk %d has %d entries, first %q", ci, len(ch), ix.firsts[ci]))
		}
		for _, e := range ch {
			m := e.r.meta
			if !bytes.Equal(e.start, m.StartKey) || !bytes.Equal(e.end, m.EndKey) {
				panic(fmt.Sprintf("region cache: entry [%q, %q) for region %d [%q, %q)", e.start, e.end, m.Id, m.StartKey, m.EndKey))
			}
			if n > 0 && (len(prevEnd) == 0 || bytes.Compare(prevEnd, e.start) > 0) {
				panic(fmt.Sprintf("region cache: region %d [%q, %q) overlaps its predecessor (end %q)", m.Id, e.start, e.end, prevEnd))
			}
			prevEnd = e.end
			n++
			out = append(out, string(m.StartKey)+"-"+string(m.EndKey))
		}
	}
	if n != ix.n || len(ix.firsts) != len(ix.chunks) {
		panic(fmt.Sprintf("region cache: %d regions counted as %d, %d firsts for %d chunks", n, ix.n, len(ix.firsts), len(ix.chunks)))
	}
	return out
}

func TestInsertEvictsOverlaps(t *testing.T) {
	tests := []struct {
		name   string
		insert []*metapb.Region
		want   []string
	}{
		{"single", []*metapb.Region{region(1, "", "", 1, 1)}, []string{"-"}},
		{"disjoint out of order", []*metapb.Region{
			region(2, "m", "", 1, 1), region(1, "", "c", 1, 1), region(3, "c", "m", 1, 1),
		}, []string{"-c", "c-m", "m-"}},
		{"split replaces whole", []*metapb.Region{
			region(1, "", "", 1, 1), region(1, "", "m", 2, 1), region(2, "m", "", 2, 1),
		}, []string{"-m", "m-"}},
		{"merge replaces many", []*metapb.Region{
			region(1, "", "c", 1, 1), region(2, "c", "m", 1, 1), region(3, "m", "", 1, 1),
			region(4, "b", "n", 3, 1),
		}, []string{"b-n"}},
		{"stale epoch ignored", []*metapb.Region{
			region(1, "", "m", 2, 1), region(1, "", "", 1, 1),
		}, []string{"-m"}},
		{"touching end not evicted", []*metapb.Region{
			region(1, "a", "c", 1, 1), region(2, "c", "e", 1, 1), region(3, "e", "g", 1, 1),
			region(4, "c", "e", 2, 1),
		}, []string{"a-c", "c-e", "e-g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewRegionCache(&fakePD{})
			for _, m := range tt.insert {
				c.Insert(m, nil)
			}
			require.Equal(t, tt.want, cachedRanges(c))
			require.Len(t, c.byID, len(tt.want))
		})
	}
}

// TestIndexRandomOps runs random inserts (new, merged and split ranges)
// and invalidations over a cache of many chunks, checking the cached
// ranges and lookups against a plain list after every step.
func TestIndexRandomOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := NewRegionCache(&fakePD{})
	type span struct{ start, end int } // in units of 10 keys; end -1 = +inf
	var model []span                   // sorted, non-overlapping
	k := func(i int) string {
		if i <= 0 {
			return ""
		}
		return fmt.Sprintf("k%06d", i*10)
	}
	overlaps := func(a, b span) bool {
		return (a.end < 0 || b.start < a.end) && (b.end < 0 || a.start < b.end)
	}
	id := uint64(0)
	insert := func(sp span) *Region {
		id++
		end := ""
		if sp.end >= 0 {
			end = k(sp.end)
		}
		kept := model[:0:0]
		for _, o := range model {
			if !overlaps(o, sp) {
				kept = append(kept, o)
			}
		}
		model = append(kept, sp)
		slices.SortFunc(model, func(a, b span) int { return a.start - b.start })
		return c.Insert(region(id, k(sp.start), end, 1, 1), nil)
	}
	const n = 1000
	for _, i := range rng.Perm(n) {
		end := i + 1
		if i == n-1 {
			end = -1
		}
		insert(span{i, end})
	}
	for step := range 2000 {
		switch op := rng.IntN(8); {
		case op == 0 && len(model) > 0: // invalidate
			i := rng.IntN(len(model))
			r := c.lookup([]byte(k(model[i].start) + "\x00"))
			require.NotNil(t, r, step)
			c.Invalidate(r)
			model = slices.Delete(model, i, i+1)
		case op == 1: // merge up to 20 units
			a := rng.IntN(n)
			insert(span{a, min(a+1+rng.IntN(20), n)})
		default: // one unit: a split, or a load into a hole
			a := rng.IntN(n)
			insert(span{a, a + 1})
		}
		var want []string
		for _, sp := range model {
			end := ""
			if sp.end >= 0 {
				end = k(sp.end)
			}
			want = append(want, k(sp.start)+"-"+end)
		}
		require.Equal(t, want, cachedRanges(c), step)
		require.Equal(t, len(model), c.Len())
		if step%500 == 0 {
			t.Logf("step %d: %d regions in %d chunks", step, len(model), len(c.index.Load().chunks))
		}
		for range 5 {
			x := rng.IntN(n * 10)
			key := []byte(fmt.Sprintf("k%06d", x))
			r := c.lookup(key)
			j := slices.IndexFunc(model, func(sp span) bool {
				return sp.start*10 <= x && (sp.end < 0 || x < sp.end*10)
			})
			if j < 0 {
				require.Nil(t, r, "step %d key %s", step, key)
			} else {
				require.NotNil(t, r, "step %d key %s", step, key)
				require.Equal(t, k(model[j].start), string(r.StartKey()), step)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	c := NewRegionCache(&fakePD{})
	c.Insert(region(1, "b", "d", 1, 1), nil)
	c.Insert(region(2, "d", "f", 1, 1), nil)
	c.Insert(region(3, "h", "", 1, 1), nil)
	tests := []struct {
		key  string
		want uint64 // 0 = miss
	}{
		{"a", 0}, {"b", 1}, {"c", 1}, {"d", 2}, {"e\xff", 2}, {"f", 0}, {"g", 0}, {"h", 3}, {"zzz", 3},
	}
	for _, tt := range tests {
		r := c.lookup([]byte(tt.key))
		if tt.want == 0 {
			require.Nil(t, r, tt.key)
			continue
		}
		require.NotNil(t, r, tt.key)
		require.Equal(t, tt.want, r.ID(), tt.key)
	}
}

func TestLocateLoadsAndInvalidates(t *testing.T) {
	pd := &fakePD{regions: []*metapb.Region{region(1, "", "m", 1, 1, 2, 3), region(2, "m", "", 1, 1, 2, 3)}}
	c := NewRegionCache(pd)
	ctx := context.Background()
	r, err := c.Locate(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, uint64(1), r.ID())
	_, leader := r.Leader()
	require.Equal(t, uint64(3), leader.StoreId, "leader from PD")
	r2, err := c.Locate(ctx, []byte("b"))
	require.NoError(t, err)
	require.Same(t, r, r2)
	require.Equal(t, int32(1), pd.calls.Load())

	c.Invalidate(r)
	require.False(t, r.Valid())
	require.Equal(t, 0, c.Len())
	r3, err := c.Locate(ctx, []byte("b"))
	require.NoError(t, err)
	require.NotSame(t, r, r3)
	require.Equal(t, int32(2), pd.calls.Load())
}

func TestLeaderSwitching(t *testing.T) {
	c := NewRegionCache(&fakePD{})
	r := c.Insert(region(1, "", "", 1, 1, 2, 3), nil)
	i, p := r.Leader()
	require.Equal(t, 0, i)
	require.Equal(t, uint64(1), p.StoreId)
	r.SwitchPeer(0)
	r.SwitchPeer(0) // a second request that saw the same leader does not skip a peer
	i, p = r.Leader()
	require.Equal(t, 1, i)
	require.Equal(t, uint64(2), p.StoreId)
	r.SwitchPeer(1)
	r.SwitchPeer(2)
	i, _ = r.Leader()
	require.Equal(t, 0, i, "wraps around")
	require.True(t, r.UpdateLeader(&metapb.Peer{Id: 103, StoreId: 3}))
	_, p = r.Leader()
	require.Equal(t, uint64(3), p.StoreId)
	require.False(t, r.UpdateLeader(&metapb.Peer{Id: 999, StoreId: 9}))
}

func TestOnEpochNotMatch(t *testing.T) {
	c := NewRegionCache(&fakePD{})
	stale := c.Insert(region(1, "", "", 1, 1, 2, 3), nil)
	ok := c.OnEpochNotMatch(stale, []*metapb.Region{region(1, "", "m", 2, 1, 2, 3), region(5, "m", "", 2, 1, 2, 3)}, 2)
	require.True(t, ok)
	require.False(t, stale.Valid())
	require.Equal(t, []string{"-m", "m-"}, cachedRanges(c))
	r := c.lookup([]byte("z"))
	require.Equal(t, uint64(5), r.ID())
	_, p := r.Leader()
	require.Equal(t, uint64(2), p.StoreId, "leader guessed on the answering store")

	require.False(t, c.OnEpochNotMatch(r, nil, 2))
	require.Equal(t, []string{"-m"}, cachedRanges(c))
}

func TestLocateSingleFlight(t *testing.T) {
	const n = 32
	pd := &fakePD{regions: []*metapb.Region{region(1, "", "", 1, 1)}, gate: make(chan struct{})}
	c := NewRegionCache(pd)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Locate(context.Background(), []byte("k"))
			if err == nil && r.ID() != 1 {
				err = errors.New("wrong region")
			}
			errs <- err
		}()
	}
	// Wait until one caller is in PD and all others wait on it.
	require.Eventually(t, func() bool {
		c.sfMu.Lock()
		defer c.sfMu.Unlock()
		call := c.inflight["k"]
		return call != nil && call.waiters.Load() == n-1
	}, 5*time.Second, time.Millisecond)
	close(pd.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), pd.calls.Load())
}

func TestLocateWaiterSurvivesLoaderCancel(t *testing.T) {
	pd := &fakePD{regions: []*metapb.Region{region(1, "", "", 1, 1)}, gate: make(chan struct{})}
	c := NewRegionCache(pd)
	loaderCtx, cancel := context.WithCancel(context.Background())
	loaderDone := make(chan error, 1)
	go func() {
		_, err := c.Locate(loaderCtx, []byte("k"))
		loaderDone <- err
	}()
	require.Eventually(t, func() bool { return pd.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	waiterDone := make(chan error, 1)
	go func() {
		_, err := c.Locate(context.Background(), []byte("k"))
		waiterDone <- err
	}()
	require.Eventually(t, func() bool {
		c.sfMu.Lock()
		defer c.sfMu.Unlock()
		call := c.inflight["k"]
		return call != nil && call.waiters.Load() == 1
	}, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-loaderDone, context.Canceled)
	close(pd.gate) // the waiter's own load now goes through
	require.NoError(t, <-waiterDone)
}

func TestLocateRejectsBadRegion(t *testing.T) {
	pd := &fakePD{regions: []*metapb.Region{region(1, "", "", 1)}} // no peers
	c := NewRegionCache(pd)
	_, err := c.Locate(context.Background(), []byte("k"))
	require.ErrorIs(t, err, ErrBadRegion)
	require.True(t, bytes.Contains([]byte(err.Error()), []byte("no peers")))
}

func TestLocateStalePDRegion(t *testing.T) {
	// We know region 1 was split to [, m) at version 2; PD still reports
	// the whole space at version 1.
	pd := &fakePD{regions: []*metapb.Region{region(1, "", "", 1, 1)}}
	c := NewRegionCache(pd)
	c.Insert(region(1, "", "m", 2, 1), nil)
	_, err := c.Locate(context.Background(), []byte("x"))
	require.ErrorIs(t, err, ErrBadRegion)
	require.Equal(t, []string{"-m"}, cachedRanges(c))
}

// BenchmarkLocateHit looks up keys spread over all of 10,000 cached
// regions, inserted in random order with other allocations between them
// (as loads from PD come), so a lookup's memory is mostly not in the CPU
// cache, as on a SQL node whose reads spread over many regions.
func BenchmarkLocateHit(b *testing.B) {
	c := NewRegionCache(&fakePD{})
	const n = 10000
	var keep [][]byte
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		keep = append(keep, make([]byte, 4096))
		start, end := fmt.Sprintf("k%06d", i*10), fmt.Sprintf("k%06d", (i+1)*10)
		if i == 0 {
			start = ""
		}
		if i == n-1 {
			end = ""
		}
		c.Insert(region(uint64(i+1), start, end, 1, 1, 2, 3), nil)
	}
	keys := make([][]byte, 1<<16)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%06d", rng.IntN(n*10)))
	}
	ctx := context.Background()
	keep = nil
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := c.Locate(ctx, keys[i%len(keys)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkInsert10000 fills an empty cache with 10,000 regions in random
// order, as a SQL node loads them from PD: the write side of the index.
func BenchmarkInsert10000(b *testing.B) {
	const n = 10000
	metas := make([]*metapb.Region, 0, n)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		metas = append(metas, region(uint64(i+1), fmt.Sprintf("k%06d", i*10), fmt.Sprintf("k%06d", (i+1)*10), 1, 1, 2, 3))
	}
	b.ReportAllocs()
	for b.Loop() {
		c := NewRegionCache(&fakePD{})
		for _, m := range metas {
			c.Insert(m, nil)
		}
	}
}
