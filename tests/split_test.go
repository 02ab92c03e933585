package tests

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
)

// tableRegion is one row of SHOW TABLE ... REGIONS.
type tableRegion struct {
	id, leaderID, leaderStore int64
	start, end, peers         string
	keys                      int64
}

func showRegions(t *testing.T, db *sql.DB, q string) []tableRegion {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.Equal(t, []string{"REGION_ID", "START_KEY", "END_KEY", "LEADER_ID", "LEADER_STORE_ID", "PEERS", "SCATTERING",
		"WRITTEN_BYTES", "READ_BYTES", "APPROXIMATE_SIZE(MB)", "APPROXIMATE_KEYS"}, cols)
	var out []tableRegion
	for rows.Next() {
		var r tableRegion
		var scattering, written, read, size int64
		require.NoError(t, rows.Scan(&r.id, &r.start, &r.end, &r.leaderID, &r.leaderStore, &r.peers, &scattering, &written, &read, &size, &r.keys))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// waitTableRegions waits until SHOW TABLE table REGIONS lists at least min
// regions, each with a leader that reported to PD, and returns them.
func waitTableRegions(t *testing.T, db *sql.DB, table string, min int) []tableRegion {
	t.Helper()
	var regions []tableRegion
	require.Eventually(t, func() bool {
		regions = showRegions(t, db, "SHOW TABLE "+table+" REGIONS")
		for _, r := range regions {
			if r.leaderID == 0 || r.leaderStore == 0 {
				return false // a new region's leader has not reported yet
			}
		}
		return len(regions) >= min
	}, 20*time.Second, 50*time.Millisecond, "SHOW TABLE %s REGIONS: %v", table, regions)
	return regions
}

// writeFor runs writers autocommit INSERTs of fresh ids for d and returns
// how many succeeded. The k-th id (k from next) is k*997 mod span: spread
// over [0, span), distinct for k < span; ids = 500 mod 1000 are left out.
func writeFor(t *testing.T, db *sql.DB, table string, writers int, next *atomic.Int64, span int64, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				id := next.Add(1) * 997 % span
				if id%1000 == 500 {
					continue
				}
				_, err := db.Exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, id, w))
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("insert %d: %w", id, err)
					return
				}
				if err == nil {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return n.Load()
}

// TestSplitTable32: SPLIT TABLE cuts a table into 32 regions through real
// binaries; SHOW TABLE REGIONS lists them with leaders; writes spread over
// all of them land (every row is read back), and a second SPLIT of the
// same ranges creates nothing. Throughput of the same write load before
// and after the split is logged.
func TestSplitTable32(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	db.SetMaxOpenConns(16)
	mustExec(t, db, "CREATE DATABASE sp")
	mustExec(t, db, "CREATE TABLE sp.t (id BIGINT PRIMARY KEY, v BIGINT)")
	const writers, span, phase = 8, 32000, 3 * time.Second
	var next atomic.Int64
	before := writeFor(t, db, "sp.t", writers, &next, span, phase)

	start := time.Now()
	var total int64
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE sp.t BETWEEN (0) AND (32000) REGIONS 32").Scan(&total, &ratio))
	took := time.Since(start)
	require.Equal(t, int64(32), total)
	require.Equal(t, 1.0, ratio)

	regions := waitTableRegions(t, db, "sp.t", 32)
	ids := map[int64]bool{}
	var rowStarts int
	for _, r := range regions {
		ids[r.id] = true
		require.Len(t, strings.Split(r.peers, ", "), 3, "region %d peers %q", r.id, r.peers)
		if strings.Contains(r.start, "_r_") {
			rowStarts++
		}
	}
	require.Len(t, ids, len(regions), "distinct region ids")
	require.GreaterOrEqual(t, rowStarts, 32, "regions starting at the split handles: %v", regions)
	require.Contains(t, regions[len(regions)-1].start, "_r_31000")

	after := writeFor(t, db, "sp.t", writers, &next, span, phase)
	require.Less(t, next.Load(), int64(span), "ids stayed distinct")
	t.Logf("SPLIT TABLE ... REGIONS 32 took %v; %d writers of autocommit INSERTs spread over %d ids: %d writes in %v before the split (1 region), %d after (32 regions)",
		took, writers, span, before, phase, after)

	// Every handle written in one statement per region, then read back.
	for i := range 32 {
		mustExec(t, db, fmt.Sprintf("INSERT INTO sp.t VALUES (%d, -1)", i*1000+500))
	}
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sp.t WHERE v = -1").Scan(&n))
	require.Equal(t, 32, n)
	// A multi-region transaction across all 32 regions commits atomically.
	mustExec(t, db, "UPDATE sp.t SET v = -2 WHERE v = -1")
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sp.t WHERE v = -2").Scan(&n))
	require.Equal(t, 32, n)

	require.NoError(t, db.QueryRow("SPLIT TABLE sp.t BETWEEN (0) AND (32000) REGIONS 32").Scan(&total, &ratio))
	require.Equal(t, int64(0), total, "every boundary exists already")

	var rows int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sp.t").Scan(&rows))
	require.Equal(t, int(before+after)+32, rows, "every acknowledged insert is there")

	_, err := db.Exec("SPLIT TABLE sp.t BETWEEN (10) AND (5) REGIONS 4")
	requireMySQLError(t, err, 8212)
	_, err = db.Exec("SPLIT TABLE sp.t BETWEEN (0) AND (100) REGIONS 4")
	requireMySQLError(t, err, 8212) // step below 1000
	_, err = db.Exec("SPLIT TABLE sp.t INDEX nope BY (1)")
	requireMySQLError(t, err, 1176)
}

