//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

var (
	pds      = []string{"pd1", "pd2", "pd3"}
	stores   = []string{"store1", "store2", "store3"}
	sqlNodes = []string{"sql1", "sql2"}
	all      = append(append(append([]string{}, pds...), stores...), sqlNodes...)
)

// maxOutage bounds how long SQL writes may stall when one store or the PD
// leader goes away (the acceptance criterion of the deployment issue).
const maxOutage = 10 * time.Second

// maxPartitionStall bounds the stall when the leader store is cut off the
// network without closing its connections: SQL nodes notice it by keepalive
// (kv.KeepaliveTime + 1 s) and the other stores elect a leader, so
// the same bound as a stopped store applies.
const maxPartitionStall = maxOutage

func measure(t *testing.T, what string, gap, resumed time.Duration) {
	t.Logf("MEASURE %-58s longest write gap %6.2fs; first write issued after it took effect acknowledged after %.2fs",
		what, gap.Seconds(), resumed.Seconds())
}

// upgradeFrom is the commit the cluster starts from before it is upgraded
// to this build, container by container (STRATA_UPGRADE_FROM overrides it):
// a version that landed on main. Move it forward when the compose file
// starts passing flags that version does not know.
const upgradeFrom = "40f62f7"

// TestComposeCluster builds the image of this build and of upgradeFrom,
// starts the compose cluster on the old one, upgrades it under load as
// docs/operations.md describes, and runs a SQL smoke test and fault
// scenarios against the upgraded cluster.
func TestComposeCluster(t *testing.T) {
	p := newProject(t)
	reapStale(t, p.compose, p.root)
	t.Logf("compose project %s, image %s, compose command %v", p.name, p.image, p.compose)

	start := time.Now()
	p.buildImage()
	t.Logf("MEASURE image build (make images) %.1fs", time.Since(start).Seconds())
	from := cmp.Or(os.Getenv("STRATA_UPGRADE_FROM"), upgradeFrom)
	start = time.Now()
	newImage, oldImage := p.image, p.buildImageAt(from)
	t.Logf("MEASURE image build of %s %.1fs", from, time.Since(start).Seconds())
	p.image = oldImage
	upTook := p.up(all)
	t.Logf("MEASURE compose up -d to %d healthy containers (%s) %.1fs", len(all), from, upTook.Seconds())

	db1 := openDB(t, p.sqlAddr("sql1"), "")
	db2 := openDB(t, p.sqlAddr("sql2"), "")
	t.Run("smoke", func(t *testing.T) { smoke(t, db1, db2) })
	if t.Failed() {
		return
	}
	mustExec(t, db1, "CREATE TABLE e2e.w (id BIGINT PRIMARY KEY, node VARCHAR(8))")
	waitQuery(t, db2, "SELECT COUNT(*) FROM e2e.w")

	// A rolling upgrade from the old version to this build, under load:
	// every store recreated from the new image one at a time, each
	// waited on until it applies entries again, then every PD member,
	// followers first and the leader last. Statements may fail only with
	// errors a client runs again. Then the SQL nodes, which are stateless,
	// one at a time with the load stopped (their graceful stop under load
	// is sql/server's shutdown tests').
	upgrade := startLoad(map[string]*sql.DB{"sql1": db1, "sql2": db2}, 2, 0)
	t.Cleanup(upgrade.Stop)
	upgrade.waitProgress(t, start, 50, 30*time.Second)
	p.image = newImage
	rollStart := time.Now()
	for _, s := range stores {
		p.mustDC("up", "-d", "--no-deps", "--force-recreate", s)
		p.waitHealthy(all, 2*time.Minute)
		waitApplying(t, p, upgrade, s)
	}
	pdl := pdLeader(t, p)
	for _, s := range append(slices.DeleteFunc(slices.Clone(pds), func(s string) bool { return s == pdl }), pdl) {
		p.mustDC("up", "-d", "--no-deps", "--force-recreate", s)
		p.waitHealthy(all, 2*time.Minute)
	}
	upgrade.waitProgress(t, time.Now(), 100, 60*time.Second)
	gap, _ := upgrade.outage(rollStart, rollStart, time.Now())
	measure(t, fmt.Sprintf("rolling upgrade %s -> this build, 3 stores, 3 PD (%.0fs)", from, time.Since(rollStart).Seconds()), gap, 0)
	require.Empty(t, upgrade.notRetryableSince(rollStart), "statements failed during the rolling upgrade with errors a client would not retry")
	upgrade.Stop()
	for _, s := range sqlNodes {
		p.mustDC("up", "-d", "--no-deps", "--force-recreate", s)
		p.waitHealthy(all, 2*time.Minute)
	}
	for _, s := range all {
		require.Equal(t, newImage, p.mustDocker("inspect", "-f", "{{.Config.Image}}", p.id(s)), "%s runs the new image", s)
	}
	db1 = openDB(t, p.sqlAddr("sql1"), "")
	db2 = openDB(t, p.sqlAddr("sql2"), "")
	requireAcked(t, upgrade, db1, db2)
	require.Equal(t, "zwei", waitQuery(t, db2, "SELECT v FROM e2e.t WHERE id = 2"), "rows the old version wrote")

	l := startLoad(map[string]*sql.DB{"sql1": db1, "sql2": db2}, 2, upgrade.next.Load())
	t.Cleanup(l.Stop)
	l.waitProgress(t, time.Now(), 50, 30*time.Second)

	// 1. Stop the store that leads the region (SIGTERM; it hands leadership
	// off first), keep writing, bring it back.
	leader := leaderStore(t, p, l)
	fault, exited := p.halt(leader, "stop", 30*time.Second)
	l.waitProgress(t, exited, 100, 60*time.Second)
	gap, resumed := l.outage(fault, exited, time.Now())
	measure(t, fmt.Sprintf("stop leader store %s (exited after %.1fs)", leader, exited.Sub(fault).Seconds()), gap, resumed)
	require.Less(t, gap, maxOutage, "writes stalled too long after stopping %s", leader)
	p.mustDC("start", leader)
	p.waitHealthy(all, time.Minute)
	waitApplying(t, p, l, leader)

	// 2. Cut the (new) leader store off the network while writing, then
	// reconnect it and wait until it applies new entries again.
	leader = leaderStore(t, p, l)
	id := p.id(leader)
	fault = time.Now()
	p.mustDocker("network", "disconnect", p.network, id)
	exited = time.Now()
	l.waitProgress(t, exited, 100, 60*time.Second)
	gap, resumed = l.outage(fault, exited, time.Now())
	measure(t, "network disconnect of leader store "+leader, gap, resumed)
	require.Less(t, gap, maxPartitionStall, "writes stalled too long after disconnecting %s", leader)
	// Stay partitioned while a few hundred more writes commit without it.
	l.waitProgress(t, time.Now(), 200, 60*time.Second)
	p.mustDocker("network", "connect", "--alias", leader, p.network, id)
	waitApplying(t, p, l, leader)
	p.waitHealthy(all, time.Minute)

	// 3. Stop a store other than the one that was partitioned: writes now
	// need the rejoined replica in the quorum, so they only continue if it
	// caught up.
	other := stores[0]
	if other == leader {
		other = stores[1]
	}
	fault, exited = p.halt(other, "stop", 30*time.Second)
	l.waitProgress(t, exited, 100, 60*time.Second)
	gap, resumed = l.outage(fault, exited, time.Now())
	measure(t, fmt.Sprintf("stop store %s (rejoined %s in quorum)", other, leader), gap, resumed)
	require.Less(t, gap, maxOutage)
	p.mustDC("start", other)
	p.waitHealthy(all, time.Minute)
	waitApplying(t, p, l, other)

	// 4. Stop the PD leader (SIGTERM: it resigns), then kill the next one
	// (SIGKILL) with its restart policy off, so it stays dead and the others
	// wait out its leader lease. (With the policy on, Docker restarts it at
	// once and the new incarnation clears its own stale leader key, which is
	// faster and would hide the lease wait.)
	for _, how := range []string{"stop", "kill"} {
		pdl := pdLeader(t, p)
		alsoEtcd := p.metric(pdl, "etcd_server_is_leader") == 1
		id := p.id(pdl)
		if how == "kill" {
			p.mustDocker("update", "--restart=no", id)
		}
		fault, exited = p.halt(pdl, how, 15*time.Second)
		l.waitProgress(t, exited, 100, 60*time.Second)
		gap, resumed = l.outage(fault, exited, time.Now())
		measure(t, fmt.Sprintf("%s PD leader %s (etcd leader %v, exited after %.1fs)", how, pdl, alsoEtcd, exited.Sub(fault).Seconds()), gap, resumed)
		t.Logf("PD leadership around the fault (%s):\n%s", fault.UTC().Format("15:04:05.000"), p.logLines(pds, fault.Add(-20*time.Second), "pd leader", "leadership", "shutting down"))
		require.Less(t, gap, maxOutage, "writes stalled too long after %s of PD leader %s", how, pdl)
		if how == "kill" {
			p.mustDocker("update", "--restart=unless-stopped", id)
		}
		p.mustDC("start", pdl)
		p.waitHealthy(all, time.Minute)
	}

	// Every acknowledged write is readable through both SQL nodes.
	l.Stop()
	requireAcked(t, l, db1, db2, upgrade)
}

