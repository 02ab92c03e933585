package tests

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// A transaction whose commit stalls while the schema of a table it wrote
// moves on must not commit under a schema the cluster no longer uses: a
// row without its index entries (ADD INDEX), an acknowledged row under a
// truncated or dropped table's dead id. SQL node 1 commits through a
// failpoint the test holds after the schema check passed and before the
// prewrite; node 0 is the DDL owner. While the commit is held the owner
// waits two leases per step for node 1 (its running transaction keeps its
// sync row at the old version) and then goes on without it, as a dead
// node's would make it.

// stalledCommitCluster starts 2 SQL nodes, node 0 the DDL owner, node 1
// holding its commits at txn-before-prewrite while the returned file
// exists.
func stalledCommitCluster(t *testing.T) (c *localcluster.Cluster, hold string) {
	t.Helper()
	c = startCluster(t, clusterOpts{sqlNodes: 2})
	hold = filepath.Join(t.TempDir(), "hold-commit")
	c.SQL[1].Env = []string{"STRATA_FAILPOINTS=txn-before-prewrite=hold:" + hold}
	makeDDLOwner(t, c, 0) // restarts node 1 with the failpoint set
	return c, hold
}

// holdCommit arms the failpoint, sends tx's COMMIT and returns once node 1
// holds it; the commit's error arrives on the channel after release.
func holdCommit(t *testing.T, c *localcluster.Cluster, hold string, tx *sql.Tx) <-chan error {
	t.Helper()
	require.NoError(t, os.WriteFile(hold, nil, 0o644))
	t.Cleanup(func() { _ = os.Remove(hold) })
	from := logSize(t, c.SQL[1])
	done := make(chan error, 1)
	go func() { done <- tx.Commit() }()
	waitLog(t, c.SQL[1], from, "failpoint txn-before-prewrite: holding")
	return done
}

func countWhere(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(q).Scan(&n))
	return n
}

// TestCommitStalledAcrossAddIndex: T begins before ADD INDEX, inserts a
// row, and COMMITs once the index is delete-only (one compatible step: the
// schema check passes); the commit stalls until the index is public.
// Before the fix T then committed above the backfill's snapshot and its
// row had no index entry (ADMIN CHECK TABLE failed); now its commit_ts is
// past what the schema vouched for, the check at commit_ts finds four
// steps, and T fails with 8028, committing nothing.
func TestCommitStalledAcrossAddIndex(t *testing.T) {
	c, hold := stalledCommitCluster(t)
	owner, node1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, owner, "CREATE DATABASE sc")
	mustExec(t, owner, "CREATE TABLE sc.ai (id INT PRIMARY KEY, v INT)")
	mustExec(t, owner, "INSERT INTO sc.ai VALUES (1, 1), (2, 2)")

	tx, err := node1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO sc.ai VALUES (100, 100)")
	require.NoError(t, err)

	alter := make(chan error, 1)
	go func() { _, err := owner.Exec("ALTER TABLE sc.ai ADD INDEX iv (v)"); alter <- err }()
	require.Eventually(t, func() bool {
		j, ok := addIndexJob(t, owner, "ai")
		return ok && j.schema == "delete only"
	}, 30*time.Second, 10*time.Millisecond, "the ADD INDEX job reaches delete only")
	commit := holdCommit(t, c, hold, tx)
	require.NoError(t, <-alter, "ADD INDEX finishes while the commit is held")

	require.NoError(t, os.Remove(hold))
	commitErr := <-commit
	t.Logf("held COMMIT: %v", commitErr)
	_, err = owner.Exec("ADMIN CHECK TABLE sc.ai")
	require.NoError(t, err, "every row has its index entry")
	requireMySQLError(t, commitErr, 8028)
	require.Zero(t, countWhere(t, owner, "SELECT COUNT(*) FROM sc.ai WHERE id = 100"), "the refused transaction wrote nothing")
}

// TestCommitAcrossAddColumn: ADD COLUMN's states are compatible single
// steps, as an index's: T1 began before the column was added and commits
// while it is delete only (one step on): it commits, and its row reads the
// column's default. T2 began there too but its commit is held until the
// column is public (three steps): it fails with 8028, writing nothing.
func TestCommitAcrossAddColumn(t *testing.T) {
	c, hold := stalledCommitCluster(t)
	owner, node1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, owner, "CREATE DATABASE sc")
	mustExec(t, owner, "CREATE TABLE sc.ac (id INT PRIMARY KEY, v INT)")

	tx1, err := node1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx1.Exec("INSERT INTO sc.ac VALUES (1, 1)")
	require.NoError(t, err)
	tx2, err := node1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx2.Exec("INSERT INTO sc.ac VALUES (2, 2)")
	require.NoError(t, err)

	alter := make(chan error, 1)
	go func() { _, err := owner.Exec("ALTER TABLE sc.ac ADD COLUMN c INT DEFAULT 5"); alter <- err }()
	require.Eventually(t, func() bool {
		j, ok := ddlJobOf(t, owner, "add column", "ac")
		return ok && j.schema == "delete only"
	}, 30*time.Second, 10*time.Millisecond, "the ADD COLUMN job reaches delete only")
	// The job waits (two leases at most) for node 1's open transactions.
	require.NoError(t, tx1.Commit(), "one compatible step: T1 commits")
	commit := holdCommit(t, c, hold, tx2)
	require.NoError(t, <-alter, "ADD COLUMN finishes while T2's commit is held")
	require.NoError(t, os.Remove(hold))
	requireMySQLError(t, <-commit, 8028)

	var id, v, cv int
	require.NoError(t, owner.QueryRow("SELECT * FROM sc.ac").Scan(&id, &v, &cv))
	require.Equal(t, []int{1, 1, 5}, []int{id, v, cv})
	require.Equal(t, 1, countWhere(t, owner, "SELECT COUNT(*) FROM sc.ac"), "the refused transaction wrote nothing")
	mustExec(t, owner, "ADMIN CHECK TABLE sc.ac")
}

