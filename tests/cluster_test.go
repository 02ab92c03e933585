package tests

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/localcluster"
)

// binDir holds the binaries built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// With failpoints (package failpoint): inert unless a test sets
	// STRATA_FAILPOINTS for a process.
	if err := localcluster.Build(dir, "failpoints"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// clusterOpts tunes startCluster; the zero value is 3 stores and 1 SQL node.
type clusterOpts struct {
	pds, stores, sqlNodes int
	storeArgs             []string // extra flags for every store node
	storeEnv              []string // extra environment of every store node ("K=V": STRATA_FAILPOINTS)
	sqlArgs               []string // extra flags for every SQL node
	// autoAnalyze: the SQL nodes run auto-analyze. Off by default, as in
	// TiDB's tests: plans asserted on pseudo statistics must not change
	// under a test when a table reaches 1,000 rows.
	autoAnalyze bool
	// tls turns on cluster TLS (localcluster.Config.TLS); pdTokenFile is
	// PD's --http-token-file.
	tls         *security.Config
	pdTokenFile string
}

// startCluster starts a cluster of real processes on free loopback ports in a
// temp dir, waits until every SQL node serves, and tears it down (dumping
// the process logs if the test failed) when the test ends.
func startCluster(t testing.TB, o clusterOpts) *localcluster.Cluster {
	t.Helper()
	c, err := localcluster.New(localcluster.Config{
		BinDir: binDir, DataDir: t.TempDir(), PDs: o.pds, Stores: o.stores, SQLNodes: o.sqlNodes, FreePorts: true,
		// A faster tick keeps leader failover well under a second.
		StoreArgs: append([]string{"--raft-tick", "50ms", "--heartbeat-interval", "200ms"}, o.storeArgs...),
		SQLArgs:   append([]string{fmt.Sprintf("--run-auto-analyze=%t", o.autoAnalyze)}, o.sqlArgs...),
		TLS:       o.tls, PDTokenFile: o.pdTokenFile,
	})
	require.NoError(t, err)
	for _, s := range c.Stores {
		s.Env = append(s.Env, o.storeEnv...)
	}
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(8<<10))
		}
	})
	require.NoError(t, c.Start())
	waitReady(t, c)
	return c
}

func waitReady(t testing.TB, c *localcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range c.SQL {
		require.NoError(t, c.WaitReady(ctx, i))
	}
}

// openDB opens a connection pool to SQL node i with db selected.
func openDB(t testing.TB, c *localcluster.Cluster, i int, db string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("mysql", c.DSN(i, db))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}
