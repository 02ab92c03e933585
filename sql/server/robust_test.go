package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// Raw-socket robustness tests: what a broken or hostile client does to the
// connection layer. Each checks the answer the client gets and that the
// server keeps no connection and no goroutine for it afterwards.

// startServerWith starts a server like startServer, with cfg adjusted by
// opt, and returns the server too.
func startServerWith(t *testing.T, opt func(*server.Config)) (*testServer, *server.Server) {
	t.Helper()
	cfg := server.Config{
		Addr:            "127.0.0.1:0",
		Users:           map[string]string{"root": "", "alice": "s3cret"},
		CreateDefaultDB: true,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		// As in TiDB's tests: plans asserted on pseudo statistics stay
		// put (TestAutoAnalyze turns it on).
		NoAutoAnalyze: true,
		SchemaLease:   testSchemaLease,
	}
	opt(&cfg)
	store, ok := cfg.Store.(*nodeStorage) // a second node on another's store
	if !ok {
		store = newTestStore(t)
		cfg.Store = store
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.DefaultDBReady():
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return &testServer{addr: srv.Addr().String(), store: store}, srv
}

// waitIdle polls until the server has no connection and the process is
// back to at most baseline goroutines; on timeout it fails with the stacks.
func waitIdle(t *testing.T, srv *server.Server, baseline int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for srv.ConnCount() > 0 || runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Fatalf("server still has %d connections, %d goroutines (baseline %d):\n%s",
				srv.ConnCount(), runtime.NumGoroutine(), baseline, sb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expectClosed requires the server to close the connection (EOF or reset)
// without sending anything more.
func (r *rawConn) expectClosed() {
	n, err := r.c.Read(make([]byte, 1))
	require.Error(r.t, err, "connection closed by the server")
	require.Zero(r.t, n)
}

// expectErr reads one packet and requires it to be ERR code.
func (r *rawConn) expectErr(code uint16) string {
	p := r.read()
	require.Equal(r.t, byte(0xff), p[0], "ERR packet, got %q", p)
	require.Equal(r.t, code, binary.LittleEndian.Uint16(p[1:]), "%s", p[3:])
	return string(p[9:])
}

func (r *rawConn) ping() {
	r.write(0, []byte{0x0e})
	require.Equal(r.t, byte(0), r.read()[0], "COM_PING answered OK")
}

// readPayload reads one logical packet (continuations joined).
func (r *rawConn) readPayload() []byte {
	var out []byte
	for {
		p := r.read()
		out = append(out, p...)
		if len(p) < 1<<24-1 {
			return out
		}
	}
}

// writeFramed sends payload as one logical packet starting at sequence seq,
// split at 16 MiB - 1 like a client does.
func (r *rawConn) writeFramed(seq byte, payload []byte) {
	_, err := r.c.Write(server.FramePackets(payload, seq))
	require.NoError(r.t, err)
}

func TestTruncatedHeader(t *testing.T) {
	ts, srv := startServerWith(t, func(*server.Config) {})
	for _, tc := range []struct {
		name  string
		login bool
		send  []byte
	}{
		{"in handshake", false, []byte{40, 0}},
		{"after login", true, []byte{9}},
		{"header without body", true, []byte{9, 0, 0, 0, 0x03, 'S'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			r := dialRaw(t, ts.addr)
			if tc.login {
				r.login()
			}
			_, err := r.c.Write(tc.send)
			require.NoError(t, err)
			require.NoError(t, r.c.Close())
			waitIdle(t, srv, baseline)
		})
	}
	require.NoError(t, ts.open(t, "", "").Ping())
}

func TestContinuationPackets(t *testing.T) {
	ts, srv := startServerWith(t, func(*server.Config) {})
	baseline := runtime.NumGoroutine()
	const max = 1<<24 - 1
	query := func(size int) []byte {
		// COM_QUERY "SELECT LENGTH('xxx...')" of exactly size bytes.
		head, tail := "\x03SELECT LENGTH('", "')"
		return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	}
	for _, size := range []int{max, max + 1, 2 * max} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			require.NoError(t, r.c.SetDeadline(time.Now().Add(2*time.Minute))) // 16-32 MB statements under -race
			r.login()
			q := query(size)
			r.writeFramed(0, q)
			cols := r.readPayload()
			require.Equal(t, []byte{1}, cols, "one column")
			r.readPayload() // column definition (named after the 16 MiB expression)
			r.read()        // EOF
			row := r.readPayload()
			require.Equal(t, fmt.Sprint(size-len("\x03SELECT LENGTH('')")), string(row[1:]))
			require.Equal(t, byte(0xfe), r.read()[0], "end of rows")
			r.ping()
		})
	}
	t.Run("wrong sequence id in a continuation", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		framed := server.FramePackets(query(max+10), 0)
		framed[4+max+3] = 5 // the second packet's sequence id should be 1
		_, err := r.c.Write(framed)
		require.NoError(t, err)
		r.expectErr(1156)
		r.expectClosed()
	})
	t.Run("a 16 MiB result with an empty trailing packet", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		require.NoError(t, r.c.SetDeadline(time.Now().Add(2*time.Minute)))
		r.login()
		// The row packet is a 4-byte length (0xfd + 3) + value = 4 + n bytes.
		n := max - 4
		r.writeFramed(0, []byte("\x03SELECT '"+strings.Repeat("y", n)+"'"))
		require.Equal(t, []byte{1}, r.readPayload())
		r.readPayload() // column definition (named after the 16 MiB expression)
		r.read()        // EOF
		row := r.readPayload()
		require.Len(t, row, max)
		require.Equal(t, byte(0xfe), r.read()[0], "end of rows after the empty trailing packet")
		r.ping()
	})
	waitIdleAfterCleanup(t, srv, baseline)
}

