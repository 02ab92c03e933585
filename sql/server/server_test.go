package server_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/sql/server"
	"github.com/stratadb/strata/store/storetest"
)

type testServer struct {
	addr  string
	store *nodeStorage
	srv   *server.Server
}

// testSchemaLease keeps schema changes fast: each test server is the only
// SQL node on its store, so no other node's cache needs the time.
const testSchemaLease = 20 * time.Millisecond

// startServer starts a server on a test store; opts change its Config.
func startServer(t testing.TB, opts ...func(*server.Config)) *testServer {
	t.Helper()
	store := newTestStore(t)
	cfg := server.Config{
		Addr:            "127.0.0.1:0",
		Store:           store,
		Users:           map[string]string{"root": "", "alice": "s3cret"},
		CreateDefaultDB: true,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		// As in TiDB's tests: plans asserted on pseudo statistics stay
		// put (TestAutoAnalyze turns it on).
		NoAutoAnalyze: true,
		SchemaLease:   testSchemaLease,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	// Tests use database "test", which the server creates in the background.
	select {
	case <-srv.DefaultDBReady():
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &testServer{addr: srv.Addr().String(), store: store, srv: srv}
}

func (ts *testServer) dsn(user, pass, db string, params string) string {
	d := fmt.Sprintf("%s:%s@tcp(%s)/%s", user, pass, ts.addr, db)
	if params != "" {
		d += "?" + params
	}
	return d
}

func (ts *testServer) open(t testing.TB, db string, params string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("mysql", ts.dsn("root", "", db, params))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func mysqlCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func queryStrings(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err, q)
	out, _ := scanStrings(t, rows, "NULL")
	return out
}

// scanStrings reads and closes rows: each value as a string, null for
// NULL; and the number of columns (0: the statement returned no result
// set).
func scanStrings(t *testing.T, rows *sql.Rows, null string) ([][]string, int) {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			if v.Valid {
				row[i] = v.String
			} else {
				row[i] = null
			}
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out, len(cols)
}

func TestEndToEnd(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "", "")
	db.SetMaxOpenConns(1) // USE must stick to the connection

	steps := []string{
		"CREATE DATABASE shop",
		"CREATE DATABASE IF NOT EXISTS shop",
		"USE shop",
		"CREATE TABLE items (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20) NOT NULL, price DECIMAL(8,2) DEFAULT 1.5, qty INT UNSIGNED, note TEXT, created DATETIME DEFAULT CURRENT_TIMESTAMP, f DOUBLE)",
		"CREATE TABLE IF NOT EXISTS items (x INT)",
		"CREATE TABLE logs (msg VARCHAR(10), lvl TINYINT)",
		"INSERT INTO items (id, name, price, qty) VALUES (1, 'apple', 0.5, 10), (2, 'pear', 1.25, 0), (5, 'fig', 3, NULL)",
		"INSERT INTO items (name, qty, f) VALUES ('kiwi', 7, 2.5)",
		"INSERT INTO logs VALUES ('a', 1), ('b', 2), (NULL, 3), ('d', NULL), ('e', 5)",
		"INSERT INTO logs SET msg = 'f', lvl = 6",
	}
	for _, s := range steps {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	cases := []struct {
		q    string
		want [][]string
	}{
		{"SELECT id, name, price, qty FROM items WHERE id = 2", [][]string{{"2", "pear", "1.25", "0"}}},
		{"SELECT name FROM items WHERE id = 99", nil},
		{"SELECT name, price FROM items WHERE id = 5 AND price > 100", nil},
		{"SELECT name FROM items WHERE price >= 1 ORDER BY name", [][]string{{"fig"}, {"kiwi"}, {"pear"}}},
		{"SELECT name FROM items WHERE qty IS NULL", [][]string{{"fig"}}},
		{"SELECT name FROM items WHERE name IN ('fig', 'apple') OR qty > 5 ORDER BY id DESC", [][]string{{"kiwi"}, {"fig"}, {"apple"}}},
		{"SELECT name FROM items WHERE NOT (qty <> 0)", [][]string{{"pear"}}},
		{"SELECT COUNT(*) FROM items", [][]string{{"4"}}},
		{"SELECT name FROM items WHERE id BETWEEN 2 AND 5 ORDER BY id", [][]string{{"pear"}, {"fig"}}},
		{"SELECT name FROM items WHERE id > 1 AND id < 5", [][]string{{"pear"}}},
		{"SELECT SUM(qty) FROM items WHERE id BETWEEN 1 AND 2", [][]string{{"10"}}},
		{"SELECT name FROM items WHERE id > 9223372036854775807", nil},
		{"SELECT COUNT(*) FROM logs", [][]string{{"6"}}},
		{"SELECT COUNT(*) FROM logs WHERE lvl > 2", [][]string{{"3"}}},
		{"SELECT COUNT(msg), SUM(lvl), MIN(msg), MAX(lvl) FROM logs", [][]string{{"5", "17", "a", "6"}}},
		{"SELECT msg FROM logs ORDER BY lvl DESC LIMIT 2", [][]string{{"f"}, {"e"}}},
		{"SELECT msg FROM logs LIMIT 1, 2", [][]string{{"b"}, {"NULL"}}},
		{"SELECT * FROM logs WHERE lvl = 2", [][]string{{"b", "2"}}},
		{"SELECT lvl * 2 + 1 AS x FROM logs WHERE msg LIKE 'a%'", [][]string{{"3"}}},
		{"SELECT price FROM shop.items WHERE name = 'kiwi'", [][]string{{"1.50"}}},
		{"SELECT f FROM items WHERE id > 5", [][]string{{"2.5"}}},
		{"SELECT lvl % 2 AS odd, COUNT(*) FROM logs WHERE lvl IS NOT NULL GROUP BY odd ORDER BY odd", [][]string{{"0", "2"}, {"1", "3"}}},
		{"SELECT DISTINCT lvl > 2 FROM logs WHERE lvl IS NOT NULL ORDER BY 1", [][]string{{"0"}, {"1"}}},
		{"SELECT 1", [][]string{{"1"}}},
		{"SELECT @@version_comment LIMIT 1", [][]string{{"Strata 0.1.0, MySQL-compatible distributed SQL (https://github.com/stratadb/strata)"}}},
		{"SELECT DATABASE()", [][]string{{"shop"}}},
		{"SELECT VERSION()", [][]string{{"8.0.11-Strata-0.1.0"}}},
		{"SELECT @@session.auto_increment_increment, @@max_allowed_packet", [][]string{{"1", "67108864"}}},
		{"SHOW DATABASES", [][]string{{"information_schema"}, {"shop"}, {"test"}}},
		{"SHOW TABLES", [][]string{{"items"}, {"logs"}}},
		{"SHOW FULL TABLES WHERE Table_type NOT LIKE 'VIEW'", [][]string{{"items", "BASE TABLE"}, {"logs", "BASE TABLE"}}},
		{"SELECT _tidb_rowid > 0 FROM logs WHERE msg = 'a'", [][]string{{"1"}}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, queryStrings(t, db, c.q), c.q)
	}
	// AUTO_INCREMENT id is reported to the client.
	res, err := db.Exec("INSERT INTO items (name) VALUES ('plum')")
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	require.NotZero(t, id)
	require.Equal(t, [][]string{{"plum"}}, queryStrings(t, db, fmt.Sprintf("SELECT name FROM items WHERE id = %d", id)))
	require.Equal(t, [][]string{{fmt.Sprint(id)}}, queryStrings(t, db, "SELECT LAST_INSERT_ID()"))

	// UPDATE and DELETE.
	res, err = db.Exec("UPDATE items SET qty = qty + 1 WHERE id = 1")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.EqualValues(t, 1, n)
	require.Equal(t, [][]string{{"11"}}, queryStrings(t, db, "SELECT qty FROM items WHERE id = 1"))
	res, err = db.Exec("DELETE FROM logs WHERE lvl < 3")
	require.NoError(t, err)
	n, _ = res.RowsAffected()
	require.EqualValues(t, 2, n)
	require.Equal(t, [][]string{{"4"}}, queryStrings(t, db, "SELECT COUNT(*) FROM logs"))

	// Typed scan through the driver.
	var name string
	var price float64
	require.NoError(t, db.QueryRow("SELECT name, price FROM items WHERE id = 2").Scan(&name, &price))
	require.Equal(t, "pear", name)
	require.Equal(t, 1.25, price)
}

func TestErrors(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(3) NOT NULL, n TINYINT, d DATE)",
		"INSERT INTO t VALUES (5, 'x', 1, '2024-01-02')",
	} {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	cases := []struct {
		q    string
		code uint16
		msg  string
	}{
		{"INSERT INTO t VALUES (5, 'y', 1, NULL)", 1062, "Duplicate entry '5' for key 't.PRIMARY'"},
		{"INSERT INTO t VALUES (6, 'y', 1, NULL), (6, 'z', 1, NULL)", 1062, "Duplicate entry '6' for key 't.PRIMARY'"},
		{"SELEC 1", 1064, "You have an error in your SQL syntax"},
		{"INSERT INTO t VALUES (7, NULL, 1, NULL)", 1048, "Column 'v' cannot be null"},
		{"INSERT INTO t VALUES (7, 'x', 300, NULL)", 1264, "Out of range value for column 'n' at row 1"},
		{"INSERT INTO t VALUES (7, 'long', 1, NULL)", 1406, "Data too long for column 'v' at row 1"},
		{"INSERT INTO t VALUES (7, 'x')", 1136, "Column count doesn't match value count at row 1"},
		{"INSERT INTO t (id, nope) VALUES (7, 1)", 1054, "Unknown column 'nope' in 'field list'"},
		{"INSERT INTO t (id) VALUES (7)", 1364, "Field 'v' doesn't have a default value"},
		{"INSERT INTO t VALUES (7, 'x', 'abc', NULL)", 1366, "Incorrect integer value"},
		{"INSERT INTO t VALUES (7, 'x', 1, 'notadate')", 1292, "Incorrect date value"},
		{"SELECT nope FROM t", 1054, "Unknown column 'nope' in 'field list'"},
		{"SELECT * FROM missing", 1146, "Table 'test.missing' doesn't exist"},
		{"CREATE TABLE t (x INT)", 1050, "Table 't' already exists"},
		{"CREATE DATABASE test", 1007, "Can't create database 'test'; database exists"},
		{"USE nosuchdb", 1049, "Unknown database 'nosuchdb'"},
		{"SELECT * FROM t a JOIN t a ON a.id = a.id", 1066, "Not unique table/alias: 'a'"},
		{"SELECT id FROM t a JOIN t b ON a.id = b.id", 1052, "Column 'id' in field list is ambiguous"},
		{"CREATE TABLE u (a INT NULL, b INT, PRIMARY KEY (a, b))", 1171, "All parts of a PRIMARY KEY must be NOT NULL"},
		{"SELECT * FROM t WHERE (id, id) < ANY (SELECT id, id FROM t)", 1235, "doesn't yet support 'operator < between a row and a subquery'"},
		{"SELECT * FROM t WHERE (id, id) IN (SELECT id FROM t)", 1241, "Operand should contain 2 column(s)"},
		{"CREATE TABLE u (id INT, KEY (nope))", 1072, "Key column 'nope' doesn't exist in table"},
		{"CREATE INDEX k ON t (nope)", 1072, "Key column 'nope' doesn't exist in table"},
		{"CREATE TABLE u (j JSON DEFAULT '{}')", 1101, "JSON column 'j' can't have a default value"},
		{"SELECT @@nosuchvar", 1193, "Unknown system variable 'nosuchvar'"},
	}
	for _, c := range cases {
		_, err := db.Exec(c.q)
		require.Error(t, err, c.q)
		require.Equal(t, c.code, mysqlCode(err), "%s: %v", c.q, err)
		require.Contains(t, err.Error(), c.msg, c.q)
	}
	// The failed statements changed nothing and the connection still works.
	require.Equal(t, [][]string{{"1"}}, queryStrings(t, db, "SELECT COUNT(*) FROM t"))
	// Statements accepted for compatibility.
	for _, s := range []string{"SET NAMES utf8mb4", "SET autocommit = 1", "SET @@session.sql_mode = 'STRICT_TRANS_TABLES'", "COMMIT", "ROLLBACK", "SET @x = 5"} {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	require.Equal(t, [][]string{{"5"}}, queryStrings(t, db, "SELECT @x"))
}

func TestKVErrorsMapToMySQLCodes(t *testing.T) {
	// A short backoff budget: a region that stays unavailable is given up
	// on in a second instead of twenty.
	ts, _ := startServerWith(t, func(c *server.Config) {
		c.Store = newNodeStorage(t, newTestStore(t).st, kvclient.Config{BackoffBudget: time.Second})
	})
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE t (id INT PRIMARY KEY)")
	require.NoError(t, err)
	cases := []struct {
		answer func(proto.Message) (proto.Message, error)
		times  int // consecutive prewrites answered (0: all)
		code   uint16
		msg    string
	}{
		// A conflict is retried (statement retry); only a lasting one
		// reaches the client.
		{conflictAnswer, 0, 9007, "Write conflict, txnStartTS="},
		{busyAnswer, 0, 9005, "Region is unavailable"},
		// A 1PC commit whose answer was lost is settled at the leader:
		// not applied, it is rolled back there and the autocommit
		// statement runs again (TestOnePCAnswerLostIsSettled has the
		// applied case); lost every time, the client gets 1213.
		{lostAnswer, 1, 0, ""},
		{lostAnswer, 0, 1213, "the commit was lost with its region's leader"},
		// A statement interrupted while a store request is in flight
		// (1317) is TestKillQuery's.
	}
	match := touchesTable(ts.store.tableID(t, "test", "t"))
	for _, c := range cases {
		remove := ts.store.st.Inject(&storetest.Fault{Method: "KvPrewrite", Match: match, Times: c.times, Answer: c.answer})
		_, err := db.Exec("INSERT INTO t VALUES (1)")
		remove()
		if c.code == 0 {
			require.NoError(t, err)
			_, err = db.Exec("DELETE FROM t")
			require.NoError(t, err)
			continue
		}
		require.Equal(t, c.code, mysqlCode(err), "%v", err)
		require.Contains(t, err.Error(), c.msg)
	}
}

// TestConcurrentUpdatesOfOneRow: concurrent autocommit UPDATEs of one row
// lose no update. In pessimistic mode (the default) they wait for the row
// lock and all succeed; in optimistic mode they conflict in the store and
// each is run again at a new timestamp (statement retry), up to a limit: a
// statement that still loses reaches the client as 9007 and, as the error
// says, was not applied, so the row counts exactly the successful ones.
func TestConcurrentUpdatesOfOneRow(t *testing.T) {
	for _, mode := range []string{"pessimistic", "optimistic"} {
		t.Run(mode, func(t *testing.T) {
			ts := startServer(t)
			db := ts.open(t, "test", "tidb_txn_mode=%27"+mode+"%27")
			_, err := db.Exec("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
			require.NoError(t, err)
			_, err = db.Exec("INSERT INTO c VALUES (1, 0)")
			require.NoError(t, err)
			retriesBefore := counter(t, "strata_sql_statement_retries_total")
			const workers, each = 8, 25
			type result struct {
				applied   int
				conflicts int
				err       error
			}
			results := make(chan result, workers)
			for range workers {
				go func() {
					var r result
					for range each {
						_, err := db.Exec("UPDATE c SET n = n + 1 WHERE id = 1")
						switch {
						case err == nil:
							r.applied++
						case mode == "optimistic" && mysqlCode(err) == 9007:
							r.conflicts++
						default:
							r.err = err
							results <- r
							return
						}
					}
					results <- r
				}()
			}
			applied, conflicts := 0, 0
			for range workers {
				r := <-results
				require.NoError(t, r.err)
				applied, conflicts = applied+r.applied, conflicts+r.conflicts
			}
			var n int
			require.NoError(t, db.QueryRow("SELECT n FROM c WHERE id = 1").Scan(&n))
			require.Equal(t, applied, n, "every update the client saw succeed, and no other")
			require.Equal(t, workers*each, applied+conflicts)
			t.Logf("updates applied: %d, conflicts past the retries: %d", applied, conflicts)
			retries := counter(t, "strata_sql_statement_retries_total") - retriesBefore
			t.Logf("statement retries: %v", retries)
			if mode == "pessimistic" {
				require.Zero(t, retries, "pessimistic statements wait for locks instead of retrying")
				return
			}
			// A conflict that clears is invisible to the client.
			ts.store.st.Inject(&storetest.Fault{Method: "KvPrewrite", Match: touchesTable(ts.store.tableID(t, "test", "c")),
				Times: 3, Answer: conflictAnswer})
			before := counter(t, "strata_sql_statement_retries_total")
			_, err = db.Exec("UPDATE c SET n = 0 WHERE id = 1")
			require.NoError(t, err)
			require.Equal(t, before+3, counter(t, "strata_sql_statement_retries_total"))
		})
	}
}

// TestLockLostBeforeCommit: a pessimistic lock request whose answer was
// lost (the store answers that the outcome is unknown) committed nothing.
// The client sends it again, so a loss that clears is invisible; one that
// lasts until the lock wait timeout fails the statement with 9002 (not
// 8110: no commit was sent), only the statement is rolled back, and the
// transaction goes on. The first UPDATE is an autocommit one run
// pessimistically (--pessimistic-auto-commit).
func TestLockLostBeforeCommit(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) {
		c.Store = newNodeStorage(t, newTestStore(t).st, kvclient.Config{})
		c.PessimisticAutoCommit = true
	})
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO c VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	match := touchesTable(ts.store.tableID(t, "test", "c"))
	lost := &storetest.Fault{Method: "KvPessimisticLock", Match: match, Times: 2, Answer: lostAnswer}
	remove := ts.store.st.Inject(lost)
	_, err = db.Exec("UPDATE c SET n = 1 WHERE id = 1")
	remove()
	require.NoError(t, err)
	require.Equal(t, 2, ts.store.st.Hits(lost), "both lost lock requests were answered")

	for _, q := range []string{"SET innodb_lock_wait_timeout = 1", "BEGIN", "UPDATE c SET n = 2 WHERE id = 2"} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	remove = ts.store.st.Inject(&storetest.Fault{Method: "KvPessimisticLock", Match: match, Answer: lostAnswer})
	_, err = db.Exec("UPDATE c SET n = 2 WHERE id = 1")
	remove()
	require.Equal(t, uint16(9002), mysqlCode(err), "%v", err)
	require.Contains(t, err.Error(), "nothing was committed, run the statement again")
	_, err = db.Exec("COMMIT")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "1"}, {"2", "2"}}, queryStrings(t, db, "SELECT id, n FROM c"))
}

