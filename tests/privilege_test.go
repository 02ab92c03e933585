package tests

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// TestUsersAcrossSQLNodes (issue 9's acceptance): a user created with
// caching_sha2_password on SQL node 1 logs in over TLS through SQL node 2
// at once; without TLS and without the RSA exchange its cleartext password
// is refused with MySQL's 1045; a missing privilege is 1142 on every SQL
// node, and a GRANT or REVOKE on one node holds on the other's open
// connection within a second.
func TestUsersAcrossSQLNodes(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	root := openDB(t, c, 0, "")
	mustExec(t, root, "CREATE DATABASE acc")
	mustExec(t, root, "CREATE TABLE acc.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, root, "INSERT INTO acc.t VALUES (1, 10)")
	mustExec(t, root, "CREATE USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY 'Secret-1'")

	// Node 2, plain connection, no RSA: the cleartext answer to "perform
	// full authentication" is refused.
	require.Equal(t, uint16(1045), cleartextLogin(t, c.SQLAddrs[1], "app", "Secret-1"))

	app2 := openAs(t, c, 1, "app", "Secret-1", "skip-verify")
	var cur, sslVersion, name string
	require.NoError(t, app2.QueryRow("SELECT CURRENT_USER()").Scan(&cur))
	require.Equal(t, "app@%", cur)
	require.NoError(t, app2.QueryRow("SHOW STATUS LIKE 'Ssl_version'").Scan(&name, &sslVersion))
	require.NotEmpty(t, sslVersion, "logged in over TLS")
	app1 := openAs(t, c, 0, "app", "Secret-1", "false") // RSA exchange on node 1

	for i, db := range []*sql.DB{app1, app2} {
		_, err := db.Exec("SELECT * FROM acc.t")
		require.Equal(t, uint16(1142), errCode(err), "node %d: %v", i+1, err)
		_, err = db.Exec("INSERT INTO acc.t VALUES (2, 20)")
		require.Equal(t, uint16(1142), errCode(err), "node %d: %v", i+1, err)
	}
	require.Equal(t, uint16(1045), errCode(pingAs(c, 1, "app", "wrong", "skip-verify")))

	mustExec(t, root, "GRANT SELECT ON acc.* TO 'app'@'%'")
	granted := time.Now()
	waitUntil(t, 5*time.Second, func() bool { _, err := app2.Exec("SELECT * FROM acc.t"); return err == nil })
	t.Logf("GRANT on node 1 enforced on node 2's open connection after %v", time.Since(granted))
	mustExec(t, root, "REVOKE SELECT ON acc.* FROM 'app'@'%'")
	revoked := time.Now()
	for i, db := range []*sql.DB{app1, app2} {
		waitUntil(t, 5*time.Second, func() bool { _, err := db.Exec("SELECT * FROM acc.t"); return errCode(err) == 1142 })
		t.Logf("REVOKE enforced on node %d after %v", i+1, time.Since(revoked))
	}
}

func openAs(t *testing.T, c *localcluster.Cluster, i int, user, pass, tls string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsnAs(c, i, user, pass, tls))
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Ping())
	return db
}

func dsnAs(c *localcluster.Cluster, i int, user, pass, tls string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, pass, "tcp", c.SQLAddrs[i]
	cfg.Timeout = 5 * time.Second
	cfg.TLSConfig = tls
	return cfg.FormatDSN()
}

func pingAs(c *localcluster.Cluster, i int, user, pass, tls string) error {
	db, err := sql.Open("mysql", dsnAs(c, i, user, pass, tls))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}

func errCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// waitUntil polls cond every 10 ms until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cleartextLogin logs in as user with caching_sha2_password on a plain
// connection, answering "perform full authentication" with the cleartext
// password as a client without TLS or RSA would, and returns the error
// code the server answers (0 for OK).
func cleartextLogin(t *testing.T, addr, user, pass string) uint16 {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	read := func() ([]byte, byte) {
		var hdr [4]byte
		_, err := io.ReadFull(conn, hdr[:])
		require.NoError(t, err)
		b := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
		_, err = io.ReadFull(conn, b)
		require.NoError(t, err)
		return b, hdr[3]
	}
	write := func(seq byte, p []byte) {
		_, err := conn.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...))
		require.NoError(t, err)
	}
	greeting, _ := read()
	require.Equal(t, byte(10), greeting[0])
	caps := uint32(1<<9 | 1<<15 | 1<<19 | 1<<21) // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, LENENC_CLIENT_DATA
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 45)
	b = append(b, make([]byte, 23)...)
	b = append(append(b, user...), 0)
	b = append(b, 32)
	b = append(b, make([]byte, 32)...) // a scramble the cache cannot know
	b = append(append(b, "caching_sha2_password"...), 0)
	write(1, b)
	p, seq := read()
	for p[0] == 0xfe { // switched to caching_sha2_password
		write(seq+1, make([]byte, 32))
		p, seq = read()
	}
	if p[0] == 0x01 && len(p) == 2 && p[1] == 4 { // perform full authentication
		write(seq+1, append([]byte(pass), 0))
		p, _ = read()
	}
	switch p[0] {
	case 0x00:
		return 0
	case 0xff:
		return binary.LittleEndian.Uint16(p[1:])
	}
	t.Fatalf("unexpected packet %x", p)
	return 0
}
