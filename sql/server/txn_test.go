package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

// txnClient is a minimal MySQL text-protocol client that renders each
// answer with the server status flags (the driver hides them), for the
// transaction scripts in testdata/txn. Its methods return errors instead of
// failing the test, so they can run on other goroutines.
type txnClient struct {
	c  net.Conn
	sq byte
}

func dialTxnClient(t *testing.T, addr string) *txnClient {
	r := dialRaw(t, addr)
	r.login()
	return &txnClient{c: r.c}
}

func (c *txnClient) read() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	c.sq = hdr[3] + 1
	b := make([]byte, n)
	_, err := io.ReadFull(c.c, b)
	return b, err
}

func lenEnc(b []byte) (uint64, []byte) {
	switch b[0] {
	case 0xfc:
		return uint64(binary.LittleEndian.Uint16(b[1:])), b[3:]
	case 0xfd:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, b[4:]
	case 0xfe:
		return binary.LittleEndian.Uint64(b[1:]), b[9:]
	}
	return uint64(b[0]), b[1:]
}

func flags(status uint16) string {
	var f []string
	if status&0x0001 != 0 {
		f = append(f, "in_trans")
	}
	if status&0x0002 != 0 {
		f = append(f, "autocommit")
	}
	if status&0x2000 != 0 {
		f = append(f, "readonly")
	}
	if len(f) == 0 {
		return "[]"
	}
	return "[" + strings.Join(f, " ") + "]"
}

// query runs q and renders the answer: "ok [flags]" (with the affected
// rows and " warnings=N" when any), "error CODE (STATE): message", or the
// rows then "[flags]" (and " warnings=N").
func (c *txnClient) query(q string, timeout time.Duration) (string, error) {
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	p := append([]byte{byte(len(q) + 1), byte((len(q) + 1) >> 8), byte((len(q) + 1) >> 16), 0, 0x03}, q...)
	if _, err := c.c.Write(p); err != nil {
		return "", err
	}
	b, err := c.read()
	if err != nil {
		return "", err
	}
	switch b[0] {
	case 0x00:
		affected, rest := lenEnc(b[1:])
		_, rest = lenEnc(rest)
		out := "ok " + flags(binary.LittleEndian.Uint16(rest))
		if affected > 0 {
			out = fmt.Sprintf("ok %d %s", affected, flags(binary.LittleEndian.Uint16(rest)))
		}
		if w := binary.LittleEndian.Uint16(rest[2:]); w > 0 {
			out += fmt.Sprintf(" warnings=%d", w)
		}
		return out, nil
	case 0xff:
		// Timestamps vary with background readers (the privilege poller).
		msg := tsInMessage.ReplaceAllString(string(b[9:]), "${1}=<ts>")
		return fmt.Sprintf("error %d (%s): %s", binary.LittleEndian.Uint16(b[1:]), b[4:9], msg), nil
	}
	ncols, _ := lenEnc(b)
	for range ncols {
		if _, err := c.read(); err != nil {
			return "", err
		}
	}
	if _, err := c.read(); err != nil { // EOF after the columns
		return "", err
	}
	var sb strings.Builder
	for {
		r, err := c.read()
		if err != nil {
			return "", err
		}
		if r[0] == 0xfe && len(r) < 9 {
			sb.WriteString(flags(binary.LittleEndian.Uint16(r[3:])))
			if w := binary.LittleEndian.Uint16(r[1:]); w > 0 {
				fmt.Fprintf(&sb, " warnings=%d", w)
			}
			return sb.String(), nil
		}
		var vals []string
		for len(r) > 0 {
			if r[0] == 0xfb {
				vals = append(vals, "NULL")
				r = r[1:]
				continue
			}
			n, rest := lenEnc(r)
			vals = append(vals, string(rest[:n]))
			r = rest[n:]
		}
		sb.WriteString(strings.Join(vals, " ") + "\n")
	}
}

type asyncResult struct {
	out string
	err error
}

// TestTxnScripts runs the session state machine scripts in testdata/txn
// against the fake store. Commands:
//
//	exec [conn=NAME]       one statement per line, each answer on a line
//	connect conn=NAME user=U [pass=P] [db=D]  log in as U ("ok" or the error)
//	explain-analyze [conn=NAME]  as exec, EXPLAIN ANALYZE's times as <t>, sizes as <b>
//	exec-async conn=NAME   start one statement without waiting for it
//	wait-blocked n=N       wait until N transactions wait for row locks
//	await conn=NAME        the answer of the connection's async statement
//	store                  counters of the fake store
func TestTxnScripts(t *testing.T) { runScripts(t, "testdata/txn") }