// TestNoRetryInsideTransaction: a write conflict at COMMIT of an explicit
// optimistic transaction reaches the client; nothing is run again.
func TestNoRetryInsideTransaction(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
	require.NoError(t, err)
	ts.store.st.Inject(&storetest.Fault{Method: "KvPrewrite", Match: touchesTable(ts.store.tableID(t, "test", "c")),
		Times: 1, Answer: conflictAnswer})
	before := counter(t, "strata_sql_statement_retries_total")
	for _, q := range []string{"BEGIN OPTIMISTIC", "INSERT INTO c VALUES (1, 1)"} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	_, err = db.Exec("COMMIT")
	require.Equal(t, uint16(9007), mysqlCode(err), "%v", err)
	require.Equal(t, before, counter(t, "strata_sql_statement_retries_total"))
	require.Equal(t, [][]string{{"0"}}, queryStrings(t, db, "SELECT COUNT(*) FROM c"))
}

func TestAuth(t *testing.T) {
	ts := startServer(t)
	cases := []struct {
		user, pass, db string
		code           uint16
	}{
		{"root", "", "", 0},
		{"alice", "s3cret", "test", 0},
		{"alice", "wrong", "", 1045},
		{"root", "notempty", "", 1045},
		{"mallory", "", "", 1045},
		{"root", "", "nosuchdb", 1049},
	}
	for _, c := range cases {
		db, err := sql.Open("mysql", ts.dsn(c.user, c.pass, c.db, ""))
		require.NoError(t, err)
		err = db.Ping()
		require.Equal(t, c.code, mysqlCode(err), "%+v: %v", c, err)
		db.Close()
	}
}

