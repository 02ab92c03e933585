package pdclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/pdpb"
)

// TestSQLNodeRegistry: nodes get distinct server ids, the lowest free
// first; a renewal keeps the id; a released id goes to the next node; an
// id whose lease expired is free again, and its former holder gets a new
// one when it comes back late; GetSQLNodes lists the live nodes with their
// status addresses; the registry survives a PD restart.
func TestSQLNodeRegistry(t *testing.T) {
	s := pdtest.New(t, 3)
	c := newClient(t, []string{s.Addr})
	ctx := testCtx(t)
	node := func(id uint64, name string) *pdpb.SQLNode {
		return &pdpb.SQLNode{ServerId: id, SqlAddr: name + ":4000", StatusAddr: name + ":10080"}
	}
	const long = time.Minute

	a, la, err := c.SQLNodeHeartbeat(ctx, node(0, "a"), 0, long)
	require.NoError(t, err)
	require.Equal(t, uint64(1), a)
	// b's lease is short: it expires below (etcd's minimum is ~2 s).
	b, lb, err := c.SQLNodeHeartbeat(ctx, node(0, "b"), 0, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, uint64(2), b)
	again, la2, err := c.SQLNodeHeartbeat(ctx, node(a, "a"), la, long)
	require.NoError(t, err)
	require.Equal(t, a, again, "a renewal keeps the id")
	require.Equal(t, la, la2, "and the lease")

	nodes, err := c.SQLNodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	require.Equal(t, "a:10080", nodes[0].StatusAddr)
	require.Equal(t, b, nodes[1].ServerId)

	// a releases its id (clean shutdown): the next node takes it.
	_, _, err = c.SQLNodeHeartbeat(ctx, node(a, "a"), la, 0)
	require.NoError(t, err)
	d, _, err := c.SQLNodeHeartbeat(ctx, node(0, "d"), 0, long)
	require.NoError(t, err)
	require.Equal(t, uint64(1), d, "a released id is free at once")

	require.Eventually(t, func() bool {
		nodes, err := c.SQLNodes(ctx)
		require.NoError(t, err)
		return len(nodes) == 1
	}, 20*time.Second, 100*time.Millisecond, "b's key goes when its lease expires")
	e, _, err := c.SQLNodeHeartbeat(ctx, node(0, "e"), 0, long)
	require.NoError(t, err)
	require.Equal(t, uint64(2), e, "an expired id is reused")
	late, _, err := c.SQLNodeHeartbeat(ctx, node(b, "b"), lb, long)
	require.NoError(t, err)
	require.Equal(t, uint64(3), late, "b, back after its lease expired, gets a new id")

	s.Stop()
	s.Restart()
	nodes, err = c.SQLNodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 3, "the registry lives in etcd")

	_, _, err = c.SQLNodeHeartbeat(ctx, &pdpb.SQLNode{SqlAddr: "x:1"}, 0, long)
	require.ErrorContains(t, err, "status addresses")
}
