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
)

// colRow is what a writer of TestColumnDDLUnderWrites knows of one of its
// rows.
type colRow struct {
	exists bool
	v, c   int
}

// colLog is a writer's statements on one row, for a failure's message.
type colLog map[int][]string

// TestColumnDDLUnderWrites: a populated table gets a column (ADD COLUMN c
// INT DEFAULT 7) and loses one with its index (DROP COLUMN x) while four
// writers, each statement on a random one of two SQL nodes, insert,
// delete and update their own rows, setting the new column as soon as
// the node they use shows it. A row a node one schema version behind
// updates must keep the value another node wrote to the column it does
// not show yet, and a row it inserts must read as the default. Each
// writer owns the ids equal to its number modulo 4, so it knows every
// value its rows must have: afterwards ADMIN CHECK TABLE passes and every
// row reads back, on both nodes, exactly as its writer left it.
func TestColumnDDLUnderWrites(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	admin := openDB(t, c, 0, "")
	mustExec(t, admin, "CREATE DATABASE cd")
	mustExec(t, admin, "CREATE TABLE cd.t (id INT PRIMARY KEY, v INT NOT NULL, x INT, pad VARCHAR(20), KEY kx (x))")
	const rows, writers = 600, 4
	insertRows(t, admin, "cd.t", rows, func(i int) string { return fmt.Sprintf("(%d, %d, %d, 'p%d')", i, i, i, i) })
	logs := make([]colLog, writers)
	models := make([]map[int]*colRow, writers)
	for w := range models {
		models[w], logs[w] = map[int]*colRow{}, colLog{}
		for id := w; id < 2*rows; id += writers {
			models[w][id] = &colRow{exists: id < rows, v: id, c: 7}
		}
	}
	dbs := []*sql.DB{openDB(t, c, 0, "cd"), openDB(t, c, 1, "cd")}

	// Writers stop at a flag, not by a cancelled context: a statement
	// cancelled in flight may have committed, and its writer would not
	// know its row.
	ctx := context.Background()
	var stop atomic.Bool
	defer stop.Store(true)
	var wg sync.WaitGroup
	var ok, setC atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 11))
			m := models[w]
			for n := 0; !stop.Load(); n++ {
				id := w + writers*r.IntN(2*rows/writers)
				row := m[id]
				val := r.IntN(1 << 20)
				var q string
				op := r.IntN(7)
				switch {
				case op == 6: // a range read pushed to the stores, with the schema's non-public columns
					q = fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id >= %d AND id < %d AND id %% %d = %d", id, id+4*writers, writers, w)
				case op == 0 && !row.exists:
					q = fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, %d)", id, val)
				case op == 0, op == 1:
					q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				case op == 2:
					q = fmt.Sprintf("UPDATE t SET c = %d WHERE id = %d", val, id)
				case op == 3:
					q = fmt.Sprintf("UPDATE t SET x = %d WHERE id = %d", val, id)
				default:
					q = fmt.Sprintf("UPDATE t SET v = %d, pad = 'w%d' WHERE id = %d", val, n, id)
				}
				node := r.IntN(2)
				res, err := dbs[node].ExecContext(ctx, q)
				logs[w][id] = append(logs[w][id], fmt.Sprintf("node %d: %s: %v", node, q, err))
				switch code := mysqlErrCode(err); {
				case err == nil:
					ok.Add(1)
					switch {
					case op == 6:
						var want int64
						for k := id; k < id+4*writers; k += writers {
							if rk := m[k]; rk != nil && rk.exists {
								rk.v++
								want++
								logs[w][k] = append(logs[w][k], fmt.Sprintf("node %d: %s", node, q))
							}
						}
						if n, _ := res.RowsAffected(); n != want {
							errs <- fmt.Errorf("%s: %d rows changed, want %d", q, n, want)
							return
						}
					case strings.HasPrefix(q, "INSERT"):
						*row = colRow{exists: true, v: val, c: 7}
					case strings.HasPrefix(q, "DELETE"):
						row.exists = false
					case op == 2 && row.exists:
						row.c = val
						setC.Add(1)
					case op == 4 || op == 5:
						if row.exists {
							row.v = val
						}
					}
				case code == 1054 && (op == 2 || op == 3):
					// c is not public yet on that node, or x is dropped.
				case code == 1213, code == 1205:
				default:
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	waitWrites(t, &ok, errs, 50)
	before := ok.Load()
	mustExec(t, admin, "ALTER TABLE cd.t ADD COLUMN c INT DEFAULT 7")
	waitWrites(t, &ok, errs, 100)
	mustExec(t, admin, "ALTER TABLE cd.t DROP COLUMN x")
	during := ok.Load() - before
	waitWrites(t, &ok, errs, 100)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	require.Greater(t, during, int64(100), "writes ran while the columns changed")
	require.Positive(t, setC.Load(), "writers set the new column")
	t.Logf("%d writes during the column changes, %d of them set c", during, setC.Load())

	mustExec(t, admin, "ADMIN CHECK TABLE cd.t")
	want := map[int]colRow{}
	for _, m := range models {
		for id, r := range m {
			if r.exists {
				want[id] = *r
			}
		}
	}
	for i, db := range dbs {
		got := map[int]colRow{}
		rs, err := db.Query("SELECT * FROM t")
		require.NoError(t, err)
		cols, err := rs.Columns()
		require.NoError(t, err)
		require.Equal(t, []string{"id", "v", "pad", "c"}, cols)
		for rs.Next() {
			var id, v, cv int
			var pad sql.NullString
			require.NoError(t, rs.Scan(&id, &v, &pad, &cv))
			got[id] = colRow{exists: true, v: v, c: cv}
		}
		require.NoError(t, rs.Err())
		rs.Close()
		for id, r := range want {
			if got[id] != r {
				t.Errorf("row %d read on SQL node %d: %+v, want %+v; its statements:\n%s", id, i, got[id], r, strings.Join(logs[id%writers][id], "\n"))
			}
		}
		require.Equal(t, want, got, "rows read on SQL node %d", i)
		// The index on the dropped column is gone with it.
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'cd' AND TABLE_NAME = 't' AND INDEX_NAME = 'kx'").Scan(&n))
		require.Zero(t, n)
	}
}