// TestPrivilegeScripts runs the account and privilege scripts in
// testdata/privilege.
func TestPrivilegeScripts(t *testing.T) { runScripts(t, "testdata/privilege") }

// runScripts runs the data-driven SQL scripts under dir (see TestTxnScripts).
var (
	tsInMessage = regexp.MustCompile(`(txnStartTS|conflictStartTS|conflictCommitTS)=[0-9]+`)
	ddlJobTime  = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}`)
	// EXPLAIN ANALYZE's durations (time:1.2ms, max: 394µs, 1m2.5s) and
	// memory (1.5 KB), which differ from run to run.
	analyzeTime  = regexp.MustCompile(`[0-9][0-9.hm]*(ns|µs|us|ms|s)\b`)
	analyzeBytes = regexp.MustCompile(`[0-9][0-9.]* (Bytes|KB|MB|GB)\b`)
)

func runScripts(t *testing.T, dir string) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		ts := startServer(t)
		conns := map[string]*txnClient{}
		pending := map[string]chan asyncResult{}
		conn := func(d *datadriven.TestData) *txnClient {
			name := "a"
			if d.HasArg("conn") {
				d.ScanArgs(t, "conn", &name)
			}
			c, ok := conns[name]
			if !ok {
				c = dialTxnClient(t, ts.addr)
				out, err := c.query("USE test", 5*time.Second)
				require.NoError(t, err)
				require.Equal(t, "ok [autocommit]", out)
				conns[name] = c
			}
			return c
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "exec":
				c := conn(d)
				var sb strings.Builder
				for _, q := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					out, err := c.query(q, 10*time.Second)
					require.NoError(t, err, q)
					if strings.HasPrefix(strings.ToUpper(q), "ADMIN SHOW DDL JOBS") {
						out = ddlJobTime.ReplaceAllString(out, "<time>") // a job's create, start and end times
					}
					sb.WriteString(out + "\n")
				}
				return sb.String()
			case "explain-analyze": // like exec, with EXPLAIN ANALYZE's times and sizes as <t> and <b>
				c := conn(d)
				var sb strings.Builder
				for _, q := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					out, err := c.query(q, 10*time.Second)
					require.NoError(t, err, q)
					out = analyzeTime.ReplaceAllString(out, "<t>")
					sb.WriteString(analyzeBytes.ReplaceAllString(out, "<b>") + "\n")
				}
				return sb.String()
			case "connect": // connect conn=NAME user=U [pass=P] [db=D]: "ok" or the login error
				var name, user, pass, db string
				d.ScanArgs(t, "conn", &name)
				d.ScanArgs(t, "user", &user)
				d.MaybeScanArgs(t, "pass", &pass)
				d.MaybeScanArgs(t, "db", &db)
				r := dialRaw(t, ts.addr)
				if msg := r.loginAs(user, pass, db); msg != "" {
					return msg + "\n"
				}
				_ = r.c.SetDeadline(time.Time{})
				conns[name] = &txnClient{c: r.c}
				return "ok\n"
			case "exec-async":
				c := conn(d)
				var name string
				d.ScanArgs(t, "conn", &name)
				ch := make(chan asyncResult, 1)
				pending[name] = ch
				q := strings.TrimSpace(d.Input)
				go func() {
					out, err := c.query(q, 30*time.Second)
					ch <- asyncResult{out, err}
				}()
				return ""
			case "wait-blocked":
				var n int
				d.ScanArgs(t, "n", &n)
				deadline := time.Now().Add(10 * time.Second)
				for {
					got := ts.store.st.LockWaiters()
					if got == n {
						return ""
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d lock waiters after 10s, want %d", got, n)
					}
					time.Sleep(time.Millisecond)
				}
			case "await":
				var name string
				d.ScanArgs(t, "conn", &name)
				select {
				case r := <-pending[name]:
					require.NoError(t, r.err)
					return r.out + "\n"
				case <-time.After(30 * time.Second):
					t.Fatalf("statement of %s did not finish in 30s", name)
				}
			case "store":
				locks, err := ts.store.st.Locks(context.Background(), math.MaxUint64)
				require.NoError(t, err)
				return fmt.Sprintf("locks=%d waiters=%d deadlocks=%d\n", len(locks), ts.store.st.LockWaiters(), ts.store.st.Deadlocks())
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}
