package server_test

import (
	"database/sql"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// TestWaitTimeout: a connection idle longer than wait_timeout gets ERROR
// 4031 and is closed; one that keeps sending commands is not.
func TestWaitTimeout(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	c := &txnClient{c: r.c}
	out, err := c.query("SET SESSION wait_timeout = 1", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ok [autocommit]", out)
	// Busy for longer than the timeout: commands every 200 ms keep it open.
	for range 8 {
		time.Sleep(200 * time.Millisecond) // the client's think time, not synchronisation
		out, err := c.query("SELECT 1", 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, "1\n[autocommit]", out)
	}
	idle := time.Now()
	require.NoError(t, r.c.SetDeadline(time.Now().Add(10*time.Second)))
	p, err := c.read()
	require.NoError(t, err)
	require.Equal(t, byte(0xff), p[0])
	require.Equal(t, uint16(4031), binary.LittleEndian.Uint16(p[1:]), "%s", p[9:])
	require.GreaterOrEqual(t, time.Since(idle), 900*time.Millisecond)
	_, err = r.c.Read(make([]byte, 1))
	require.Error(t, err, "closed after the error")
}

// TestChangeUser: COM_CHANGE_USER authenticates the new user against the
// greeting's nonce and gives it a fresh session; a wrong password ends the
// connection with 1045.
func TestChangeUser(t *testing.T) {
	ts := startServer(t)
	changeUser := func(r *rawConn, user, pass, db string) []byte {
		b := append([]byte{0x11}, user...)
		b = append(b, 0)
		scr := nativeScramble(pass, r.salt)
		b = append(b, byte(len(scr)))
		b = append(b, scr...)
		b = append(append(b, db...), 0)
		b = append(b, 45, 0)
		b = append(b, "mysql_native_password\x00"...)
		r.write(0, b)
		return r.read()
	}
	r := dialRaw(t, ts.addr)
	r.login()
	c := &txnClient{c: r.c}
	out, err := c.query("SET @v = 1", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ok [autocommit]", out)
	require.Equal(t, byte(0), changeUser(r, "alice", "s3cret", "test")[0], "OK")
	out, err = c.query("SELECT CURRENT_USER(), DATABASE(), @v IS NULL", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "alice@% test 1\n[autocommit]", out, "a fresh session of the new user")

	p := changeUser(r, "alice", "wrong", "")
	require.Equal(t, byte(0xff), p[0])
	require.Equal(t, uint16(1045), binary.LittleEndian.Uint16(p[1:]))
	r.expectClosed()
}

// TestConnectCycles: 10,000 connect / log in / quit cycles leave no
// goroutine and no heap behind. Prints the numbers.
func TestConnectCycles(t *testing.T) {
	ts, srv := startServerWith(t, func(*server.Config) {})
	cycle := func() {
		c, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
		r := &rawConn{t: t, c: c}
		require.Equal(t, byte(10), r.read()[0])
		r.login()
		r.write(0, []byte{0x01}) // COM_QUIT
		_, err = c.Read(make([]byte, 1))
		require.Error(t, err, "closed after COM_QUIT")
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	for range 200 { // warm up buffers, pools and the privilege snapshot
		cycle()
	}
	waitIdle(t, srv, runtime.NumGoroutine())
	goroutines, heapBefore := runtime.NumGoroutine(), heap()
	start := time.Now()
	const n = 10000
	for range n {
		cycle()
	}
	elapsed := time.Since(start)
	waitIdle(t, srv, goroutines)
	heapAfter := heap()
	t.Logf("%d connect/login/quit cycles in %v (%.0f/s): goroutines %d -> %d, heap in use %.2f MiB -> %.2f MiB",
		n, elapsed.Round(time.Millisecond), n/elapsed.Seconds(), goroutines, runtime.NumGoroutine(),
		float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20))
	require.LessOrEqual(t, runtime.NumGoroutine(), goroutines)
	// Allow 2 MiB of noise (GC timing, metric label maps); a leak of even
	// 200 bytes per connection would be 2 MB.
	require.Less(t, int64(heapAfter)-int64(heapBefore), int64(2<<20))
}

// TestSetOptionAndDebug: COM_SET_OPTION turns multi-statements off and on
// (EOF answers); COM_DEBUG needs SUPER.
func TestSetOptionAndDebug(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login() // with CLIENT_MULTI_STATEMENTS
	c := &txnClient{c: r.c}
	r.write(0, []byte{0x1b, 1, 0}) // MULTI_STATEMENTS_OFF
	require.Equal(t, byte(0xfe), r.read()[0])
	out, err := c.query("SELECT 1; SELECT 2", 5*time.Second)
	require.NoError(t, err)
	require.Contains(t, out, "error 1064")
	r.write(0, []byte{0x1b, 0, 0}) // MULTI_STATEMENTS_ON
	require.Equal(t, byte(0xfe), r.read()[0])
	out, err = c.query("SELECT 1; SELECT 2", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "1\n[autocommit]", out, "the first result set (more follow)")
	r2 := dialRaw(t, ts.addr)
	r2.login()
	r2.write(0, []byte{0x0d}) // COM_DEBUG as root
	require.Equal(t, byte(0xfe), r2.read()[0])

	_, err = ts.open(t, "", "").Exec("CREATE USER 'plain'@'%'")
	require.NoError(t, err)
	r3 := dialRaw(t, ts.addr)
	require.Empty(t, r3.loginAs("plain", "", ""))
	r3.write(0, []byte{0x0d})
	r3.expectErr(1227)
}

// TestProcessListAndKill: SHOW [FULL] PROCESSLIST lists every connection
// with PROCESS and only one's own without; KILL closes a connection of the
// same user or, with SUPER, any (1095 otherwise, 1094 for an unknown id).
func TestProcessListAndKill(t *testing.T) {
	ts := startServer(t)
	root := ts.open(t, "test", "")
	root.SetMaxOpenConns(1)
	_, err := root.Exec("CREATE USER 'plain'@'%'")
	require.NoError(t, err)
	plain := ts.openAs(t, "plain", "")
	var rootID, plainID string
	require.NoError(t, root.QueryRow("SELECT CONNECTION_ID()").Scan(&rootID))
	require.NoError(t, plain.QueryRow("SELECT CONNECTION_ID()").Scan(&plainID))

	rows := queryStrings(t, root, "SHOW FULL PROCESSLIST")
	byID := map[string][]string{}
	for _, r := range rows {
		byID[r[0]] = r
	}
	require.Equal(t, []string{rootID, "root", byID[rootID][2], "test", "Query", "0", "", "SHOW FULL PROCESSLIST"}, byID[rootID])
	require.Equal(t, "plain", byID[plainID][1])
	require.Equal(t, "Sleep", byID[plainID][4])
	require.Equal(t, "NULL", byID[plainID][7])
	for _, r := range queryStrings(t, plain, "SHOW PROCESSLIST") {
		require.Equal(t, "plain", r[1], "without PROCESS only one's own connections")
	}

	_, err = plain.Exec("KILL " + rootID)
	require.Equal(t, uint16(1095), mysqlCode(err), "%v", err)
	_, err = plain.Exec("KILL 999999")
	require.Equal(t, uint16(1094), mysqlCode(err), "%v", err)
	_, err = root.Exec("KILL " + plainID)
	require.NoError(t, err)
	waitFor(t, func() bool {
		for _, r := range queryStrings(t, root, "SHOW PROCESSLIST") {
			if r[0] == plainID {
				return false
			}
		}
		return true
	})
}

// TestKillQuery: KILL QUERY ends a statement waiting for a row lock with
// 1317 and leaves its connection usable.
func TestKillQuery(t *testing.T) {
	ts := startServer(t)
	a, b, root := ts.open(t, "test", ""), ts.open(t, "test", ""), ts.open(t, "test", "")
	for _, db := range []*sql.DB{a, b} {
		db.SetMaxOpenConns(1)
	}
	_, err := root.Exec("CREATE TABLE kq (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = root.Exec("INSERT INTO kq VALUES (1, 0)")
	require.NoError(t, err)
	tx, err := a.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE kq SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	var bID string
	require.NoError(t, b.QueryRow("SELECT CONNECTION_ID()").Scan(&bID))
	done := make(chan error, 1)
	go func() { _, err := b.Exec("UPDATE kq SET v = 2 WHERE id = 1"); done <- err }()
	ts.waitLockWaiters(t, 1)
	_, err = root.Exec("KILL QUERY " + bID)
	require.NoError(t, err)
	select {
	case err := <-done:
		require.Equal(t, uint16(1317), mysqlCode(err), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the killed statement still waits")
	}
	require.NoError(t, tx.Commit())
	require.Equal(t, [][]string{{"1"}}, queryStrings(t, b, "SELECT v FROM kq WHERE id = 1"), "b's connection still works")
}

// TestKillQuerySleep: KILL QUERY ends a SLEEP early, and the sleep returns
// 1 instead of 0, as in MySQL; the connection stays usable, and an
// uninterrupted SLEEP still returns 0.
func TestKillQuerySleep(t *testing.T) {
	ts := startServer(t)
	b, root := ts.open(t, "test", ""), ts.open(t, "test", "")
	b.SetMaxOpenConns(1)
	var bID string
	require.NoError(t, b.QueryRow("SELECT CONNECTION_ID()").Scan(&bID))
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var r result
		r.err = b.QueryRow("SELECT SLEEP(60)").Scan(&r.v)
		done <- r
	}()
	waitFor(t, func() bool {
		for _, r := range queryStrings(t, root, "SHOW FULL PROCESSLIST") {
			if r[0] == bID && r[7] == "SELECT SLEEP(60)" {
				return true
			}
		}
		return false
	})
	_, err := root.Exec("KILL QUERY " + bID)
	require.NoError(t, err)
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, "1", r.v, "an interrupted SLEEP returns 1")
		require.Less(t, time.Since(start), 30*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the killed SLEEP still sleeps")
	}
	require.Equal(t, [][]string{{"0"}}, queryStrings(t, b, "SELECT SLEEP(0.01)"), "b's next SLEEP is not interrupted")
}

// waitLockWaiters waits until n statements wait for a row lock in the
// test store.
func (ts *testServer) waitLockWaiters(t *testing.T, n int) {
	t.Helper()
	waitFor(t, func() bool {
		return ts.store.st.LockWaiters() == n
	})
}

// TestClientGoneMidStatement: a client that closes its connection while
// its statement waits for a row lock does not leave the statement waiting
// (for innodb_lock_wait_timeout) or its transaction open: the server
// cancels it within a few seconds, rolls it back, and the lock holder's
// row is free of it.
func TestClientGoneMidStatement(t *testing.T) {
	ts := startServer(t)
	a, root := ts.open(t, "test", ""), ts.open(t, "test", "")
	a.SetMaxOpenConns(1)
	_, err := root.Exec("CREATE TABLE cg (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = root.Exec("INSERT INTO cg VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	tx, err := a.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE cg SET v = 1 WHERE id = 1")
	require.NoError(t, err)

	r := dialRaw(t, ts.addr)
	r.login()
	r.write(0, []byte("\x03SET innodb_lock_wait_timeout = 60"))
	require.Equal(t, byte(0), r.read()[0])
	r.write(0, []byte("\x03BEGIN"))
	require.Equal(t, byte(0), r.read()[0])
	r.write(0, []byte("\x03UPDATE test.cg SET v = 2 WHERE id = 2"))
	require.Equal(t, byte(0), r.read()[0])
	r.write(0, []byte("\x03UPDATE test.cg SET v = 2 WHERE id = 1")) // waits for a's lock
	ts.waitLockWaiters(t, 1)
	gone := time.Now()
	require.NoError(t, r.c.Close())
	ts.waitLockWaiters(t, 0)
	require.Less(t, time.Since(gone), 10*time.Second, "the statement was cancelled, not left to its lock wait timeout")
	// Its transaction was rolled back: row 2's lock is gone and its write
	// never happened.
	_, err = root.Exec("UPDATE cg SET v = 3 WHERE id = 2")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Equal(t, [][]string{{"1", "1"}, {"2", "3"}}, queryStrings(t, root, "SELECT id, v FROM cg ORDER BY id"))
}

// TestKillQueryCrossJoin: KILL QUERY ends a statement that only computes,
// without waiting for the cluster (a cross join of 64^6 rows, counted, and
// the same under EXPLAIN ANALYZE), with 1317; it used to run on (a TiDB
// suite's 6-way cross join ran for an hour after its KILL QUERY).
func TestKillQueryCrossJoin(t *testing.T) {
	ts := startServer(t)
	b, root := ts.open(t, "test", ""), ts.open(t, "test", "")
	b.SetMaxOpenConns(1)
	_, err := root.Exec("CREATE TABLE kx (a INT)")
	require.NoError(t, err)
	_, err = root.Exec("INSERT INTO kx VALUES " + strings.TrimSuffix(strings.Repeat("(1),", 64), ","))
	require.NoError(t, err)
	var bID string
	require.NoError(t, b.QueryRow("SELECT CONNECTION_ID()").Scan(&bID))
	for _, q := range []string{
		"SELECT COUNT(*) FROM kx t1, kx t2, kx t3, kx t4, kx t5, kx t6",
		"EXPLAIN ANALYZE SELECT * FROM kx t1, kx t2, kx t3, kx t4, kx t5, kx t6",
	} {
		done := make(chan error, 1)
		go func() {
			rows, err := b.Query(q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			done <- err
		}()
		// Running for a second: its 64-row reads are long done, it only
		// computes.
		waitFor(t, func() bool {
			for _, r := range queryStrings(t, root, "SHOW FULL PROCESSLIST") {
				if r[0] == bID && r[7] == q && r[5] != "0" {
					return true
				}
			}
			return false
		})
		_, err = root.Exec("KILL QUERY " + bID)
		require.NoError(t, err)
		select {
		case err := <-done:
			require.Equal(t, uint16(1317), mysqlCode(err), "%s: %v", q, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("the killed %q still runs", q)
		}
	}
	require.Equal(t, [][]string{{"64"}}, queryStrings(t, b, "SELECT COUNT(*) FROM kx"), "b's connection still works")
}