func TestMultiStatementAndPing(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "multiStatements=true")
	db.SetMaxOpenConns(1)
	require.NoError(t, db.Ping())
	_, err := db.Exec("CREATE TABLE m (id INT PRIMARY KEY, v INT); INSERT INTO m VALUES (1, 10); INSERT INTO m VALUES (2, 20)")
	require.NoError(t, err)
	rows, err := db.Query("SELECT v FROM m WHERE id = 1; SELECT COUNT(*) FROM m")
	require.NoError(t, err)
	var got []int
	for {
		for rows.Next() {
			var v int
			require.NoError(t, rows.Scan(&v))
			got = append(got, v)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []int{10, 2}, got)
	// An error in the middle stops the batch; the connection stays usable.
	_, err = db.Exec("INSERT INTO m VALUES (3, 30); INSERT INTO m VALUES (3, 31); INSERT INTO m VALUES (4, 40)")
	require.Equal(t, uint16(1062), mysqlCode(err))
	require.NoError(t, db.Ping())
	require.Equal(t, [][]string{{"3"}}, queryStrings(t, db, "SELECT COUNT(*) FROM m"))
}

func TestLargePacket(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	// A 17 MB query arrives as two packets; its 17 MB result leaves as two.
	payload := strings.Repeat("x", 17<<20)
	var got string
	require.NoError(t, db.QueryRow("SELECT '"+payload+"'").Scan(&got))
	require.Equal(t, len(payload), len(got))
	require.Equal(t, [][]string{{fmt.Sprint(len(payload))}}, queryStrings(t, db, "SELECT LENGTH('"+payload+"')"))

	// Rows are bounded (one Raft entry each); a bigger one is refused cleanly.
	_, err := db.Exec("CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO big VALUES (1, '" + payload + "')")
	require.Equal(t, uint16(8025), mysqlCode(err), "%v", err)
	mid := strings.Repeat("y", 5<<20)
	_, err = db.Exec("INSERT INTO big VALUES (2, '" + mid + "')")
	require.NoError(t, err)
	require.Equal(t, [][]string{{fmt.Sprint(len(mid))}}, queryStrings(t, db, "SELECT LENGTH(b) FROM big WHERE id = 2"))
}