// TestSplitTableIndex: SPLIT TABLE ... INDEX and SHOW TABLE ... INDEX
// REGIONS; the index stays readable and consistent with its table.
func TestSplitTableIndex(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE spi")
	mustExec(t, db, "CREATE TABLE spi.t (id INT PRIMARY KEY, k INT, KEY ik (k))")
	for i := range 40 {
		mustExec(t, db, fmt.Sprintf("INSERT INTO spi.t VALUES (%d, %d)", i, i*10))
	}
	var total int64
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE spi.t INDEX ik BY (100), (200), (300)").Scan(&total, &ratio))
	require.Equal(t, int64(5), total, "index start, end, and 3 values")
	regions := showRegions(t, db, "SHOW TABLE spi.t INDEX ik REGIONS")
	require.Len(t, regions, 4, "%v", regions)
	require.NoError(t, db.QueryRow("SPLIT TABLE spi.t BY (20)").Scan(&total, &ratio))
	require.Equal(t, int64(2), total, "record prefix and handle 20")
	require.GreaterOrEqual(t, len(showRegions(t, db, "SHOW TABLE spi.t REGIONS")), 7)
	mustExec(t, db, "UPDATE spi.t SET k = k + 1")
	mustExec(t, db, "ADMIN CHECK TABLE spi.t")
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM spi.t WHERE k > 150").Scan(&n))
	require.Equal(t, 25, n)
}

// TestSplitTableKillLeader (issue 7 acceptance, real binaries): a table
// split into 32 regions takes inserts spread over all of them from 8
// writers; the store leading the most of them is killed -9 mid-load and
// restarted. Writes resume within 10 s of the kill, and afterwards every
// acknowledged row is there and no row is there that was not written
// (acknowledged, or answered 8110 "undetermined"). Raft log GC is
// aggressive (a follower 10 entries behind does not hold it back), so
// regions written while the store was down compact their logs past it and
// the restarted store catches up by snapshot (its snapshots-applied metric);
// then the consistency check finds equal hashes on every replica of every
// region.
func TestSplitTableKillLeader(t *testing.T) {
	c := startCluster(t, clusterOpts{storeArgs: []string{
		"--raft-log-gc-interval", "100ms", "--raft-log-gc-threshold", "10", "--raft-log-gc-lag-limit", "10"}})
	db := openDB(t, c, 0, "")
	db.SetMaxOpenConns(16)
	mustExec(t, db, "CREATE DATABASE spk")
	mustExec(t, db, "CREATE TABLE spk.t (id BIGINT PRIMARY KEY, v BIGINT)")
	var total int64
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE spk.t BETWEEN (0) AND (32000) REGIONS 32").Scan(&total, &ratio))
	require.Equal(t, int64(32), total)
	regions := waitTableRegions(t, db, "spk.t", 32)
	pdCtx, pdCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pdCancel()
	pd, err := pdclient.New(pdCtx, c.PDAddrs())
	require.NoError(t, err)
	defer pd.Close()
	victim := busiestStore(t, c, pd, regions)

	l := startInserts(db, "spk.t", 8)
	defer l.cancel()
	require.Eventually(t, func() bool { return l.count() >= 50 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, victim.Kill())
	killed, atKill := time.Now(), l.count()
	require.Eventually(t, func() bool { return l.count() >= atKill+50 }, 10*time.Second, 10*time.Millisecond,
		"writes did not resume within 10 s of the kill")
	resumed := time.Since(killed)
	// Enough writes while it is down (about 20 per region) that the
	// regions' logs are compacted past it.
	require.Eventually(t, func() bool { return l.count() >= atKill+640 }, 60*time.Second, 10*time.Millisecond)
	require.NoError(t, victim.Start())
	atRestart := l.count()
	require.Eventually(t, func() bool { return l.count() >= atRestart+50 }, 30*time.Second, 10*time.Millisecond)
	snapsApplied := `strata_raftstore_snapshots_total{event="applied"}`
	require.Eventually(t, func() bool { return metric(t, victim, snapsApplied) >= 1 }, 60*time.Second, 50*time.Millisecond,
		"the restarted store installed no snapshot: log GC did not compact past it")
	l.stop(t)
	l.check(t, db)
	checked := checkConsistency(t, c)
	require.GreaterOrEqual(t, checked, len(regions))
	t.Logf("killed -9 %s (leading the most of %d regions) after %d inserts; %d more acknowledged %v after the kill; longest gap between acknowledged inserts %v; %d inserts acknowledged in all, %d undetermined, retryable errors %v; after restart it applied %.0f snapshots; consistency check: %d regions, equal hashes on all replicas",
		victim.Name, len(regions), atKill, 50, resumed.Round(time.Millisecond), l.maxGap.Round(time.Millisecond), len(l.acked), len(l.undetermined), l.retried,
		metric(t, victim, snapsApplied), checked)
}

// insertLoad is writers autocommit INSERTs of distinct ids spread over
// [0, 32000) (the k-th id is k*997 mod 32000) into table, recording which
// were acknowledged, which undetermined (8110), and which failed with an
// error that says nothing was written (9002, 9005); any other error stops
// the load.
type insertLoad struct {
	table        string
	cancel       context.CancelFunc
	errs         chan error
	writers      int
	mu           sync.Mutex
	acked        map[int64]bool
	undetermined map[int64]bool
	retried      map[uint16]int
	lastOK       time.Time
	maxGap       time.Duration
	next         atomic.Int64
}

const insertSpan = 32000

func startInserts(db *sql.DB, table string, writers int) *insertLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &insertLoad{table: table, cancel: cancel, errs: make(chan error, writers), writers: writers,
		acked: map[int64]bool{}, undetermined: map[int64]bool{}, retried: map[uint16]int{}}
	for w := range writers {
		go func() { l.errs <- l.run(ctx, db, w) }()
	}
	return l
}

