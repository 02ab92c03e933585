package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/localcluster"
)

// TestSQLNodeKilledMidCommit: a SQL node is killed -9 inside COMMIT of a
// transaction over two regions (failpoints hold it there), and a reader on
// another SQL node finds its locks. The reader must not block past the
// locks' TTL, and sees what the primary says: nothing after a 2PC
// prewrite, the whole transaction after the primary committed, and the
// whole transaction after every async-commit prewrite succeeded (an
// async-commit transaction is committed at that point).
func TestSQLNodeKilledMidCommit(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	reader := openDB(t, c, 1, "")
	mustExec(t, reader, "CREATE DATABASE mk")
	mustExec(t, reader, "CREATE TABLE mk.t (id INT PRIMARY KEY, v INT NOT NULL)")
	mustExec(t, reader, "SPLIT TABLE mk.t BY (500)")
	mustExec(t, reader, "INSERT INTO mk.t VALUES (1, 0), (1000, 0)")

	for _, tc := range []struct {
		name      string
		failpoint string
		async     int
		committed bool
	}{
		{"2PC killed after prewrite", "txn-after-prewrite", 0, false},
		{"2PC killed after primary commit", "txn-after-primary-commit", 0, true},
		{"async commit killed after prewrite", "txn-after-prewrite", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := readPair(context.Background(), reader)
			require.NoError(t, err)
			victim := restartWithFailpoint(t, c, 0, tc.failpoint)
			conn, err := victim.Conn(context.Background())
			require.NoError(t, err)
			for _, q := range []string{
				"SET tidb_enable_1pc = 0",
				"SET tidb_enable_async_commit = " + []string{"0", "1"}[tc.async],
				"BEGIN",
				"UPDATE mk.t SET v = v + 1 WHERE id = 1",
				"UPDATE mk.t SET v = v + 1 WHERE id = 1000",
			} {
				_, err := conn.ExecContext(context.Background(), q)
				require.NoError(t, err, q)
			}
			logStart := logSize(t, c.SQL[0])
			go func() { _, _ = conn.ExecContext(context.Background(), "COMMIT") }() // never answers
			waitLog(t, c.SQL[0], logStart, "failpoint "+tc.failpoint+": pausing")
			require.NoError(t, c.SQL[0].Kill())

			begin := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, err := readPair(ctx, reader)
			require.NoError(t, err, "the reader must resolve the dead transaction's locks")
			took := time.Since(begin)
			t.Logf("reader answered %v after the kill", took)
			require.Less(t, took, 20*time.Second, "locks live 3 s without heartbeats; a reader never waits much longer")
			want := before
			if tc.committed {
				want = [2]int{before[0] + 1, before[1] + 1}
			}
			require.Equal(t, want, got)
			// Writers get through too, and the rows stay consistent.
			mustExec(t, reader, "UPDATE mk.t SET v = v + 10 WHERE id IN (1, 1000)")
		})
	}
}

// readPair reads both rows in one statement (one snapshot).
func readPair(ctx context.Context, db *sql.DB) ([2]int, error) {
	var out [2]int
	rows, err := db.QueryContext(ctx, "SELECT v FROM mk.t WHERE id IN (1, 1000) ORDER BY id")
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for i := range out {
		if !rows.Next() {
			return out, fmt.Errorf("row %d missing (%v)", i, rows.Err())
		}
		if err := rows.Scan(&out[i]); err != nil {
			return out, err
		}
	}
	return out, rows.Close()
}

// restartWithFailpoint restarts SQL node i with STRATA_FAILPOINTS set to
// pause at name and returns a pool to it.
func restartWithFailpoint(t *testing.T, c *localcluster.Cluster, i int, name string) *sql.DB {
	t.Helper()
	p := c.SQL[i]
	_ = p.Kill()
	p.Env = []string{"STRATA_FAILPOINTS=" + name + "=pause"}
	require.NoError(t, p.Start())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.WaitReady(ctx, i))
	db := openDB(t, c, i, "")
	db.SetMaxOpenConns(1)
	return db
}

func logSize(t *testing.T, p *localcluster.Proc) int64 {
	t.Helper()
	fi, err := os.Stat(p.LogPath)
	require.NoError(t, err)
	return fi.Size()
}

// waitLog polls p's log after offset from until it contains s.
func waitLog(t *testing.T, p *localcluster.Proc, from int64, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(p.LogPath)
		require.NoError(t, err)
		if int64(len(data)) > from && bytes.Contains(data[from:], []byte(s)) {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s never logged %q", p.Name, s)
		time.Sleep(20 * time.Millisecond) // polling a file: no event to wait on
	}
}

// TestSQLNodeKilledMidDDL: a SQL node dies inside the commit of a schema
// change whose keys span two regions (the schema version key split off
// from the schema diffs), leaving its async-commit locks. The other SQL
// node's schema version check meets them and must resolve them as any read
// does, not fail every statement with 8027 until GC cleans up.
func TestSQLNodeKilledMidDDL(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	other := openDB(t, c, 1, "")
	mustExec(t, other, "CREATE DATABASE md")
	versionKey := codec.EncodeBytes([]byte{'m'}, []byte("SchemaVersion"))
	var region struct {
		ID       uint64 `json:"id"`
		StartKey string `json:"start_key"`
	}
	require.NoError(t, pdAPI(t, c, "GET", "region/key/"+hex.EncodeToString(versionKey)+"?format=hex", nil, &region))
	require.NoError(t, pdAPI(t, c, "POST", "operators", map[string]any{
		"name": "split-region", "region_id": region.ID, "keys": []string{hex.EncodeToString(versionKey)}}, nil))
	require.Eventually(t, func() bool {
		return pdAPI(t, c, "GET", "region/key/"+hex.EncodeToString(versionKey)+"?format=hex", nil, &region) == nil &&
			strings.EqualFold(region.StartKey, hex.EncodeToString(versionKey))
	}, time.Minute, 100*time.Millisecond, "the schema version key starts its own region")

	// The DDL owner commits the schema change: make it the victim.
	victim := restartWithFailpoint(t, c, 0, "txn-after-prewrite")
	makeDDLOwner(t, c, 0)
	other = openDB(t, c, 1, "")
	logStart := logSize(t, c.SQL[0])
	go func() { _, _ = victim.Exec("CREATE TABLE md.t (id INT PRIMARY KEY)") }() // never answers
	waitLog(t, c.SQL[0], logStart, "failpoint txn-after-prewrite: pausing")
	require.NoError(t, c.SQL[0].Kill())

	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The DDL's prewrites all succeeded: async commit made it committed.
	_, err := other.ExecContext(ctx, "INSERT INTO md.t VALUES (1)")
	require.NoError(t, err, "the other SQL node resolves the dead DDL's locks")
	t.Logf("the other node wrote to the new table %v after the kill", time.Since(begin))
}