// rawConn speaks just enough of the protocol to send arbitrary bytes.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	sq   byte
	salt []byte // the greeting's nonce
}

func dialRaw(t *testing.T, addr string) *rawConn {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	// A bound on a stuck server, not a synchronisation: under -race on a
	// loaded 2-core machine the first chunk of a 4,000-row scan over
	// 3-key regions took over 10 s once (TestDisconnectMidResult).
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	r := &rawConn{t: t, c: c}
	greeting := r.read()
	require.Equal(t, byte(10), greeting[0])
	// version NUL, conn id (4), salt part 1 (8), filler, caps, charset,
	// status, caps, salt length, 10 reserved, salt part 2 (12) NUL.
	v := 1
	for greeting[v] != 0 {
		v++
	}
	p := greeting[v+1+4:]
	r.salt = append(append([]byte(nil), p[:8]...), p[8+1+2+1+2+2+1+10:][:12]...)
	return r
}

func (r *rawConn) read() []byte {
	var hdr [4]byte
	_, err := io.ReadFull(r.c, hdr[:])
	require.NoError(r.t, err)
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	r.sq = hdr[3] + 1
	b := make([]byte, n)
	_, err = io.ReadFull(r.c, b)
	require.NoError(r.t, err)
	return b
}

func (r *rawConn) write(seq byte, payload []byte) {
	hdr := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	_, err := r.c.Write(append(hdr, payload...))
	require.NoError(r.t, err)
}