// TestCancelAddColumn: ADMIN CANCEL DDL JOBS stops an ADD COLUMN that is
// not public yet. A transaction left open on SQL node 1 makes the owner
// wait (two leases at most) at each step for node 1's schema version, so
// the cancel arrives while the job waits, after it read the job: the
// owner must not overwrite the cancel with its next step. The column is
// removed again, the ALTER's session gets 8214, and the rows written
// meanwhile are intact.
func TestCancelAddColumn(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	db0, db1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, db0, "CREATE DATABASE ca")
	mustExec(t, db0, "CREATE TABLE ca.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db0, "INSERT INTO ca.t VALUES (1, 1), (2, 2)")
	makeDDLOwner(t, c, 0)
	db0, db1 = openDB(t, c, 0, ""), openDB(t, c, 1, "")

	tx, err := db1.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	var n int
	require.NoError(t, tx.QueryRow("SELECT COUNT(*) FROM ca.t").Scan(&n))
	alter := make(chan error, 1)
	go func() { _, err := db0.Exec("ALTER TABLE ca.t ADD COLUMN c INT DEFAULT 3"); alter <- err }()
	var job ddlJob
	require.Eventually(t, func() bool {
		j, ok := ddlJobOf(t, db0, "add column", "t")
		job = j
		return ok && j.schema == "delete only"
	}, 30*time.Second, 10*time.Millisecond, "the ADD COLUMN job reaches delete only")
	res := queryRows(t, db0, fmt.Sprintf("ADMIN CANCEL DDL JOBS %d", job.id))
	require.Equal(t, "successful", res[0][1])
	require.NoError(t, tx.Rollback())
	requireMySQLError(t, <-alter, 8214)
	j, ok := ddlJobOf(t, db0, "add column", "t")
	require.True(t, ok)
	require.Equal(t, "rollback done", j.state)

	mustExec(t, db1, "INSERT INTO ca.t VALUES (3, 3)")
	for _, db := range []*sql.DB{db0, db1} {
		rows := queryRows(t, db, "SELECT * FROM ca.t ORDER BY id")
		require.Equal(t, [][]string{{"1", "1"}, {"2", "2"}, {"3", "3"}}, rows)
	}
	mustExec(t, db0, "ADMIN CHECK TABLE ca.t")
	// It can be added again.
	mustExec(t, db1, "ALTER TABLE ca.t ADD COLUMN c INT DEFAULT 4")
	require.Equal(t, [][]string{{"1", "1", "4"}, {"2", "2", "4"}, {"3", "3", "4"}}, queryRows(t, db0, "SELECT * FROM ca.t ORDER BY id"))
}