func (l *insertLoad) run(ctx context.Context, db *sql.DB, w int) error {
	for ctx.Err() == nil {
		id := l.next.Add(1) * 997 % insertSpan
		_, err := db.Exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", l.table, id, w))
		code := mysqlErrCode(err)
		l.mu.Lock()
		switch {
		case err == nil:
			l.acked[id] = true
			now := time.Now()
			if !l.lastOK.IsZero() && now.Sub(l.lastOK) > l.maxGap {
				l.maxGap = now.Sub(l.lastOK)
			}
			l.lastOK = now
		case code == 8110:
			l.undetermined[id] = true
		case code == 9002 || code == 9005:
			l.retried[code]++
		default:
			l.mu.Unlock()
			return fmt.Errorf("insert %d: %w", id, err)
		}
		l.mu.Unlock()
	}
	return nil
}

func (l *insertLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// stop ends the load and fails t if a writer met an unexpected error.
func (l *insertLoad) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	for range l.writers {
		require.NoError(t, <-l.errs)
	}
	require.Less(t, l.next.Load(), int64(insertSpan), "ids stayed distinct")
}

// check reads the table back: every acknowledged row is there, and every
// row there was acknowledged or undetermined.
func (l *insertLoad) check(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query("SELECT id FROM " + l.table)
	require.NoError(t, err)
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		have[id] = true
	}
	require.NoError(t, rows.Err())
	for id := range l.acked {
		require.True(t, have[id], "acknowledged insert %d lost", id)
	}
	for id := range have {
		require.True(t, l.acked[id] || l.undetermined[id], "row %d was never written", id)
	}
}

// TestSplitUnderLoad: SPLIT TABLE while 8 writers insert over the whole
// range: writes that were proposed to a region before it split get
// EpochNotMatch and are resent to the new regions by the client, so no
// writer sees an error, and every acknowledged row is there.
func TestSplitUnderLoad(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	db.SetMaxOpenConns(16)
	mustExec(t, db, "CREATE DATABASE spl")
	mustExec(t, db, "CREATE TABLE spl.t (id BIGINT PRIMARY KEY, v BIGINT)")
	l := startInserts(db, "spl.t", 8)
	defer l.cancel()
	require.Eventually(t, func() bool { return l.count() >= 50 }, 30*time.Second, 10*time.Millisecond)
	var total int64
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE spl.t BETWEEN (0) AND (32000) REGIONS 8").Scan(&total, &ratio))
	require.Equal(t, int64(8), total)
	at := l.count()
	require.Eventually(t, func() bool { return l.count() >= at+50 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, db.QueryRow("SPLIT TABLE spl.t BETWEEN (0) AND (32000) REGIONS 32").Scan(&total, &ratio))
	require.Equal(t, int64(24), total, "32 regions, 8 of whose boundaries exist")
	at = l.count()
	require.Eventually(t, func() bool { return l.count() >= at+50 }, 30*time.Second, 10*time.Millisecond)
	l.stop(t)
	require.Empty(t, l.undetermined)
	require.Empty(t, l.retried, "a split is invisible to clients")
	l.check(t, db)
	t.Logf("%d inserts acknowledged across two SPLIT TABLEs (1 -> 9 -> 33 regions); longest gap between acknowledged inserts %v",
		len(l.acked), l.maxGap.Round(time.Millisecond))
}
