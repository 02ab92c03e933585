package pdclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
)

// TestThreeMemberFailover: the client follows the leader across a leader
// stop; timestamps and ids keep increasing and metadata survives.
func TestThreeMemberFailover(t *testing.T) {
	ss := pdtest.NewCluster(t, 3, 1)
	var addrs []string
	for _, s := range ss {
		addrs = append(addrs, s.Addr)
	}
	c := newClient(t, addrs...)
	ctx := testCtx(t)

	lastTS, err := getTSRetry(ctx, c)
	require.NoError(t, err)
	lastID, err := c.AllocID(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: 7, Address: "127.0.0.1:7"}))
	members, err := c.GetMembers(ctx)
	require.NoError(t, err)
	require.Len(t, members.Members, 3)
	old := pdtest.Leader(ss)
	require.Equal(t, old.Addr, members.Leader.ClientUrls[0])

	old.Stop()
	require.Eventually(t, func() bool { return pdtest.Leader(ss) != nil }, 20*time.Second, 10*time.Millisecond)

	ts, err := getTSRetry(ctx, c)
	require.NoError(t, err)
	require.Greater(t, ts, lastTS)
	id, err := c.AllocID(ctx, 1)
	require.NoError(t, err)
	require.Greater(t, id, lastID)
	ok, err := c.IsBootstrapped(ctx)
	require.NoError(t, err)
	require.True(t, ok, "bootstrapped with replicas=1 by the first leader")
	r, _, err := c.GetRegion(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, uint64(7), r.Peers[0].StoreId)

	// The old leader comes back as a follower; the client keeps working.
	old.Restart()
	for range 20 {
		ts, err := getTSRetry(ctx, c)
		require.NoError(t, err)
		require.Greater(t, ts, lastTS)
		lastTS = ts
	}
}
