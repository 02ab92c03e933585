package server_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSQLPrepareScripts runs the SQL-level PREPARE / EXECUTE / DEALLOCATE
// PREPARE scripts in testdata/prepare (commands as TestTxnScripts).
func TestSQLPrepareScripts(t *testing.T) { runScripts(t, "testdata/prepare") }

// TestSQLPrepareResetConnection: COM_RESET_CONNECTION drops the
// connection's SQL-level prepared statements.
func TestSQLPrepareResetConnection(t *testing.T) {
	ts := startServer(t)
	c := dialTxnClient(t, ts.addr)
	q := func(s string) string {
		out, err := c.query(s, 10*time.Second)
		require.NoError(t, err, s)
		return out
	}
	require.Equal(t, "ok [autocommit]", q("PREPARE s FROM 'SELECT 1'"))
	require.Equal(t, "1\n[autocommit]", q("EXECUTE s"))
	require.NoError(t, c.c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := c.c.Write([]byte{1, 0, 0, 0, 0x1f}) // COM_RESET_CONNECTION
	require.NoError(t, err)
	ok, err := c.read()
	require.NoError(t, err)
	require.Equal(t, byte(0), ok[0])
	require.Equal(t, "error 1243 (HY000): Unknown prepared statement handler (s) given to EXECUTE", q("EXECUTE s"))
}

// TestSQLPrepareBinaryNamespace: the binary protocol's statement ids and
// the SQL-level names are apart, and COM_STMT_PREPARE refuses the
// prepared-statement statements themselves (1295).
func TestSQLPrepareBinaryNamespace(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	query := func(q string) []byte {
		r.write(0, append([]byte{0x03}, q...))
		return r.read()
	}
	require.Equal(t, byte(0), query("PREPARE s FROM 'SELECT 1'")[0])
	for _, q := range []string{"EXECUTE s", "PREPARE t FROM 'SELECT 1'", "DEALLOCATE PREPARE s"} {
		r.write(0, append([]byte{0x16}, q...)) // COM_STMT_PREPARE
		require.Contains(t, r.expectErr(1295), "not supported in the prepared statement protocol", q)
	}
	// COM_STMT_PREPARE's statement 1 is not the SQL-level name "1".
	r.write(0, append([]byte{0x16}, "SELECT 2"...))
	ok := r.read()
	require.Equal(t, byte(0), ok[0])
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(ok[1:]))
	for range 2 { // column definition and EOF
		r.read()
	}
	require.Equal(t, byte(0xff), query("EXECUTE `1`")[0])
	require.Equal(t, byte(0), query("DEALLOCATE PREPARE s")[0])
	r.write(0, append(binary.LittleEndian.AppendUint32([]byte{0x17}, 1), 0, 1, 0, 0, 0)) // COM_STMT_EXECUTE 1
	require.Equal(t, byte(1), r.read()[0], "one column")
}