// TestCommitStalledAcrossNotNull: T inserts a NULL before MODIFY COLUMN
// ... NOT NULL begins and its commit stalls while the job refuses NULL,
// waits a version and checks the rows (T's row is not there yet, so the
// check passes). T must then fail with 8028: committed, its row would be
// a NULL in a NOT NULL column.
func TestCommitStalledAcrossNotNull(t *testing.T) {
	c, hold := stalledCommitCluster(t)
	owner, node1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, owner, "CREATE DATABASE sc")
	mustExec(t, owner, "CREATE TABLE sc.nn (id INT PRIMARY KEY, v INT)")
	mustExec(t, owner, "INSERT INTO sc.nn VALUES (1, 1)")

	tx, err := node1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO sc.nn VALUES (2, NULL)")
	require.NoError(t, err)
	commit := holdCommit(t, c, hold, tx)
	_, err = owner.Exec("ALTER TABLE sc.nn MODIFY v INT NOT NULL")
	require.NoError(t, err, "no committed row holds NULL")
	require.NoError(t, os.Remove(hold))
	requireMySQLError(t, <-commit, 8028)
	require.Zero(t, countWhere(t, owner, "SELECT COUNT(*) FROM sc.nn WHERE v IS NULL"))
	_, err = node1.Exec("INSERT INTO sc.nn VALUES (3, NULL)")
	requireMySQLError(t, err, 1048)
}

// TestCommitStalledAcrossTruncateAndDrop: T's schema check passes, its
// commit stalls, and TRUNCATE (or DROP + CREATE) of the table returns
// meanwhile. Before the fix T's COMMIT then succeeded with its row under
// the dead table id: acknowledged and gone. Now it fails with 8028.
func TestCommitStalledAcrossTruncateAndDrop(t *testing.T) {
	c, hold := stalledCommitCluster(t)
	owner, node1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, owner, "CREATE DATABASE sd")
	for _, tc := range []struct {
		name string
		ddl  []string
	}{
		{"truncate", []string{"TRUNCATE TABLE sd.t"}},
		{"drop and create", []string{"DROP TABLE sd.t", "CREATE TABLE sd.t (id INT PRIMARY KEY, v INT)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustExec(t, owner, "DROP TABLE IF EXISTS sd.t")
			mustExec(t, owner, "CREATE TABLE sd.t (id INT PRIMARY KEY, v INT)")
			tx, err := node1.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			_, err = tx.Exec("INSERT INTO sd.t VALUES (7, 7)")
			require.NoError(t, err)
			commit := holdCommit(t, c, hold, tx)
			for _, q := range tc.ddl {
				mustExec(t, owner, q)
			}
			require.NoError(t, os.Remove(hold))
			commitErr := <-commit
			t.Logf("held COMMIT: %v", commitErr)
			if commitErr == nil {
				require.Equal(t, 1, countWhere(t, owner, "SELECT COUNT(*) FROM sd.t WHERE id = 7"), "an acknowledged row is in the table")
			}
			requireMySQLError(t, commitErr, 8028)
		})
	}
}

// TestSchemaSyncIgnoresWallClocks: the DDL owner's wall clock is an hour
// ahead. It must still wait for node 1, whose running transaction keeps
// its sync row at the old version (the owner logs that it waits); the
// transaction commits across the one step and ADMIN CHECK TABLE passes.
// Before the fix the owner judged node 1's row expired by its own clock
// and published every step without waiting for it.
func TestSchemaSyncIgnoresWallClocks(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	c.SQL[0].Env = []string{"STRATA_CLOCK_SKEW=1h"}
	require.NoError(t, c.SQL[0].Kill())
	require.NoError(t, c.SQL[0].Start())
	makeDDLOwner(t, c, 0)
	owner, node1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, owner, "CREATE DATABASE sk")
	mustExec(t, owner, "CREATE TABLE sk.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, owner, "INSERT INTO sk.t VALUES (1, 1)")

	tx, err := node1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO sk.t VALUES (2, 2)")
	require.NoError(t, err)
	from := logSize(t, c.SQL[0])
	alter := make(chan error, 1)
	go func() { _, err := owner.Exec("ALTER TABLE sk.t ADD INDEX iv (v)"); alter <- err }()
	waitLog(t, c.SQL[0], from, "waiting for SQL nodes to load schema version")
	require.NoError(t, tx.Commit(), "one step since the transaction began")
	require.NoError(t, <-alter)
	mustExec(t, owner, "ADMIN CHECK TABLE sk.t")
	require.Equal(t, 1, countWhere(t, owner, "SELECT COUNT(*) FROM sk.t WHERE v = 2"))
}
