package tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// bankDuration is how long each bank run transfers: 6 s per mode in make
// test; STRATA_BANK_SECONDS sets a longer soak (make test-bank).
func bankDuration(t *testing.T) time.Duration {
	if s := os.Getenv("STRATA_BANK_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "STRATA_BANK_SECONDS")
		return time.Duration(n) * time.Second
	}
	return 6 * time.Second
}

func mysqlErrCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// TestBankTransfers: clients move money between 8 accounts in explicit
// transactions (BEGIN; two UPDATEs; COMMIT), in pessimistic and in
// optimistic mode, while readers sum the balances. Every SUM read is the
// fixed total (snapshot isolation across the transaction's keys), and at
// the end every account holds exactly its start balance plus the
// acknowledged transfers: none lost, none applied that was not
// acknowledged. The only errors allowed are the ones a client is told to
// retry: deadlock (1213) and lock wait timeout (1205) in pessimistic mode,
// write conflict (9007) in optimistic mode.
func TestBankTransfers(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	admin := openDB(t, c, 0, "")
	mustExec(t, admin, "CREATE DATABASE bank")
	for _, mode := range []string{"pessimistic", "optimistic"} {
		t.Run(mode, func(t *testing.T) {
			const accounts, start, clients, readers = 8, 1000, 8, 2
			table := "bank.acc_" + mode
			mustExec(t, admin, "CREATE TABLE "+table+" (id INT PRIMARY KEY, bal BIGINT)")
			for i := range accounts {
				mustExec(t, admin, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, i, start))
			}
			db := openDB(t, c, 0, "")
			db.SetMaxOpenConns(clients + readers + 2)
			total := int64(accounts * start)

			var (
				mu       sync.Mutex
				expected = make([]int64, accounts)
				acked    int
				retried  = map[uint16]int{}
			)
			for i := range expected {
				expected[i] = start
			}
			ctx, cancel := context.WithTimeout(context.Background(), bankDuration(t))
			defer cancel()
			errs := make(chan error, clients+readers)
			var sums atomic.Int64
			for w := range clients {
				go func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					errs <- func() error {
						for ctx.Err() == nil {
							from, to := rng.IntN(accounts), rng.IntN(accounts-1)
							if to >= from {
								to++
							}
							amount := int64(rng.IntN(50) + 1)
							err := transfer(db, mode, table, from, to, amount)
							code := mysqlErrCode(err)
							switch {
							case err == nil:
								mu.Lock()
								expected[from] -= amount
								expected[to] += amount
								acked++
								mu.Unlock()
							case code == 1213 || code == 1205 || (mode == "optimistic" && code == 9007):
								mu.Lock()
								retried[code]++
								mu.Unlock()
							default:
								return fmt.Errorf("transfer %d -> %d: %w", from, to, err)
							}
						}
						return nil
					}()
				}()
			}
			for range readers {
				go func() {
					errs <- func() error {
						for ctx.Err() == nil {
							var sum int64
							if err := db.QueryRow("SELECT SUM(bal) FROM " + table).Scan(&sum); err != nil {
								return fmt.Errorf("sum: %w", err)
							}
							if sum != total {
								return fmt.Errorf("SUM(bal) = %d, want %d", sum, total)
							}
							sums.Add(1)
						}
						return nil
					}()
				}()
			}
			for range clients + readers {
				require.NoError(t, <-errs)
			}
			rows, err := admin.Query("SELECT id, bal FROM " + table)
			require.NoError(t, err)
			got := make([]int64, accounts)
			for rows.Next() {
				var id int
				var bal int64
				require.NoError(t, rows.Scan(&id, &bal))
				got[id] = bal
			}
			require.NoError(t, rows.Err())
			require.Equal(t, expected, got, "balances = start + acknowledged transfers")
			t.Logf("%s: %d transfers committed, retryable errors %v, %d SUM reads, all %d", mode, acked, retried, sums.Load(), total)
			require.Positive(t, acked)
		})
	}
}

// transfer moves amount from one account to another in one transaction on
// one connection; on any error the transaction is rolled back.
func transfer(db *sql.DB, mode, table string, from, to int, amount int64) (err error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	begin := "BEGIN PESSIMISTIC"
	if mode == "optimistic" {
		begin = "BEGIN OPTIMISTIC"
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET bal = bal - %d WHERE id = %d", table, amount, from)); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET bal = bal + %d WHERE id = %d", table, amount, to)); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// TestSelectForUpdateCounter: 16 clients each read a counter with SELECT
// ... FOR UPDATE, compute the next value themselves and write it back, in
// pessimistic transactions. The row lock serialises them: the final value
// equals the number of acknowledged commits.
func TestSelectForUpdateCounter(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE rmw")
	mustExec(t, db, "CREATE TABLE rmw.c (id INT PRIMARY KEY, n BIGINT)")
	mustExec(t, db, "INSERT INTO rmw.c VALUES (1, 0)")
	const clients, each = 16, 10
	db.SetMaxOpenConns(clients + 1)
	var acked atomic.Int64
	errs := make(chan error, clients)
	for range clients {
		go func() {
			errs <- func() error {
				ctx := context.Background()
				conn, err := db.Conn(ctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				for range each {
					if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
						return err
					}
					var n int64
					if err := conn.QueryRowContext(ctx, "SELECT n FROM rmw.c WHERE id = 1 FOR UPDATE").Scan(&n); err != nil {
						return fmt.Errorf("select for update: %w", err)
					}
					if _, err := conn.ExecContext(ctx, fmt.Sprintf("UPDATE rmw.c SET n = %d WHERE id = 1", n+1)); err != nil {
						return fmt.Errorf("update: %w", err)
					}
					if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
						return fmt.Errorf("commit: %w", err)
					}
					acked.Add(1)
				}
				return nil
			}()
		}()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
	var n int64
	require.NoError(t, db.QueryRow("SELECT n FROM rmw.c WHERE id = 1").Scan(&n))
	require.Equal(t, acked.Load(), n)
	require.EqualValues(t, clients*each, n)
}