// login sends a minimal HandshakeResponse41 for root without password.
func (r *rawConn) login() {
	caps := uint32(1<<9 | 1<<15 | 1<<19 | 1<<16) // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, MULTI_STATEMENTS
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 45)
	b = append(b, make([]byte, 23)...)
	b = append(b, "root\x00"...)
	b = append(b, 0) // empty auth response
	b = append(b, "mysql_native_password\x00"...)
	r.write(1, b)
	ok := r.read()
	require.Equal(r.t, byte(0), ok[0], "auth OK")
}

func (r *rawConn) expectErrThenClose(code uint16) {
	p := r.read()
	require.Equal(r.t, byte(0xff), p[0], "ERR packet")
	require.Equal(r.t, code, binary.LittleEndian.Uint16(p[1:]))
	_, err := r.c.Read(make([]byte, 1))
	require.Error(r.t, err, "connection closed after the error")
}

func TestMalformedPackets(t *testing.T) {
	ts := startServer(t)

	t.Run("garbage handshake", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.write(1, []byte{1, 2, 3})
		r.expectErrThenClose(1043)
	})
	t.Run("handshake response with truncated user", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		b := binary.LittleEndian.AppendUint32(nil, 1<<9|1<<15)
		b = append(b, make([]byte, 28)...)
		b = append(b, "roo"...) // no NUL
		r.write(1, b)
		r.expectErrThenClose(1043)
	})
	t.Run("wrong sequence id", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		r.write(7, []byte{0x03, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'})
		r.expectErrThenClose(1156) // ER_NET_PACKETS_OUT_OF_ORDER
	})
	t.Run("empty command", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		r.write(0, nil)
		r.expectErrThenClose(1047)
	})
	t.Run("unknown command keeps the connection", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		r.write(0, []byte{0x1c, 1, 0, 0, 0, 1, 0, 0, 0}) // COM_STMT_FETCH (no cursors)
		p := r.read()
		require.Equal(t, byte(0xff), p[0])
		require.Equal(t, uint16(1047), binary.LittleEndian.Uint16(p[1:]))
		r.write(0, []byte{0x0e}) // COM_PING
		require.Equal(t, byte(0), r.read()[0])
	})
	// The server is still healthy for well-behaved clients.
	require.NoError(t, ts.open(t, "", "").Ping())
}