// waitIdleAfterCleanup closes the test's raw connections first (they are
// closed by t.Cleanup otherwise) by running waitIdle in a cleanup that runs
// after them.
func waitIdleAfterCleanup(t *testing.T, srv *server.Server, baseline int) {
	t.Cleanup(func() { waitIdle(t, srv, baseline) })
}

func TestOversizedPacket(t *testing.T) {
	ts, srv := startServerWith(t, func(c *server.Config) { c.MaxPacket = 1 << 20 })
	baseline := runtime.NumGoroutine()
	t.Run("header announces too much", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		_, err := r.c.Write([]byte{0, 0, 0x20, 0}) // 2 MiB, body not sent
		require.NoError(t, err)
		require.Contains(t, r.expectErr(1153), "max_allowed_packet")
		r.expectClosed()
	})
	t.Run("client streams the whole packet", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		q := append([]byte("\x03SELECT '"), bytes.Repeat([]byte("z"), 3<<20)...)
		q = append(q, '\'')
		wrote := make(chan struct{})
		go func() { // the server stops reading it
			defer close(wrote)
			_, _ = r.c.Write(server.FramePackets(q, 0))
		}()
		r.expectErr(1153)
		r.expectClosed()
		require.NoError(t, r.c.Close())
		<-wrote
	})
	t.Run("handshake response", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		_, err := r.c.Write([]byte{0xff, 0xff, 0xff, 1})
		require.NoError(t, err)
		r.expectErr(1153)
		r.expectClosed()
	})
	t.Run("within the limit", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.login()
		r.writeFramed(0, []byte("\x03SELECT LENGTH('"+strings.Repeat("w", 1<<19)+"')"))
		require.Equal(t, []byte{1}, r.readPayload())
	})
	waitIdleAfterCleanup(t, srv, baseline)
}