// requireAcked checks that every write the loads acknowledged is readable
// through both SQL nodes, and that no id was written that none of them
// issued (each load's ids follow the previous one's).
func requireAcked(t *testing.T, l *load, db1, db2 *sql.DB, more ...*load) {
	t.Helper()
	acked := l.ackedIDs()
	issued := l.next.Load()
	t.Logf("load: %d writes acknowledged, %s", len(acked), l.errors())
	for _, m := range more {
		acked = append(acked, m.ackedIDs()...)
		issued = max(issued, m.next.Load())
	}
	for name, db := range map[string]*sql.DB{"sql1": db1, "sql2": db2} {
		present := map[int64]bool{}
		rows, err := db.Query("SELECT id FROM e2e.w")
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			present[id] = true
		}
		require.NoError(t, rows.Err())
		rows.Close()
		missing := 0
		for _, id := range acked {
			if !present[id] {
				missing++
			}
		}
		require.Zero(t, missing, "%s: %d acknowledged rows missing of %d", name, missing, len(acked))
		require.LessOrEqual(t, len(present), int(issued))
	}
}

// smoke: tables created through one SQL node are visible through the other.
func smoke(t *testing.T, db1, db2 *sql.DB) {
	mustExec(t, db1, "CREATE DATABASE e2e")
	mustExec(t, db1, "CREATE TABLE e2e.t (id INT PRIMARY KEY, v VARCHAR(32))")
	mustExec(t, db1, "INSERT INTO e2e.t VALUES (1, 'one'), (2, 'two')")
	require.Equal(t, "two", waitQuery(t, db2, "SELECT v FROM e2e.t WHERE id = 2"))

	mustExec(t, db2, "CREATE TABLE e2e.u (id INT PRIMARY KEY, n BIGINT)")
	mustExec(t, db2, "INSERT INTO e2e.u VALUES (7, 49)")
	require.Equal(t, "49", waitQuery(t, db1, "SELECT n FROM e2e.u WHERE id = 7"))
	mustExec(t, db1, "UPDATE e2e.t SET v = 'zwei' WHERE id = 2")
	require.Equal(t, "zwei", waitQuery(t, db2, "SELECT v FROM e2e.t WHERE id = 2"))
	require.Equal(t, "2", waitQuery(t, db2, "SELECT COUNT(*) FROM e2e.t"))
}