// TestOKPacketInfo checks the OK packet layout libmysql and libmariadb
// parse: the info string is length-encoded (the mysql CLI reported
// "malformed packet" when it was not).
func TestOKPacketInfo(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	for _, q := range []string{"CREATE TABLE test.ok_t (id INT PRIMARY KEY, v INT)", "INSERT INTO test.ok_t VALUES (1, 1)"} {
		r.write(0, append([]byte{0x03}, q...))
		require.Equal(t, byte(0), r.read()[0], q)
	}
	r.write(0, append([]byte{0x03}, "UPDATE test.ok_t SET v = 2 WHERE id = 1"...))
	ok := r.read()
	require.Equal(t, []byte{0x00, 1, 0}, ok[:3], "header, affected rows, last insert id")
	info := ok[7:]
	require.Equal(t, "Rows matched: 1  Changed: 1  Warnings: 0", string(info[1:]))
	require.Equal(t, len(info)-1, int(info[0]), "info is length-encoded")
}

func TestPreparedStatements(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE p (id BIGINT PRIMARY KEY, t TINYINT, s SMALLINT, i INT UNSIGNED, d DECIMAL(6,2), f FLOAT, g DOUBLE, v VARCHAR(20), dt DATETIME, dd DATE, n INT)")
	require.NoError(t, err)
	ins, err := db.Prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	require.NoError(t, err)
	defer ins.Close()
	when := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := int64(1); i <= 3; i++ {
		_, err := ins.Exec(i, -int8(i), 300*i, uint32(4000000000), "12.5", 1.5, 2.25, fmt.Sprintf("v%d", i), when, "2024-01-02", nil)
		require.NoError(t, err)
	}
	_, err = ins.Exec(1, 0, 0, 0, 0, 0, 0, "", when, "2024-01-02", nil)
	require.Equal(t, uint16(1062), mysqlCode(err))

	sel, err := db.Prepare("SELECT id, t, s, i, d, f, g, v, dt, dd, n FROM p WHERE id = ?")
	require.NoError(t, err)
	defer sel.Close()
	var (
		id           int64
		tt           int8
		ss           int16
		ii           uint32
		d, v, dt, dd string
		f            float32
		g            float64
		n            sql.NullInt64
	)
	require.NoError(t, sel.QueryRow(2).Scan(&id, &tt, &ss, &ii, &d, &f, &g, &v, &dt, &dd, &n))
	require.Equal(t, int64(2), id)
	require.Equal(t, int8(-2), tt)
	require.Equal(t, int16(600), ss)
	require.Equal(t, uint32(4000000000), ii)
	require.Equal(t, "12.50", d)
	require.Equal(t, float32(1.5), f)
	require.Equal(t, 2.25, g)
	require.Equal(t, "v2", v)
	require.Equal(t, "2024-03-04 05:06:07", dt)
	require.Equal(t, "2024-01-02", dd)
	require.False(t, n.Valid)
	require.ErrorIs(t, sel.QueryRow(99).Scan(&id), sql.ErrNoRows)

	// Parameters in WHERE / LIMIT and a string parameter for an int column.
	var cnt int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM p WHERE v IN (?, ?) AND id > ?", "v1", "v3", "0").Scan(&cnt))
	require.Equal(t, 2, cnt)
	rows, err := db.Query("SELECT id FROM p ORDER BY id DESC LIMIT ?", 2)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Close())
	require.Equal(t, []int64{3, 2}, ids)

	upd, err := db.Exec("UPDATE p SET v = ? WHERE id = ?", "changed", 3)
	require.NoError(t, err)
	aff, _ := upd.RowsAffected()
	require.EqualValues(t, 1, aff)
	require.NoError(t, db.QueryRow("SELECT v FROM p WHERE id = ?", 3).Scan(&v))
	require.Equal(t, "changed", v)

	// Errors at prepare time.
	_, err = db.Prepare("SELECT * FROM nosuch WHERE id = ?")
	require.Equal(t, uint16(1146), mysqlCode(err))
	_, err = db.Prepare("SELEC ?")
	require.Equal(t, uint16(1064), mysqlCode(err))
}

