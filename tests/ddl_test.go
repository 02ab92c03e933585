package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// ddlOwner returns ADMIN SHOW DDL's OWNER_ID and SELF_ID on db's node.
func ddlOwner(ctx context.Context, db *sql.DB) (owner, self string, err error) {
	rows, err := db.QueryContext(ctx, "ADMIN SHOW DDL")
	if err != nil {
		return "", "", err
	}
	defer rows.Close()
	if !rows.Next() {
		return "", "", fmt.Errorf("ADMIN SHOW DDL: no row (%v)", rows.Err())
	}
	var ver int64
	var addr, running, query string
	if err := rows.Scan(&ver, &owner, &addr, &running, &self, &query); err != nil {
		return "", "", err
	}
	return owner, self, rows.Close()
}

// makeDDLOwner makes SQL node i the DDL owner: every other SQL node stops
// gracefully (giving the lease up), node i takes the lease (after the TTL
// when a killed node held it), and the others start again.
func makeDDLOwner(t *testing.T, c *localcluster.Cluster, i int) {
	t.Helper()
	for k, p := range c.SQL {
		if k != i {
			require.NoError(t, p.Stop(10*time.Second))
		}
	}
	db := openDB(t, c, i, "")
	require.Eventually(t, func() bool {
		owner, self, err := ddlOwner(context.Background(), db)
		return err == nil && owner == self
	}, 60*time.Second, 100*time.Millisecond, "SQL node %d becomes the DDL owner", i)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for k, p := range c.SQL {
		if k != i {
			require.NoError(t, p.Start())
			require.NoError(t, c.WaitReady(ctx, k))
		}
	}
}

// ddlJob is a row of ADMIN SHOW DDL JOBS.
type ddlJob struct {
	id                      int64
	db, table, typ, schema  string
	schemaID, tableID, rows int64
	state                   string
	created, ended          bool // CREATE_TIME, END_TIME are set
}

func ddlJobs(ctx context.Context, db *sql.DB) ([]ddlJob, error) {
	rows, err := db.QueryContext(ctx, "ADMIN SHOW DDL JOBS 20")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ddlJob
	for rows.Next() {
		var j ddlJob
		var created, started, ended sql.NullString
		if err := rows.Scan(&j.id, &j.db, &j.table, &j.typ, &j.schema, &j.schemaID, &j.tableID, &j.rows, &created, &started, &ended, &j.state); err != nil {
			return nil, err
		}
		j.created, j.ended = created.Valid, ended.Valid
		out = append(out, j)
	}
	return out, rows.Err()
}

// addIndexJob finds the newest ADD INDEX job of table.
func addIndexJob(t *testing.T, db *sql.DB, table string) (ddlJob, bool) {
	t.Helper()
	return ddlJobOf(t, db, "add index", table)
}

// ddlJobOf finds the newest job of type typ (JOB_TYPE) on table.
func ddlJobOf(t *testing.T, db *sql.DB, typ, table string) (ddlJob, bool) {
	t.Helper()
	jobs, err := ddlJobs(context.Background(), db)
	if err != nil {
		t.Logf("ADMIN SHOW DDL JOBS: %v", err)
		return ddlJob{}, false
	}
	for _, j := range jobs {
		if j.typ == typ && j.table == table {
			return j, true
		}
	}
	return ddlJob{}, false
}

// alterPausedInBackfill runs alter on victim, a connection to SQL node 0
// (the DDL owner, restarted with the ddl-backfill-batch failpoint), and
// returns once its backfill paused after its first batch; the channel
// gets the ALTER's outcome.
func alterPausedInBackfill(t *testing.T, c *localcluster.Cluster, victim *sql.DB, alter string) <-chan error {
	t.Helper()
	conn, err := victim.Conn(context.Background())
	require.NoError(t, err)
	logStart := logSize(t, c.SQL[0])
	alterErr := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(context.Background(), alter)
		alterErr <- err
	}()
	waitLog(t, c.SQL[0], logStart, "failpoint ddl-backfill-batch: pausing")
	return alterErr
}

