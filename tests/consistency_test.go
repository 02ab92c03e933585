package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/raftstore/replicacheck"
)

// checkConsistency runs the replica consistency check on every store
// (raftstore/replicacheck, as cmd/consistencycheck does) and requires
// every region checked on all its replicas with equal hashes. It returns
// the number of regions checked.
func checkConsistency(t *testing.T, c *localcluster.Cluster) int {
	t.Helper()
	var addrs []string
	for _, st := range c.Stores {
		addrs = append(addrs, flagValue(st, "--status-addr"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := replicacheck.Run(ctx, &http.Client{Timeout: time.Minute}, addrs)
	require.NoError(t, err)
	require.Empty(t, res.Mismatches, "replicas differ")
	require.Empty(t, res.Unfinished, "regions not checked on every replica")
	return len(res.Checked)
}