// sbtestSession is one session of a server holding sysbench's table
// sbtest with ids 1 to 100 (k = id*7).
func sbtestSession(b *testing.B) *sql.DB {
	ts := startServer(b)
	db := ts.open(b, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, KEY k_1 (k))")
	require.NoError(b, err)
	for i := 1; i <= 100; i++ {
		_, err := db.Exec(fmt.Sprintf("INSERT INTO sbtest VALUES (%d, %d, '%s', '%s')", i, i*7, strings.Repeat("c", 119), strings.Repeat("p", 59)))
		require.NoError(b, err)
	}
	return db
}

func BenchmarkPointSelect(b *testing.B) {
	db := sbtestSession(b)
	queries := make([]string, 100)
	for i := range queries {
		queries[i] = fmt.Sprintf("SELECT c FROM sbtest WHERE id = %d", i+1)
	}
	var c string
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := db.QueryRow(queries[i%100]).Scan(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepared", func(b *testing.B) {
		stmt, err := db.Prepare("SELECT c FROM sbtest WHERE id = ?")
		require.NoError(b, err)
		defer stmt.Close()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := stmt.QueryRow(i%100 + 1).Scan(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A statement over the range of ids [lo, lo+9] returning want rows:
	// sysbench's simple range (10 rows by primary key) and the others.
	ranged := func(name, q string, want int) {
		b.Run(name, func(b *testing.B) {
			stmt, err := db.Prepare(q)
			require.NoError(b, err)
			defer stmt.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lo := i%90 + 1
				rows, err := stmt.Query(lo, lo+9)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Close(); err != nil || n != want {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
		})
	}
	ranged("range", "SELECT c FROM sbtest WHERE id BETWEEN ? AND ?", 10)
	// A lookup by the secondary index k.
	b.Run("index", func(b *testing.B) {
		stmt, err := db.Prepare("SELECT id FROM sbtest WHERE k = ?")
		require.NoError(b, err)
		defer stmt.Close()
		b.ReportAllocs()
		var id int
		for i := 0; b.Loop(); i++ {
			if err := stmt.QueryRow((i%100 + 1) * 7).Scan(&id); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The rest of sysbench's oltp_read_only / oltp_read_write statements.
	ranged("sum", "SELECT SUM(k) FROM sbtest WHERE id BETWEEN ? AND ?", 1)
	ranged("order", "SELECT c FROM sbtest WHERE id BETWEEN ? AND ? ORDER BY c", 10)
	ranged("distinct", "SELECT DISTINCT c FROM sbtest WHERE id BETWEEN ? AND ? ORDER BY c", 1)
	b.Run("points", func(b *testing.B) { // select_random_points: an IN list on the secondary index
		stmt, err := db.Prepare("SELECT id, k, c, pad FROM sbtest WHERE k IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		require.NoError(b, err)
		defer stmt.Close()
		b.ReportAllocs()
		args := make([]any, 10)
		for i := 0; b.Loop(); i++ {
			for j := range args {
				args[j] = ((i+j*13)%100 + 1) * 7
			}
			rows, err := stmt.Query(args...)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Close(); err != nil || n != 10 {
				b.Fatalf("%d rows, %v", n, err)
			}
		}
	})
	b.Run("update", func(b *testing.B) { // UPDATE by primary key (index_updates)
		stmt, err := db.Prepare("UPDATE sbtest SET k = k + 1 WHERE id = ?")
		require.NoError(b, err)
		defer stmt.Close()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := stmt.Exec(i%100 + 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