// TestLockWaitAndDeadlock: a statement waiting for a row lock gives up with
// 1205 after innodb_lock_wait_timeout (and only it is rolled back); two
// transactions locking two rows in opposite orders end with exactly one
// 1213, within a second, and the other commits.
func TestLockWaitAndDeadlock(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE lk")
	mustExec(t, db, "CREATE TABLE lk.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO lk.t VALUES (1, 0), (2, 0)")
	ctx := context.Background()
	conn := func() *sql.Conn {
		cn, err := db.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { cn.Close() })
		return cn
	}
	exec := func(cn *sql.Conn, q string) {
		t.Helper()
		_, err := cn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}

	t.Run("lock wait timeout", func(t *testing.T) {
		a, b := conn(), conn()
		exec(a, "BEGIN")
		exec(a, "UPDATE lk.t SET v = 1 WHERE id = 1")
		exec(b, "SET innodb_lock_wait_timeout = 1")
		exec(b, "BEGIN")
		exec(b, "UPDATE lk.t SET v = 2 WHERE id = 2")
		start := time.Now()
		_, err := b.ExecContext(ctx, "UPDATE lk.t SET v = 2 WHERE id = 1")
		waited := time.Since(start)
		require.Equal(t, uint16(1205), mysqlErrCode(err), "%v", err)
		require.Contains(t, err.Error(), "Lock wait timeout exceeded; try restarting transaction")
		require.GreaterOrEqual(t, waited, 900*time.Millisecond)
		require.Less(t, waited, 5*time.Second)
		t.Logf("1205 after %s (innodb_lock_wait_timeout = 1)", waited)
		// Only the statement was rolled back: b's first write commits.
		exec(a, "ROLLBACK")
		exec(b, "COMMIT")
		var v1, v2 int
		require.NoError(t, db.QueryRow("SELECT v FROM lk.t WHERE id = 1").Scan(&v1))
		require.NoError(t, db.QueryRow("SELECT v FROM lk.t WHERE id = 2").Scan(&v2))
		require.Equal(t, []int{0, 2}, []int{v1, v2})
	})

	t.Run("deadlock", func(t *testing.T) {
		a, b := conn(), conn()
		exec(a, "BEGIN")
		exec(b, "BEGIN")
		exec(a, "UPDATE lk.t SET v = 10 WHERE id = 1")
		exec(b, "UPDATE lk.t SET v = 20 WHERE id = 2")
		start := time.Now()
		res := make(chan error, 2)
		go func() {
			_, err := a.ExecContext(ctx, "UPDATE lk.t SET v = 11 WHERE id = 2")
			res <- err
		}()
		// b's statement closes the cycle whether or not a's is already
		// waiting; the detector picks one victim either way.
		go func() {
			_, err := b.ExecContext(ctx, "UPDATE lk.t SET v = 21 WHERE id = 1")
			res <- err
		}()
		var deadlocks, ok int
		for range 2 {
			err := <-res
			switch {
			case err == nil:
				ok++
			case mysqlErrCode(err) == 1213:
				deadlocks++
				require.Less(t, time.Since(start), time.Second, "1213 within a second")
				require.Contains(t, err.Error(), "Deadlock found when trying to get lock; try restarting transaction")
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, deadlocks, "exactly one victim")
		require.Equal(t, 1, ok)
		t.Logf("deadlock resolved after %s", time.Since(start))
		// The victim's transaction is gone; the survivor commits.
		_, errA := a.ExecContext(ctx, "COMMIT")
		_, errB := b.ExecContext(ctx, "COMMIT")
		require.NoError(t, errA)
		require.NoError(t, errB)
		var v1, v2 int
		require.NoError(t, db.QueryRow("SELECT v FROM lk.t WHERE id = 1").Scan(&v1))
		require.NoError(t, db.QueryRow("SELECT v FROM lk.t WHERE id = 2").Scan(&v2))
		require.Contains(t, [][]int{{10, 11}, {21, 20}}, []int{v1, v2}, "exactly the survivor's writes")
	})
}