func TestUnknownStatementID(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	r.write(0, []byte{0x17, 77, 0, 0, 0, 0, 1, 0, 0, 0}) // COM_STMT_EXECUTE
	require.Contains(t, r.expectErr(1243), "Unknown prepared statement handler (77)")
	r.write(0, []byte{0x1a, 77, 0, 0, 0}) // COM_STMT_RESET
	r.expectErr(1243)
	r.write(0, []byte{0x18, 77, 0, 0, 0, 0, 0, 'x'}) // COM_STMT_SEND_LONG_DATA: no answer
	r.write(0, []byte{0x19, 77, 0, 0, 0})            // COM_STMT_CLOSE: no answer
	r.ping()                                         // the next answer is the ping's

	// A statement closed by the client is unknown afterwards.
	r.write(0, append([]byte{0x16}, "SELECT 1"...))
	ok := r.read()
	require.Equal(t, byte(0), ok[0])
	id := binary.LittleEndian.Uint32(ok[1:])
	for range 2 { // column definition and EOF
		r.read()
	}
	r.write(0, binary.LittleEndian.AppendUint32([]byte{0x19}, id))
	r.write(0, append(binary.LittleEndian.AppendUint32([]byte{0x17}, id), 0, 1, 0, 0, 0))
	r.expectErr(1243)
	r.ping()

}

func TestHandshakeTimeout(t *testing.T) {
	ts, srv := startServerWith(t, func(c *server.Config) { c.HandshakeTimeout = 300 * time.Millisecond })
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"silent client", nil},
		{"half a handshake response", []byte{100, 0, 0, 1, 0x85, 0xa6}},
		{"header only", []byte{100, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			start := time.Now()
			r := dialRaw(t, ts.addr)
			if tc.send != nil {
				_, err := r.c.Write(tc.send)
				require.NoError(t, err)
			}
			r.expectClosed()
			require.Less(t, time.Since(start), 5*time.Second)
			waitIdle(t, srv, baseline)
		})
	}
	// Logging in within the timeout still works, and the deadline does not
	// outlive the handshake.
	r := dialRaw(t, ts.addr)
	r.login()
	time.Sleep(500 * time.Millisecond) // idle past the handshake timeout on purpose
	r.ping()
}

func TestMaxConnections(t *testing.T) {
	ts, srv := startServerWith(t, func(c *server.Config) { c.MaxConnections = 2 })
	a := dialRaw(t, ts.addr)
	a.login()
	b := dialRaw(t, ts.addr)
	b.login()
	before := counter(t, "strata_sql_connections_refused_total")

	// The third gets ERROR 1040 in place of the greeting.
	c, err := net.DialTimeout("tcp", ts.addr, 10*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	third := &rawConn{t: t, c: c}
	require.Contains(t, third.expectErr(1040), "Too many connections")
	third.expectClosed()
	require.Equal(t, before+1, counter(t, "strata_sql_connections_refused_total"))

	// And a driver reports it as the connect error.
	db, err := sql.Open("mysql", ts.dsn("root", "", "", ""))
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, uint16(1040), mysqlCode(db.Ping()))

	// Once one closes, a new connection is accepted.
	require.NoError(t, a.c.Close())
	deadline := time.Now().Add(10 * time.Second)
	for srv.ConnCount() > 1 {
		require.True(t, time.Now().Before(deadline), "closed connection not released")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, db.Ping())
	b.ping()
}

func TestDisconnectMidResult(t *testing.T) {
	ts, srv := startServerWith(t, func(*server.Config) {})
	db := ts.open(t, "test", "")
	_, err := db.Exec("CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(1000))")
	require.NoError(t, err)
	pad := strings.Repeat("p", 1000)
	for i := 0; i < 4000; i += 500 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO big VALUES ")
		for j := i; j < i+500; j++ {
			if j > i {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d, '%s')", j, pad)
		}
		_, err := db.Exec(sb.String())
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	waitIdle(t, srv, 1<<30) // the driver's connections are gone
	baseline := runtime.NumGoroutine()

	for range 3 {
		r := dialRaw(t, ts.addr)
		r.login()
		r.write(0, []byte("\x03SELECT v FROM test.big"))
		require.Equal(t, []byte{1}, r.read(), "result set header") // 4 MB of rows follow
		require.NoError(t, r.c.Close())
		waitIdle(t, srv, baseline)
	}
	// The server is fine: a full read of the same result works.
	r := dialRaw(t, ts.addr)
	r.login()
	r.write(0, []byte("\x03SELECT COUNT(*) FROM test.big"))
	require.Equal(t, []byte{1}, r.read())
}
