package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/store/gc"
)

// gcCutPD is a store's PD client whose GC safe point polls fail while cut
// (the store is partitioned from PD, or PD is failing over, while the
// cluster's safe point advances); everything else reaches PD.
type gcCutPD struct {
	*pdclient.Client
	cut atomic.Bool
}

func (p *gcCutPD) GetGCSafePoint(ctx context.Context) (uint64, error) {
	if p.cut.Load() {
		return 0, errors.New("test: PD unreachable")
	}
	return p.Client.GetGCSafePoint(ctx)
}

// TestGCSafePointReachesStoreCutFromPD: store m never hears of the new GC
// safe point from PD, while the leader (which does) deletes the versions
// below it and m applies those deletes. Reads at a timestamp below the safe
// point on m — a follower read, a stale read, and a leader read once m
// leads — must be refused with GCTooEarly (MySQL 9006 on the SQL node),
// not answered from the collected data.
func TestGCSafePointReachesStoreCutFromPD(t *testing.T) {
	var pds []*gcCutPD // in node order: newTestCluster starts nodes 0, 1, 2
	t.Cleanup(func() { // registered first: runs after the nodes stopped
		for _, p := range pds {
			p.Close()
		}
	})
	c := newTestCluster(t, func(cfg *Config) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cli, err := pdclient.New(ctx, cfg.PDEndpoints)
		require.NoError(t, err)
		p := &gcCutPD{Client: cli}
		pds = append(pds, p)
		cfg.PD = p
		cfg.TSO = nil // PD's timestamps: stale reads need a safe ts
		cfg.GC = gc.Config{PollInterval: 20 * time.Millisecond, DeleteDelay: 100 * time.Millisecond}
	})
	require.Len(t, pds, 3)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ts := func() uint64 {
		v, err := c.pd.GetTS(ctx)
		require.NoError(t, err)
		return v
	}
	put := func(value string) uint64 {
		start := ts()
		commit := ts()
		resp := c.onePC([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte(value)}}, start, commit)
		require.Empty(t, resp.GetErrors())
		return commit
	}

	l := c.leader()
	m := (l + 1) % 3
	pds[m].cut.Store(true)
	c1 := put("v1")
	readTS := ts() // sees v1
	c2 := put("v2")
	require.Greater(t, c2, readTS)
	mStore := c.nodes[m].srv.Store()
	require.Eventually(t, func() bool {
		v, ok, err := engineGet(mStore.Engine(), "k", readTS)
		require.NoError(t, err)
		v2, _, err := engineGet(mStore.Engine(), "k", c2)
		require.NoError(t, err)
		return ok && string(v) == "v1" && string(v2) == "v2"
	}, waitFor, 5*time.Millisecond, "store %d replicated both versions", m)
	t.Logf("v1 at %d, reads at %d, v2 at %d", c1, readTS, c2)

	sp := ts()
	_, err := c.pd.UpdateGCSafePoint(ctx, sp)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return c.nodes[l].srv.GC().CollectedSafePoint() >= sp
	}, waitFor, 5*time.Millisecond, "the leader collects at the new safe point")
	require.Eventually(t, func() bool {
		_, ok, err := engineGet(mStore.Engine(), "k", readTS)
		require.NoError(t, err)
		return !ok
	}, waitFor, 5*time.Millisecond, "store %d applied the leader's GC deletes", m)
	require.Zero(t, c.nodes[m].srv.GC().CollectedSafePoint(), "store %d heard of no safe point from PD", m)

	region := c.region()
	var mPeer *metapb.Peer
	for _, p := range region.GetPeers() {
		if p.GetStoreId() == mStore.ID() {
			mPeer = p
		}
	}
	require.NotNil(t, mPeer)
	rctx := func(replica, stale bool) *kvrpcpb.Context {
		return &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch(), Peer: mPeer,
			ReplicaRead: replica, StaleRead: stale}
	}
	// requireRefused reads k at readTS on m until it gets an answer that
	// is not a retryable region error and requires GCTooEarly.
	requireRefused := func(what string, rc *kvrpcpb.Context) {
		t.Helper()
		var resp *kvrpcpb.GetResponse
		require.Eventually(t, func() bool {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var err error
			resp, err = c.nodes[m].client.KvGet(rctx, &kvrpcpb.GetRequest{Context: rc, Key: []byte("k"), Version: readTS})
			return err == nil && resp.GetRegionError() == nil
		}, waitFor, 10*time.Millisecond, "%s on store %d: no answer (last %v)", what, m, resp)
		require.NotNil(t, resp.GetError().GetGcTooEarly(),
			"%s on store %d at %d below safe point %d answered from collected data: value %q not_found %v error %v",
			what, m, readTS, sp, resp.GetValue(), resp.GetNotFound(), resp.GetError())
		require.Equal(t, readTS, resp.GetError().GetGcTooEarly().GetStartTs())
		require.GreaterOrEqual(t, resp.GetError().GetGcTooEarly().GetSafePoint(), sp)
	}
	requireRefused("follower read", rctx(true, false))
	requireRefused("stale read", rctx(false, true))

	// m becomes the leader (transfers from whoever leads until m does).
	require.Eventually(t, func() bool {
		cur := c.leaderNow()
		if cur == m {
			return true
		}
		if cur >= 0 {
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_ = c.nodes[cur].srv.Store().TransferLeaders(tctx) // may pick the other replica: try again
		}
		return c.leaderNow() == m
	}, waitFor, 10*time.Millisecond, "store %d becomes leader", m)
	requireRefused("leader read", rctx(false, false))

	// Reads at or above the safe point are served.
	resp, err := c.nodes[m].client.KvGet(ctx, &kvrpcpb.GetRequest{Context: rctx(false, false), Key: []byte("k"), Version: ts()})
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	require.Nil(t, resp.GetError())
	require.Equal(t, "v2", string(resp.GetValue()))
}