// requireConnLost: the client of an ALTER whose SQL node was killed gets
// a connection error within 30 s, not a server answer.
func requireConnLost(t *testing.T, alterErr <-chan error) {
	t.Helper()
	select {
	case err := <-alterErr:
		require.Error(t, err, "the ALTER's node died: its client must not get an OK")
		var me *mysql.MySQLError
		require.False(t, errors.As(err, &me), "a connection error, not a server answer: %v", err)
		t.Logf("the ALTER's client got: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the ALTER's client got nothing after its node was killed")
	}
}

// TestSQLNodeKilledDuringBackfill: the DDL owner is killed -9 in the middle
// of an ADD INDEX backfill (a failpoint holds it after its first batch).
// The other SQL node takes the owner lease over, resumes the backfill from
// the persisted checkpoint (ROW_COUNT ends at exactly the table's rows:
// no batch ran twice), and publishes the index: ADMIN CHECK TABLE passes
// and the planner uses it. The client of the ALTER on the killed node gets
// a connection error, not an answer.
func TestSQLNodeKilledDuringBackfill(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	setup := openDB(t, c, 1, "")
	mustExec(t, setup, "CREATE DATABASE kb")
	mustExec(t, setup, "CREATE TABLE kb.t (id INT PRIMARY KEY, c INT NOT NULL, pad VARCHAR(20))")
	const rows = 2000 // several backfill batches of 256
	for lo := 0; lo < rows; lo += 500 {
		var vals []string
		for id := lo; id < lo+500; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'p%d')", id, id%97, id))
		}
		mustExec(t, setup, "INSERT INTO kb.t VALUES "+strings.Join(vals, ","))
	}

	victim := restartWithFailpoint(t, c, 0, "ddl-backfill-batch")
	makeDDLOwner(t, c, 0)
	other := openDB(t, c, 1, "")

	alterErr := alterPausedInBackfill(t, c, victim, "ALTER TABLE kb.t ADD INDEX c_idx (c)")
	job, ok := addIndexJob(t, other, "t")
	require.True(t, ok, "the job is listed on the other node")
	t.Logf("paused: %+v", job)
	require.Equal(t, "write reorganization", job.schema)
	require.Equal(t, "running", job.state)
	require.Greater(t, job.rows, int64(0), "a batch committed before the pause")
	require.Less(t, job.rows, int64(rows))
	// DML on the write-only index while the owner hangs.
	for id := 0; id < rows; id += 37 {
		mustExec(t, other, fmt.Sprintf("UPDATE kb.t SET c = c + 1000 WHERE id = %d", id))
	}
	require.NoError(t, c.SQL[0].Kill())
	killed := time.Now()
	requireConnLost(t, alterErr)

	require.Eventually(t, func() bool {
		j, ok := addIndexJob(t, other, "t")
		job = j
		return ok && j.state == "synced"
	}, 120*time.Second, 200*time.Millisecond, "the other node finishes the job")
	t.Logf("the other node finished the job %v after the kill: %+v", time.Since(killed), job)
	require.Equal(t, "public", job.schema)
	require.True(t, job.created && job.ended, "CREATE_TIME and END_TIME are set")
	require.Equal(t, int64(rows), job.rows, "the backfill resumed from its checkpoint: every row indexed once")
	owner, self, err := ddlOwner(context.Background(), other)
	require.NoError(t, err)
	require.Equal(t, self, owner, "the surviving node is the owner")

	mustExec(t, other, "ADMIN CHECK TABLE kb.t")
	plan := queryRows(t, other, "EXPLAIN SELECT id FROM kb.t WHERE c = 1005")
	require.Contains(t, fmt.Sprint(plan), "c_idx", "the planner uses the new index")
	got := queryRows(t, other, "SELECT id FROM kb.t WHERE c = 1005 ORDER BY id")
	want := queryRows(t, other, "SELECT id FROM kb.t IGNORE INDEX (c_idx) WHERE c = 1005 ORDER BY id")
	require.Equal(t, want, got)
	require.NotEmpty(t, got)
	// The index is maintained from now on.
	mustExec(t, other, "INSERT INTO kb.t VALUES (100000, 5, 'new')")
	n := queryRows(t, other, "SELECT COUNT(*) FROM kb.t WHERE c = 5")
	count, err := strconv.Atoi(n[0][0])
	require.NoError(t, err)
	require.Greater(t, count, 1)
	mustExec(t, other, "ADMIN CHECK TABLE kb.t")
}

