package tests

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/br"
	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/pd/pdclient"
)

// brTables are the tables TestBackupRestore backs up: an integer primary
// key with a secondary index, a table without one (hidden row ids) with a
// unique index, and an AUTO_INCREMENT key with a composite index.
var brTables = []struct{ name, ddl, cols string }{
	{"t1", "CREATE TABLE bk.t1 (id INT PRIMARY KEY, v INT, s VARCHAR(64), KEY iv (v))", "id, v, s"},
	{"t2", "CREATE TABLE bk.t2 (a INT, b VARCHAR(300), UNIQUE KEY ua (a))", "a, b"},
	{"t3", "CREATE TABLE bk.t3 (id BIGINT AUTO_INCREMENT PRIMARY KEY, g INT, s VARCHAR(32), KEY igs (g, s))", "id, g, s"},
}

// brSummary is a table's content in two ways: a SQL checksum (count and
// sum of CRC32 of every row) and the rows.
func brSummary(t *testing.T, db *sql.DB, table, cols, asOf string) (string, [][]string) {
	t.Helper()
	sum := queryRows(t, db, fmt.Sprintf("SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', %s))) FROM bk.%s%s", cols, table, asOf))
	rows := queryRows(t, db, fmt.Sprintf("SELECT %s FROM bk.%s%s ORDER BY %s", cols, table, asOf, strings.Split(cols, ",")[0]))
	return fmt.Sprint(sum), rows
}

// gcSafePoint reads PD's GC safe point.
func gcSafePoint(t *testing.T, c *localcluster.Cluster) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pd, err := pdclient.New(ctx, c.PDAddrs())
	require.NoError(t, err)
	defer pd.Close()
	sp, err := pd.GetGCSafePoint(ctx)
	require.NoError(t, err)
	return sp
}

// pausingWriter is a backup's progress writer that stops the backup at its
// first progress line until released: the test looks at the cluster while
// the backup runs.
type pausingWriter struct {
	once    sync.Once
	paused  chan struct{}
	release chan struct{}
	mu      sync.Mutex
	lines   strings.Builder
}

func (w *pausingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.paused)
		<-w.release
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines.Write(p)
}

