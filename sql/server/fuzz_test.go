package server_test

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// FuzzCommand sends arbitrary command packets on a logged-in connection and
// requires the server to stay up: after any input, a fresh connection still
// answers COM_PING. Seeds cover every command the server implements; run
// with `go test -fuzz FuzzCommand ./sql/server` to explore further.
func FuzzCommand(f *testing.F) {
	seeds := [][]byte{
		append([]byte{0x03}, "SELECT 1"...),
		append([]byte{0x03}, "CREATE TABLE test.f (id INT PRIMARY KEY, v VARCHAR(10))"...),
		append([]byte{0x03}, "INSERT INTO test.f VALUES (1,'a'),(2,NULL)"...),
		append([]byte{0x03}, "SELECT v, COUNT(*) FROM test.f WHERE id > 0 GROUP BY v ORDER BY 2 LIMIT 1"...),
		append([]byte{0x03}, "UPDATE test.f SET v = CONCAT(v, 'x') WHERE id BETWEEN 1 AND 2"...),
		append([]byte{0x03}, "SELECT 1; SELECT @@version_comment LIMIT 1"...),
		append([]byte{0x16}, "SELECT ? + ?"...),                               // COM_STMT_PREPARE
		{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0}, // COM_STMT_EXECUTE
		{0x18, 1, 0, 0, 0, 0, 0, 'a', 'b'},                                    // COM_STMT_SEND_LONG_DATA
		{0x1a, 1, 0, 0, 0},                                                    // COM_STMT_RESET
		{0x19, 1, 0, 0, 0},                                                    // COM_STMT_CLOSE
		append([]byte{0x02}, "test"...),                                       // COM_INIT_DB
		append([]byte{0x04}, "f\x00"...),                                      // COM_FIELD_LIST
		{0x09}, {0x1f}, {0x0e}, {0xff},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	ts := startServer(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		before := panics(t)
		r := dialRaw(t, ts.addr)
		r.login()
		r.write(0, payload)
		drain(r.c)
		require.Equal(t, before, panics(t), "command %q panicked (see the server log)", payload)

		// Whatever the answer (rows, OK, ERR, or a close for malformed
		// framing), the server still serves new connections.
		p := dialRaw(t, ts.addr)
		p.login()
		p.write(0, []byte{0x0e})
		require.Equal(t, byte(0), p.read()[0], "COM_PING after %q", payload)
	})
}

// panics reads the server's panic counter.
func panics(t *testing.T) float64 { return counter(t, "strata_sql_panics_total") }

// counter reads an unlabelled counter from the default registry (0 when
// it was never incremented).
func counter(t *testing.T, name string) float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// drain reads packets until the server goes quiet (no more results pending)
// or closes the connection.
func drain(c net.Conn) {
	hdr := make([]byte, 4)
	for {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := readFull(c, hdr); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(append(hdr[:3:3], 0)))
		if _, err := readFull(c, make([]byte, n)); err != nil {
			return
		}
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