// TestDDLJobsAndCancel: ADMIN SHOW DDL JOBS lists jobs with TiDB's
// columns; ADMIN CANCEL DDL JOBS rolls a running ADD INDEX back (its
// client, on another node than the owner, gets ERROR 8214; the table is
// left without the index) and answers 8225 / 8224 for ended and unknown
// jobs.
func TestDDLJobsAndCancel(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	db := openDB(t, c, 1, "")
	mustExec(t, db, "CREATE DATABASE kc")
	mustExec(t, db, "CREATE TABLE kc.t (id INT PRIMARY KEY, c INT)")
	var vals []string
	for id := range 600 {
		vals = append(vals, fmt.Sprintf("(%d, %d)", id, id%7))
	}
	mustExec(t, db, "INSERT INTO kc.t VALUES "+strings.Join(vals, ","))
	jobs, err := ddlJobs(context.Background(), db)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(jobs), 2)
	require.Equal(t, "create table", jobs[0].typ)
	require.Equal(t, "synced", jobs[0].state)
	require.Equal(t, "kc", jobs[0].db)

	// The owner (node 0) pauses in the backfill of an ALTER issued on node
	// 1; node 1 cancels the job.
	restartWithFailpoint(t, c, 0, "ddl-backfill-batch")
	makeDDLOwner(t, c, 0)
	db = openDB(t, c, 1, "")
	logStart := logSize(t, c.SQL[0])
	alterErr := make(chan error, 1)
	go func() {
		_, err := db.Exec("ALTER TABLE kc.t ADD INDEX c_idx (c)")
		alterErr <- err
	}()
	waitLog(t, c.SQL[0], logStart, "failpoint ddl-backfill-batch: pausing")
	job, ok := addIndexJob(t, db, "t")
	require.True(t, ok)
	res := queryRows(t, db, fmt.Sprintf("ADMIN CANCEL DDL JOBS %d, 999999999", job.id))
	require.Equal(t, [][]string{{strconv.FormatInt(job.id, 10), "successful"}, {"999999999", "error: [8224]DDL Job:999999999 not found"}}, res)
	// The paused owner never comes back; the other node takes over and
	// rolls back.
	require.NoError(t, c.SQL[0].Kill())
	require.Eventually(t, func() bool {
		j, ok := addIndexJob(t, db, "t")
		job = j
		return ok && j.state == "rollback done"
	}, 120*time.Second, 200*time.Millisecond, "the cancelled job is rolled back")
	err = <-alterErr
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me)
	require.Equal(t, uint16(8214), me.Number, "the ALTER's session learns its job was cancelled: %v", err)
	res = queryRows(t, db, fmt.Sprintf("ADMIN CANCEL DDL JOBS %d", job.id))
	require.Equal(t, fmt.Sprintf("error: [8225]This job:%d is finished, so can't be cancelled", job.id), res[0][1])
	for _, r := range queryRows(t, db, "SHOW INDEX FROM kc.t") {
		require.NotEqual(t, "c_idx", r[2], "the index is gone")
	}
	mustExec(t, db, "ADMIN CHECK TABLE kc.t")

	// The index can be added again (under a new index id).
	require.NoError(t, c.SQL[0].Start())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.WaitReady(ctx, 0))
	mustExec(t, db, "ALTER TABLE kc.t ADD INDEX c_idx (c)")
	mustExec(t, db, "ADMIN CHECK TABLE kc.t")
	plan := queryRows(t, db, "EXPLAIN SELECT id FROM kc.t WHERE c = 3")
	require.Contains(t, fmt.Sprint(plan), "c_idx")
}