// TestBackupRestore: a backup at a past TSO, taken while writers keep
// changing the tables, holds the GC safe point at its ts while it runs
// (GC with a one-second life time stops exactly there, and the old
// versions stay readable), and releases it at the end. Restored into a
// second, fresh cluster it has exactly the rows the source had at the
// backup ts (the rows and a SQL checksum equal SELECT ... AS OF TIMESTAMP
// on the source, CHECKSUM TABLE equals the source's under tidb_snapshot at
// the backup ts), ADMIN CHECK TABLE passes, the AUTO_INCREMENT counter
// and the row ids go on above the restored rows. A --table restore
// restores only that table; restoring a table the target already has
// fails with a clear error and changes nothing.
func TestBackupRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	src := startCluster(t, clusterOpts{sqlArgs: []string{"--gc-min-life-time", "1s"}})
	db := openDB(t, src, 0, "")
	mustExec(t, db, "CREATE DATABASE bk")
	for _, tb := range brTables {
		mustExec(t, db, tb.ddl)
	}
	const rows = 4000
	for i := 0; i < rows; i += 250 {
		var v1, v2, v3 []string
		for j := i; j < i+250; j++ {
			v1 = append(v1, fmt.Sprintf("(%d, %d, 's%d')", j, j%97, j))
			v2 = append(v2, fmt.Sprintf("(%d, '%s')", j, strings.Repeat(fmt.Sprintf("%x", j), 300/len(fmt.Sprintf("%x", j)))))
			v3 = append(v3, fmt.Sprintf("(%d, 'x%d')", j%13, j))
		}
		mustExec(t, db, "INSERT INTO bk.t1 VALUES "+strings.Join(v1, ","))
		mustExec(t, db, "INSERT INTO bk.t2 VALUES "+strings.Join(v2, ","))
		mustExec(t, db, "INSERT INTO bk.t3 (g, s) VALUES "+strings.Join(v3, ","))
	}
	var regions int
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE bk.t1 BETWEEN (0) AND (4000) REGIONS 4").Scan(&regions, &ratio))
	require.NoError(t, db.QueryRow("SPLIT TABLE bk.t3 BETWEEN (0) AND (4000) REGIONS 4").Scan(&regions, &ratio))

	// Writers keep changing every table from now until the backup ends.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := openDB(t, src, 0, "")
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := r.IntN(rows)
				qs := []string{
					fmt.Sprintf("UPDATE bk.t1 SET v = v + 1, s = 'w%d' WHERE id = %d", n, id),
					fmt.Sprintf("UPDATE bk.t2 SET b = 'w%d-%d' WHERE a = %d", w, n, id),
					fmt.Sprintf("INSERT INTO bk.t3 (g, s) VALUES (%d, 'w%d')", n%13, n),
					fmt.Sprintf("DELETE FROM bk.t1 WHERE id = %d", rows+w*100000+n-1),
					fmt.Sprintf("INSERT INTO bk.t1 VALUES (%d, 1, 'new')", rows+w*100000+n),
				}
				for _, q := range qs {
					if _, err := conn.ExecContext(ctx, q); err == nil {
						writes.Add(1)
					}
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	waitWrites := func(n int64) {
		deadline := time.Now().Add(time.Minute)
		for writes.Load() < n {
			require.True(t, time.Now().Before(deadline), "writers made no progress")
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	}
	waitWrites(50)

	// The backup ts: a moment in the past, while the writers run, at a
	// whole millisecond so AS OF TIMESTAMP reads exactly the same snapshot.
	at := time.Now().Truncate(time.Millisecond)
	backupTS := uint64(at.UnixMilli()) << 18
	asOf := " AS OF TIMESTAMP '" + at.Format("2006-01-02 15:04:05.000") + "'"
	before := writes.Load()
	waitWrites(before + 50) // versions newer than the backup ts exist

	dir := t.TempDir()
	pw := &pausingWriter{paused: make(chan struct{}), release: make(chan struct{})}
	var m *br.Manifest
	var backupErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		m, backupErr = br.Backup(ctx, br.Config{PD: src.PDAddrs(), Storage: "local://" + dir, BackupTS: backupTS,
			RateLimit: 50 << 20, Concurrency: 3, Progress: pw, GCTTL: 30 * time.Second})
	}()
	select {
	case <-pw.paused:
	case <-done:
		t.Fatalf("backup ended before its first progress line: %v", backupErr)
	}
	// The backup runs (paused; its service safe point registered): with a
	// one-second life time, run every second, GC advances to the backup ts and no
	// further, and the snapshot at the backup ts stays readable.
	mustExec(t, db, "SET GLOBAL tidb_gc_life_time = '1s'")
	mustExec(t, db, "SET GLOBAL tidb_gc_run_interval = '1s'")
	deadline := time.Now().Add(2 * time.Minute)
	for gcSafePoint(t, src) < backupTS {
		require.True(t, time.Now().Before(deadline), "GC did not reach the backup ts (safe point %d, backup ts %d)", gcSafePoint(t, src), backupTS)
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	want := map[string][2]any{}
	for _, tb := range brTables {
		sum, rows := brSummary(t, db, tb.name, tb.cols, asOf)
		want[tb.name] = [2]any{sum, rows}
	}
	// CHECKSUM TABLE at the backup ts: one connection with tidb_snapshot
	// set (TiDB's history read), where writes are refused.
	snap := openDB(t, src, 0, "")
	snap.SetMaxOpenConns(1)
	mustExec(t, snap, fmt.Sprintf("SET @@tidb_snapshot = '%d'", backupTS))
	const checksumAll = "CHECKSUM TABLE bk.t1, bk.t2, bk.t3"
	wantChecksums := queryRows(t, snap, checksumAll)
	_, err := snap.Exec("UPDATE bk.t1 SET v = 0 WHERE id = 1")
	require.Equal(t, uint16(1105), errCode(err), "a write under tidb_snapshot: %v", err)
	require.Contains(t, err.Error(), "tidb_snapshot")
	mustExec(t, snap, "SET @@tidb_snapshot = ''")
	require.NotEqual(t, wantChecksums, queryRows(t, snap, checksumAll), "the writers changed the tables since the backup ts")
	require.Equal(t, backupTS, gcSafePoint(t, src), "GC held at the backup ts while the backup runs")
	close(pw.release)
	<-done
	require.NoError(t, backupErr)
	close(stop)
	wg.Wait()
	require.Equal(t, backupTS, m.BackupTS)
	require.NotEmpty(t, m.Files)
	require.Greater(t, len(m.Files), 3, "files per region, several regions per table")
	require.Contains(t, pw.lines.String(), "Backup [")
	// Released: GC goes past the backup ts, and reads at it are refused.
	deadline = time.Now().Add(2 * time.Minute)
	for gcSafePoint(t, src) <= backupTS {
		require.True(t, time.Now().Before(deadline), "GC still held after the backup ended")
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	// The stores learn the new safe point within their poll interval.
	for {
		_, err = db.Exec("SELECT COUNT(*) FROM bk.t1" + asOf)
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	require.Equal(t, uint16(9006), errCode(err), "the backup's snapshot is below the GC safe point now: %v", err)

	// Restore into a fresh cluster: first one table only.
	dst := startCluster(t, clusterOpts{})
	ddb := openDB(t, dst, 0, "")
	res, err := br.Restore(ctx, br.Config{PD: dst.PDAddrs(), Storage: "local://" + dir, Filter: br.Filter{DB: "bk", Table: "t2"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Tables)
	waitTables(t, ddb, "t2")
	require.Equal(t, [][]string{{"t2"}}, queryRows(t, ddb, "SHOW TABLES FROM bk"), "--table restores only that table")

	// A table the target has is refused, and nothing else is restored.
	_, err = br.Restore(ctx, br.Config{PD: dst.PDAddrs(), Storage: "local://" + dir})
	require.ErrorIs(t, err, br.ErrTargetNotEmpty)
	require.ErrorContains(t, err, "bk.t2 already exists")
	require.Equal(t, [][]string{{"t2"}}, queryRows(t, ddb, "SHOW TABLES FROM bk"))

	for _, tb := range []string{"t1", "t3"} {
		_, err := br.Restore(ctx, br.Config{PD: dst.PDAddrs(), Storage: "local://" + dir, Filter: br.Filter{Table: tb}})
		require.NoError(t, err)
	}
	waitTables(t, ddb, "t1", "t2", "t3")
	for _, tb := range brTables {
		sum, rows := brSummary(t, ddb, tb.name, tb.cols, "")
		require.Equal(t, want[tb.name][0], sum, "%s: checksum restored vs source AS OF the backup ts", tb.name)
		require.Equal(t, want[tb.name][1], rows, "%s: rows restored vs source AS OF the backup ts", tb.name)
		mustExec(t, ddb, "ADMIN CHECK TABLE bk."+tb.name)
	}
	require.Equal(t, wantChecksums, queryRows(t, ddb, checksumAll), "CHECKSUM TABLE restored vs source at the backup ts")
	// New rows get ids above the restored ones.
	var maxID, newID int64
	require.NoError(t, ddb.QueryRow("SELECT MAX(id) FROM bk.t3").Scan(&maxID))
	mustExec(t, ddb, "INSERT INTO bk.t3 (g, s) VALUES (1, 'after restore')")
	require.NoError(t, ddb.QueryRow("SELECT id FROM bk.t3 WHERE s = 'after restore'").Scan(&newID))
	require.Greater(t, newID, maxID)
	mustExec(t, ddb, "INSERT INTO bk.t2 VALUES (-1, 'after restore'), (-2, 'after restore')")
	mustExec(t, ddb, "ADMIN CHECK TABLE bk.t2")
	var n int
	require.NoError(t, ddb.QueryRow("SELECT COUNT(*) FROM bk.t2 WHERE b = 'after restore'").Scan(&n))
	require.Equal(t, 2, n, "new hidden row ids do not overwrite restored rows")
}

// waitTables waits until the SQL node sees database bk's tables (a
// restore's schema change is loaded within a schema lease).
func waitTables(t *testing.T, db *sql.DB, names ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, n := range names {
			if _, err := db.Exec("SELECT 1 FROM bk." + n + " LIMIT 1"); err != nil {
				ok = false
			}
		}
		if ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "restored tables %v not visible", names)
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}
