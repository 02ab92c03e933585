package server_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/server"
)

// loginAs logs in with mysql_native_password (the test servers' default
// plugin) and returns "" on success or the ERR packet rendered as
// "error CODE (STATE): message".
func (r *rawConn) loginAs(user, pass, db string) string {
	greetingSalt := r.salt
	caps := uint32(1<<9 | 1<<15 | 1<<19 | 1<<16) // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, MULTI_STATEMENTS
	if db != "" {
		caps |= 1 << 3 // CONNECT_WITH_DB
	}
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 45)
	b = append(b, make([]byte, 23)...)
	b = append(b, user...)
	b = append(b, 0)
	scr := nativeScramble(pass, greetingSalt)
	b = append(b, byte(len(scr)))
	b = append(b, scr...)
	if db != "" {
		b = append(b, db...)
		b = append(b, 0)
	}
	b = append(b, "mysql_native_password\x00"...)
	r.write(1, b)
	p := r.read()
	for p[0] == 0xfe { // auth switch: answer for the plugin's new nonce
		salt := p[1+len("mysql_native_password")+1:]
		if len(salt) > 20 {
			salt = salt[:20]
		}
		r.write(r.sq, nativeScramble(pass, salt))
		p = r.read()
	}
	switch p[0] {
	case 0x00:
		return ""
	case 0xff:
		return fmt.Sprintf("error %d (%s): %s", binary.LittleEndian.Uint16(p[1:]), p[4:9], p[9:])
	}
	return fmt.Sprintf("unexpected packet %x", p)
}

func nativeScramble(pw string, nonce []byte) []byte {
	if pw == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(pw))
	h2 := sha1.Sum(h1[:])
	h3 := sha1.Sum(append(append([]byte(nil), nonce...), h2[:]...))
	out := make([]byte, sha1.Size)
	for i := range out {
		out[i] = h1[i] ^ h3[i]
	}
	return out
}

// TestPrivilegesAcrossNodes: two SQL nodes over one store. A user created
// on node A with caching_sha2_password logs in over TLS through node B at
// once; a cleartext password on a plain connection is refused; a missing
// privilege is 1142 on both nodes, and a GRANT / REVOKE on A is enforced on
// B's open session within its poll interval.
func TestPrivilegesAcrossNodes(t *testing.T) {
	a, _ := startServerWith(t, func(c *server.Config) { c.PrivilegePollInterval = 50 * time.Millisecond })
	b, tlsParam := tlsServer(t, func(c *server.Config) {
		c.Store = a.store.newNode(t)
		c.PrivilegePollInterval = 50 * time.Millisecond
	})
	root := a.open(t, "", "")
	for _, q := range []string{
		"CREATE TABLE test.t (id INT PRIMARY KEY)",
		"CREATE USER 'n'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw'",
	} {
		_, err := root.Exec(q)
		require.NoError(t, err, q)
	}
	// Plain connection, no RSA exchange: the cleartext answer is refused.
	r := dialRaw(t, b.addr)
	r.rawLogin("n", make([]byte, sha256.Size), auth.CachingSHA2Password)
	require.Equal(t, []byte{1, 4}, r.read(), "perform full authentication")
	r.write(r.sq, []byte("pw\x00"))
	r.expectErr(1045)

	nb, err := sql.Open("mysql", b.dsn("n", "pw", "", tlsParam))
	require.NoError(t, err)
	defer nb.Close()
	nb.SetMaxOpenConns(1)
	require.Equal(t, [][]string{{"n@%"}}, queryStrings(t, nb, "SELECT CURRENT_USER()"))
	na := a.openAs(t, "n", "pw") // RSA exchange on A (plain)
	for _, db := range []*sql.DB{na, nb} {
		_, err := db.Exec("SELECT * FROM test.t")
		require.Equal(t, uint16(1142), mysqlCode(err), "%v", err)
		_, err = db.Prepare("SELECT * FROM test.t WHERE id = ?")
		require.Equal(t, uint16(1142), mysqlCode(err), "checked at prepare: %v", err)
	}
	_, err = root.Exec("GRANT SELECT ON test.t TO 'n'@'%'")
	require.NoError(t, err)
	waitFor(t, func() bool { _, err := nb.Exec("SELECT * FROM test.t"); return err == nil })
	_, err = root.Exec("REVOKE SELECT ON test.t FROM 'n'@'%'")
	require.NoError(t, err)
	waitFor(t, func() bool { _, err := nb.Exec("SELECT * FROM test.t"); return mysqlCode(err) == 1142 })
	// A password changed on A is the only one B accepts (the fast-path
	// cache entry of the old password no longer answers).
	_, err = root.Exec("ALTER USER 'n'@'%' IDENTIFIED BY 'new'")
	require.NoError(t, err)
	require.Equal(t, uint16(1045), mysqlCode(ping(t, b.dsn("n", "pw", "", tlsParam))))
	require.NoError(t, ping(t, b.dsn("n", "new", "", tlsParam)))
}

// TestSkipGrantTables: every login passes and may fix a lost password.
func TestSkipGrantTables(t *testing.T) {
	a, _ := startServerWith(t, func(c *server.Config) { c.Users = map[string]string{"root": "lost"} })
	require.Equal(t, uint16(1045), mysqlCode(ping(t, a.dsn("root", "", "", ""))))
	b, _ := startServerWith(t, func(c *server.Config) { c.Store = a.store.newNode(t); c.SkipGrantTables = true })
	db := b.openAs(t, "anyone", "anything")
	require.Equal(t, [][]string{{"skip-grants user@skip-grants host"}}, queryStrings(t, db, "SELECT CURRENT_USER()"))
	_, err := db.Exec("ALTER USER 'root'@'%' IDENTIFIED BY 'found'")
	require.NoError(t, err)
	require.NoError(t, ping(t, a.dsn("root", "found", "", "")))
}

// openAs opens a one-connection pool as user.
func (ts *testServer) openAs(t *testing.T, user, pass string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", ts.dsn(user, pass, "", ""))
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
