package pdclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdtest"
)

// TestGCSafePointMonotonicAndPersisted: the safe point only moves up, an
// update below it answers the current value, and both it and the GC config
// survive a PD restart.
func TestGCSafePointMonotonicAndPersisted(t *testing.T) {
	s := pdtest.New(t, 3)
	c := newClient(t, []string{s.Addr})
	ctx := testCtx(t)

	sp, err := c.GetGCSafePoint(ctx)
	require.NoError(t, err)
	require.Zero(t, sp, "no GC has run")
	for _, tc := range []struct{ set, want uint64 }{
		{100, 100}, {50, 100}, {100, 100}, {101, 101}, {0, 101}, {1 << 40, 1 << 40},
	} {
		got, err := c.UpdateGCSafePoint(ctx, tc.set)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "update to %d", tc.set)
		got, err = c.GetGCSafePoint(ctx)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	cfg, err := c.SetGCConfig(ctx, 0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(10*time.Minute/time.Millisecond), cfg.LifeTimeMs, "default tidb_gc_life_time")
	require.Equal(t, uint64(10*time.Minute/time.Millisecond), cfg.RunIntervalMs, "default tidb_gc_run_interval")
	cfg, err = c.SetGCConfig(ctx, 3*time.Second, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(3000), cfg.LifeTimeMs)
	require.Equal(t, uint64(10*time.Minute/time.Millisecond), cfg.RunIntervalMs)

	s.Stop()
	s.Restart()
	sp, err = c.GetGCSafePoint(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1<<40), sp, "safe point persisted across restart")
	got, err := c.UpdateGCSafePoint(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, uint64(1<<40), got, "a restarted PD does not move the safe point back")
	cfg, err = c.SetGCConfig(ctx, 0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(3000), cfg.LifeTimeMs, "GC config persisted across restart")
}

// TestGCNodeHeartbeatLeader: one campaigning node at a time is GC leader;
// the leadership moves when the holder resigns or its heartbeat expires;
// the smallest live min_start_ts is reported.
func TestGCNodeHeartbeatLeader(t *testing.T) {
	addr := pdtest.Start(t, 3)
	c := newClient(t, []string{addr})
	ctx := testCtx(t)
	const ttl = 300 * time.Millisecond

	// Right after the PD term starts no leader is granted until a TTL
	// passed; poll until a is leader.
	require.Eventually(t, func() bool {
		r, err := c.GCNodeHeartbeat(ctx, "a", 0, ttl, true)
		require.NoError(t, err)
		return r.IsLeader
	}, 10*time.Second, 20*time.Millisecond)
	r, err := c.GCNodeHeartbeat(ctx, "b", 500, ttl, true)
	require.NoError(t, err)
	require.False(t, r.IsLeader)
	require.Equal(t, "a", r.LeaderId)
	require.Equal(t, uint64(500), r.MinStartTs)
	r, err = c.GCNodeHeartbeat(ctx, "a", 300, ttl, true)
	require.NoError(t, err)
	require.True(t, r.IsLeader, "the holder keeps it")
	require.Equal(t, uint64(300), r.MinStartTs, "smallest of the live nodes")

	// a resigns: b takes over on its next heartbeat.
	r, err = c.GCNodeHeartbeat(ctx, "a", 0, ttl, false)
	require.NoError(t, err)
	require.False(t, r.IsLeader)
	r, err = c.GCNodeHeartbeat(ctx, "b", 0, ttl, true)
	require.NoError(t, err)
	require.True(t, r.IsLeader)

	// b stops sending: after its TTL a gets the leadership, and b's
	// min_start_ts no longer counts.
	_, err = c.GCNodeHeartbeat(ctx, "b", 200, ttl, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r, err = c.GCNodeHeartbeat(ctx, "a", 0, ttl, true)
		require.NoError(t, err)
		return r.IsLeader
	}, 10*time.Second, 20*time.Millisecond)
	require.Zero(t, r.MinStartTs, "b's heartbeat expired")
}

// TestServiceGCSafePoint: a live service safe point holds the GC safe
// point below it (also across a PD restart); one below the GC safe point
// is refused; removing it lets the GC safe point move on.
func TestServiceGCSafePoint(t *testing.T) {
	s := pdtest.New(t, 3)
	c := newClient(t, []string{s.Addr})
	ctx := testCtx(t)

	_, err := c.UpdateGCSafePoint(ctx, 100)
	require.NoError(t, err)
	min, err := c.UpdateServiceGCSafePoint(ctx, "br-1", time.Minute, 50)
	require.NoError(t, err)
	require.Equal(t, uint64(100), min, "a service safe point below the GC safe point is not registered")

	min, err = c.UpdateServiceGCSafePoint(ctx, "br-1", time.Minute, 200)
	require.NoError(t, err)
	require.Equal(t, uint64(200), min)
	min, err = c.UpdateServiceGCSafePoint(ctx, "br-2", time.Minute, 300)
	require.NoError(t, err)
	require.Equal(t, uint64(200), min, "the smallest live service safe point")
	got, err := c.UpdateGCSafePoint(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, uint64(200), got, "GC stops at the service safe point")

	s.Stop()
	s.Restart()
	got, err = c.UpdateGCSafePoint(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, uint64(200), got, "the service safe point survives a PD restart")

	min, err = c.UpdateServiceGCSafePoint(ctx, "br-1", 0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(300), min, "br-1 removed, br-2 still holds")
	got, err = c.UpdateGCSafePoint(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, uint64(300), got)
	_, err = c.UpdateServiceGCSafePoint(ctx, "br-2", 0, 0)
	require.NoError(t, err)
	got, err = c.UpdateGCSafePoint(ctx, 1000)
	require.NoError(t, err)
	require.Equal(t, uint64(1000), got, "no live service safe point: GC moves on")

	// An expired one no longer holds.
	_, err = c.UpdateServiceGCSafePoint(ctx, "br-3", time.Second, 1500)
	require.NoError(t, err)
	got, err = c.UpdateGCSafePoint(ctx, 2000)
	require.NoError(t, err)
	require.Equal(t, uint64(1500), got)
	require.Eventually(t, func() bool {
		got, err = c.UpdateGCSafePoint(ctx, 2000)
		return err == nil && got == 2000
	}, 10*time.Second, 100*time.Millisecond, "an expired service safe point stops holding")
}