// mustExec runs a statement, retrying only errors that say the statement
// did nothing and may be retried (a PD leader change while the statement took
// its timestamp); each retry is logged.
func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := db.ExecContext(ctx, q)
		cancel()
		if err == nil {
			return
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !strings.Contains(me.Message, "(retryable)") || time.Now().After(deadline) {
			require.NoError(t, err, q)
		}
		t.Logf("retrying %q after a retryable error: %v", q, err)
		time.Sleep(100 * time.Millisecond)
	}
}

// waitQuery polls a one-value query until it answers (a new table may take a
// moment to reach the other SQL node's catalog) and returns the value.
func waitQuery(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var v string
		err := db.QueryRowContext(ctx, q).Scan(&v)
		cancel()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", q, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaderStore returns the store whose count of successful raft proposals
// grows while the load runs: the leader of the (single) region.
func leaderStore(t *testing.T, p *project, l *load) string {
	t.Helper()
	const series = `strata_raftstore_proposals_total{result="ok"}`
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		before := map[string]float64{}
		for _, s := range stores {
			before[s] = p.metric(s, series)
		}
		l.waitProgress(t, time.Now(), 20, 30*time.Second)
		var grew []string
		for _, s := range stores {
			if v := p.metric(s, series); before[s] >= 0 && v > before[s] {
				grew = append(grew, s)
			}
		}
		if len(grew) == 1 {
			return grew[0]
		}
	}
	t.Fatal("no single store leads the region")
	return ""
}

// waitApplying waits until store applies raft entries again (its apply
// count grows while the load runs): it is back in the group and caught up.
func waitApplying(t *testing.T, p *project, l *load, store string) {
	t.Helper()
	const series = `strata_raftstore_apply_seconds_count`
	deadline := time.Now().Add(60 * time.Second)
	base := p.metric(store, series)
	for {
		if v := p.metric(store, series); base >= 0 && v > base {
			return
		}
		if base < 0 {
			base = p.metric(store, series)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not apply new entries (apply count %v); %s", store, base, l.errors())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pdLeader returns the PD member reporting strata_pd_is_leader 1, waiting
// until exactly one does.
func pdLeader(t *testing.T, p *project) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var leaders []string
		for _, s := range pds {
			if p.metric(s, "strata_pd_is_leader") == 1 {
				leaders = append(leaders, s)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("PD leaders: %v", leaders)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
