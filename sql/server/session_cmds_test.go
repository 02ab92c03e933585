package server_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
