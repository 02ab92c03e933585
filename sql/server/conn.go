package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/trace"
	"github.com/stratadb/strata/sql/types"
)

// MySQL error codes of the connection layer.
const (
	errConCount          uint16 = 1040 // ER_CON_COUNT_ERROR
	errHandshake         uint16 = 1043 // ER_HANDSHAKE_ERROR
	errPacketsOutOfOrder uint16 = 1156 // ER_NET_PACKETS_OUT_OF_ORDER
	errUnknownStmt       uint16 = 1243 // ER_UNKNOWN_STMT_HANDLER

	errClientInteractionTimeout uint16 = 4031 // ER_CLIENT_INTERACTION_TIMEOUT
)

// lingerTimeout bounds how long a connection closed after a fatal error
// keeps reading (and discarding) what the client still sends, so that the
// close is a FIN after the ERR packet rather than a reset that can destroy
// the ERR packet in the client's receive buffer.
const lingerTimeout = time.Second

// serverCaps is what the server advertises in the handshake (plus
// CLIENT_SSL when TLS is configured).
const serverCaps = mysql.ClientLocalFiles | mysql.ClientLongPassword | mysql.ClientFoundRows | mysql.ClientLongFlag | mysql.ClientConnectWithDB |
	mysql.ClientProtocol41 | mysql.ClientInteractive | mysql.ClientTransactions | mysql.ClientSecureConnection |
	mysql.ClientMultiStatements | mysql.ClientMultiResults | mysql.ClientPluginAuth | mysql.ClientConnectAtts |
	mysql.ClientPluginAuthLenencClientData | mysql.ClientDeprecateEOF | mysql.ClientPSMultiResults

// clientConn serves one client connection.
type clientConn struct {
	// details is the running statement's time per stage: its context
	// carries it (execdetails), observe reads and resets it.
	details execdetails.Details
	// spanBuf is reused to copy the spans of a trace being kept.
	spanBuf []execdetails.Span
	srv     *Server
	id      uint64
	pkt     *packetIO
	log     *slog.Logger
	caps    uint32
	sess    *session.Session
	user    string
	// account is the account the login matched (CURRENT_USER()).
	account privilege.Ident
	salt    [20]byte
	// netConn is the accepted socket (pkt.conn becomes the TLS connection
	// after an SSL request); closing it ends the connection.
	netConn net.Conn
	tls     *tls.Conn // nil: plain connection
	wbuf    []byte    // reused for building packets
	start   time.Time
	// idleArmed is the read deadline set for wait_timeout (zero: none).
	idleArmed time.Time

	mu       sync.Mutex
	busy     bool
	closing  bool
	stmtType string
	// For SHOW PROCESSLIST, under mu: the running command, since when, its
	// query text (the packet buffer, valid while busy), and the user and
	// database as of the last command.
	cmd      byte
	cmdStart time.Time
	// stmtCtx is the context commands run under; KILL QUERY cancels it
	// (stmtCancel) and the next command gets a new one, so a connection
	// allocates one only after a kill.
	stmtCtx    context.Context
	stmtCancel context.CancelFunc
	query      []byte
	shown      struct{ user, db string }
}

// shutdown asks the connection to close: now when idle, else after the
// running command. Called with srv.mu held.
func (c *clientConn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if !c.busy {
		_ = c.netConn.Close()
	}
}

func (c *clientConn) serve(ctx context.Context) {
	defer c.srv.removeConn(c)
	defer func() {
		c.mu.Lock()
		if c.stmtCancel != nil {
			c.stmtCancel()
		}
		c.mu.Unlock()
	}()
	defer c.endSession(ctx)
	defer func() { _ = c.pkt.conn.Close() }()
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic while serving connection; closing it", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			_ = c.writeError(errno.New(errno.ErrUnknown, "internal error (the server logged it); the connection will be closed"))
			_ = c.pkt.flush()
		}
	}()
	if err := c.handshake(ctx); err != nil {
		if !isClosed(err) {
			c.log.Info("handshake failed", "err", err)
		}
		return
	}
	c.log.Debug("connection open", "user", c.user)
	for {
		c.pkt.seq = 0
		c.armIdleTimeout()
		data, err := c.pkt.readPacket()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && c.idleArmed != (time.Time{}) {
				idleDisconnects.Inc()
				c.pkt.seq = 0
				_ = c.writeError(&errno.Error{Code: errClientInteractionTimeout, State: "HY000",
					Msg: "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior."})
				_ = c.pkt.conn.SetWriteDeadline(time.Now().Add(lingerTimeout))
				_ = c.pkt.flush()
				return
			}
			if e := readErrorReply(err); e != nil {
				_ = c.writeError(e)
				c.closeLingering()
			}
			if !isClosed(err) && !errors.Is(err, errPacketTooLarge) {
				c.log.Debug("read failed; closing connection", "err", err)
			}
			return
		}
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return
		}
		c.busy = true
		if c.stmtCtx == nil || c.stmtCtx.Err() != nil {
			if c.stmtCancel != nil {
				c.stmtCancel()
			}
			c.stmtCtx, c.stmtCancel = context.WithCancel(execdetails.With(ctx, &c.details))
		}
		cmdCtx := c.stmtCtx
		c.cmd, c.cmdStart, c.query = 0, time.Now(), nil
		c.details.Begin(c.cmdStart, trace.Enabled())
		if len(data) > 0 { // an empty packet is answered by dispatch
			c.cmd = data[0]
			if c.cmd == mysql.ComQuery {
				c.query = data[1:]
			}
		}
		c.mu.Unlock()
		quit, err := c.dispatch(cmdCtx, data)
		// Idle before the answer leaves, so that a client that got it
		// and looks at SHOW PROCESSLIST sees this connection as Sleep.
		c.mu.Lock()
		c.busy = false
		c.query = nil
		c.cmdStart = time.Now()
		c.noteIdentity()
		closing := c.closing
		c.mu.Unlock()
		if err == nil {
			err = c.pkt.flush()
		}
		if quit || err != nil || closing {
			if err != nil && !isClosed(err) {
				c.log.Info("closing connection", "err", err)
			}
			return
		}
	}
}

// armIdleTimeout sets the read deadline for the next command to
// wait_timeout from now. To keep the per-command cost to a clock read, the
// deadline is moved only when it is more than 1/16 of the timeout (at most
// a second) behind now+timeout, so a connection is closed after between
// 15/16 and 16/16 of wait_timeout of idleness.
func (c *clientConn) armIdleTimeout() {
	d := c.sess.IdleTimeout()
	if d <= 0 {
		if c.idleArmed != (time.Time{}) {
			_ = c.pkt.conn.SetReadDeadline(time.Time{})
			c.idleArmed = time.Time{}
		}
		return
	}
	want := time.Now().Add(d)
	if c.idleArmed.IsZero() || want.Sub(c.idleArmed) > min(d/16, time.Second) || c.idleArmed.After(want) {
		_ = c.pkt.conn.SetReadDeadline(want)
		c.idleArmed = want
	}
}

// disarmIdleTimeout clears the read deadline before a command that reads
// more from the client (LOAD DATA LOCAL).
func (c *clientConn) disarmIdleTimeout() {
	if c.idleArmed != (time.Time{}) {
		_ = c.pkt.conn.SetReadDeadline(time.Time{})
		c.idleArmed = time.Time{}
	}
}

// noteIdentity records the user and database SHOW PROCESSLIST shows.
// Called with c.mu held, on the connection's goroutine.
func (c *clientConn) noteIdentity() {
	c.shown.user = c.user
	if c.sess != nil {
		c.shown.db = c.sess.CurrentDB()
	}
}

// process describes the connection for SHOW PROCESSLIST.
func (c *clientConn) process(now time.Time) session.ProcessInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := session.ProcessInfo{ID: c.id, User: c.shown.user, DB: c.shown.db, Host: c.netConn.RemoteAddr().String(), Command: "Sleep"}
	if p.User == "" {
		p.User = "unauthenticated user"
		p.Command = "Connect"
	}
	if !c.cmdStart.IsZero() {
		p.TimeSec = int64(now.Sub(c.cmdStart) / time.Second)
	}
	if c.busy {
		p.Command = commandName(c.cmd)
		p.Info = string(c.query)
	}
	return p
}

func commandName(cmd byte) string {
	switch cmd {
	case mysql.ComQuery:
		return "Query"
	case mysql.ComStmtPrepare:
		return "Prepare"
	case mysql.ComStmtExecute:
		return "Execute"
	case mysql.ComPing:
		return "Ping"
	case mysql.ComInitDB:
		return "Init DB"
	case mysql.ComFieldList:
		return "Field List"
	case mysql.ComChangeUser:
		return "Change user"
	}
	return fmt.Sprintf("Command %d", cmd)
}

// readErrorReply is the ERR packet for a framing error readPacket
// returned, or nil when the client is gone (nothing to answer).
func readErrorReply(err error) *errno.Error {
	switch {
	case errors.Is(err, errPacketTooLarge):
		return errno.New(errno.ErrNetPacketTooLarge, "Got a packet bigger than 'max_allowed_packet' bytes")
	case errors.Is(err, errOutOfOrder):
		return &errno.Error{Code: errPacketsOutOfOrder, State: "08S01", Msg: "Got packets out of order"}
	case errors.Is(err, errMalformed):
		return errno.New(errno.ErrUnknownCom, "Malformed packet: %v", err)
	}
	return nil
}

// closeLingering flushes a final ERR packet, half-closes the connection and
// discards what the client still sends for up to lingerTimeout, then lets
// serve's deferred Close finish. A client that is streaming a huge packet
// thus reads the ERR packet instead of "connection reset".
func (c *clientConn) closeLingering() {
	_ = c.pkt.conn.SetWriteDeadline(time.Now().Add(lingerTimeout))
	if c.pkt.flush() != nil {
		return
	}
	if cw, ok := c.pkt.conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.pkt.conn.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.pkt.conn, int64(c.srv.cfg.MaxPacket)+maxPayload))
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset")
}

// --- commands ----------------------------------------------------------

// dispatch runs one command. A panic in it (a bug) is answered with ERROR
// 1105 and logged with its stack; the session's open transaction (whose
// buffer the statement may have left half-changed) is rolled back, and the
// connection stays open.
func (c *clientConn) dispatch(ctx context.Context, data []byte) (quit bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicsTotal.Inc()
			if c.sess != nil {
				actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				c.sess.Abort(actx)
				cancel()
			}
			c.log.Error("panic while running a command; answered with ERROR 1105",
				"panic", fmt.Sprint(r), "command", commandSummary(data), "stack", string(debug.Stack()))
			quit, err = false, c.writeError(errno.New(errno.ErrUnknown,
				"internal error while running this statement (the server logged it; please report it)"))
		}
	}()
	return c.runCommand(ctx, data)
}

// commandSummary is a short, loggable description of a command packet.
func commandSummary(data []byte) string {
	const max = 200
	if len(data) > max {
		return fmt.Sprintf("%q... (%d bytes)", data[:max], len(data))
	}
	return fmt.Sprintf("%q", data)
}

func (c *clientConn) runCommand(ctx context.Context, data []byte) (quit bool, err error) {
	if len(data) == 0 {
		_ = c.writeError(errno.New(errno.ErrUnknownCom, "Malformed packet: empty command"))
		return true, nil
	}
	cmd, arg := data[0], data[1:]
	switch cmd {
	case mysql.ComQuit:
		return true, nil
	case mysql.ComQuery:
		return false, c.handleQuery(ctx, string(arg))
	case mysql.ComPing:
		return false, c.writeOK(0, 0, c.status(), "")
	case mysql.ComInitDB:
		if err := c.sess.UseDB(ctx, string(bytes.TrimRight(arg, "\x00"))); err != nil {
			return false, c.writeError(err)
		}
		return false, c.writeOK(0, 0, c.status(), "")
	case mysql.ComFieldList:
		table, _, _ := readNulString(append(arg, 0))
		cols, err := c.sess.FieldList(ctx, string(table))
		if err != nil {
			return false, c.writeError(err)
		}
		for i := range cols {
			if err := c.writeColumnDef(&cols[i]); err != nil {
				return false, err
			}
		}
		return false, c.writeEOF(c.status())
	case mysql.ComStatistics:
		s := fmt.Sprintf("Uptime: %d  Threads: %d  Questions: 0  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: 0.000",
			int(time.Since(c.srv.startTime()).Seconds()), c.srv.connCount())
		return false, c.pkt.writePacket([]byte(s))
	case mysql.ComChangeUser:
		return c.changeUser(ctx, arg)
	case mysql.ComProcessKill: // the old KILL: a 4-byte connection id
		if len(arg) < 4 {
			return false, c.writeError(errno.New(errno.ErrUnknownCom, "Malformed COM_PROCESS_KILL"))
		}
		res, err := c.sess.Execute(ctx, &ast.KillStmt{ConnectionID: uint64(binary.LittleEndian.Uint32(arg))})
		if err != nil {
			return false, c.writeError(err)
		}
		return false, c.writeOK(res.AffectedRows, 0, c.status(), "")
	case mysql.ComSetOption: // MYSQL_OPTION_MULTI_STATEMENTS_ON (0) / _OFF (1); answered with EOF
		if len(arg) < 2 || arg[1] != 0 || arg[0] > 1 {
			return false, c.writeError(errno.New(errno.ErrUnknownCom, "Unknown COM_SET_OPTION %x", arg))
		}
		if arg[0] == 0 {
			c.caps |= mysql.ClientMultiStatements
		} else {
			c.caps &^= mysql.ClientMultiStatements
		}
		return false, c.writeEOF(c.status())
	case mysql.ComDebug: // MySQL writes debug information to its log; needs SUPER
		if err := c.sess.CheckGlobal(mysql.SuperPriv, "SUPER"); err != nil {
			return false, c.writeError(err)
		}
		c.log.Info("COM_DEBUG", "connections", c.srv.connCount())
		return false, c.writeEOF(c.status())
	case mysql.ComResetConnection:
		c.endSession(ctx)
		c.newSession()
		return false, c.writeOK(0, 0, c.status(), "")
	case mysql.ComStmtPrepare:
		return false, c.handleStmtPrepare(ctx, string(arg))
	case mysql.ComStmtExecute:
		return false, c.handleStmtExecute(ctx, arg)
	case mysql.ComStmtSendLongData:
		c.handleStmtSendLongData(arg) // no response
		return false, nil
	case mysql.ComStmtClose:
		c.handleStmtClose(arg) // no response
		return false, nil
	case mysql.ComStmtReset:
		return false, c.handleStmtReset(arg)
	}
	return false, c.writeError(errno.New(errno.ErrUnknownCom, "Unknown command %d: not supported by this server (cursors, replication and COM_CHANGE_USER are not implemented)", cmd))
}

// newSession gives the connection a fresh session of its account.
func (c *clientConn) newSession() {
	c.sess = session.New(c.srv.dom, c.id, c.user, c.sessHost())
	c.sess.SetStatusVars(c.statusVars)
	c.sess.SetPrivileges(c.account)
	c.sess.SetProcesses(c.srv)
}

func (c *clientConn) sessHost() string {
	if ta, ok := c.pkt.conn.RemoteAddr().(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	return "%"
}

// status is the SERVER_STATUS flags for OK and EOF packets.
func (c *clientConn) status() uint16 {
	if c.sess == nil {
		return mysql.ServerStatusAutocommit
	}
	return c.sess.Status()
}

// endSession rolls back the session's open transaction (connection closed,
// COM_RESET_CONNECTION). It runs even when ctx is done (server shutdown):
// otherwise the transaction's locks would block others until their TTL.
func (c *clientConn) endSession(ctx context.Context) {
	if c.sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c.sess.Close(ctx)
}

// affected is the OK packet's row count: matched rows for CLIENT_FOUND_ROWS.
func (c *clientConn) affected(res *executor.Result) uint64 {
	if c.caps&mysql.ClientFoundRows != 0 && res.FoundRows > res.AffectedRows {
		return res.FoundRows
	}
	return res.AffectedRows
}

func (c *clientConn) handleQuery(ctx context.Context, q string) error {
	start := time.Now()
	stmts, err := c.sess.Parse(q)
	c.details.Since(execdetails.Parse, start)
	if err != nil {
		durationFor("ParseError").Observe(time.Since(start).Seconds())
		return c.writeError(err)
	}
	if len(stmts) == 0 {
		if strings.TrimSpace(q) == "" || strings.TrimSpace(q) == ";" {
			return c.writeError(errno.New(1065, "Query was empty"))
		}
		return c.writeOK(0, 0, c.status(), "") // only comments
	}
	if len(stmts) > 1 && c.caps&mysql.ClientMultiStatements == 0 {
		return c.writeError(errno.New(errno.ErrParse, "You have an error in your SQL syntax: several statements in one query need the CLIENT_MULTI_STATEMENTS capability"))
	}
	for i, stmt := range stmts {
		if i > 0 {
			start = time.Now()
		}
		label := session.StmtLabel(stmt)
		var res *executor.Result
		if ld, ok := stmt.(*ast.LoadDataStmt); ok && ld.FileLocRef == ast.FileLocClient {
			res, err = c.loadDataLocal(ctx, ld)
		} else if tr, ok := stmt.(*ast.TraceStmt); ok {
			res, err = c.traceStmt(ctx, tr)
		} else {
			res, err = c.sess.Execute(ctx, stmt)
		}
		if err != nil {
			e := errno.FromError(err)
			if e.Code == errno.ErrUnknown {
				c.log.Error("statement failed", "stmt", label, "err", err)
			}
			c.observe(label, stmt.Text(), false, start, nil, e.Code)
			return c.writeError(e)
		}
		st := c.status()
		if i < len(stmts)-1 {
			st |= mysql.ServerMoreResultsExists
		}
		if res.IsQuery() {
			err = c.writeResultSet(res, st)
		} else {
			err = c.writeOK(c.affected(res), res.LastInsertID, st, res.Info)
		}
		c.observe(label, stmt.Text(), false, start, res, 0)
		if err != nil {
			return err
		}
	}
	return nil
}

// observe records a statement that started at start: its latency
// (strata_sql_query_duration_seconds) and, when it was slow, a slow query
// log entry. res is nil when it failed with MySQL error code.
func (c *clientConn) observe(label, query string, prepared bool, start time.Time, res *executor.Result, code uint16) {
	now := time.Now()
	d := now.Sub(start)
	durationFor(label).Observe(d.Seconds())
	var rows uint64
	if res != nil {
		rows = c.affected(res)
		if res.IsQuery() {
			rows = uint64(len(res.Rows))
		}
	}
	var stages [execdetails.NumStages]time.Duration
	for st := range execdetails.NumStages {
		if stages[st] = c.details.Get(st); stages[st] > 0 {
			stageSeconds[st].Observe(stages[st].Seconds())
		}
	}
	slowest := execdetails.Slowest(&stages)
	dg := c.srv.digests.get(query)
	db := c.sess.CurrentDB()
	p95, warm := c.srv.summary.add(now, db, label, dg, query, prepared, d, rows, res == nil, &stages)
	slow := c.srv.slow.Slow(d)
	// Tail-based sampling (sql/trace): the recorded spans are kept only
	// for a statement slower than its digest's running p95, the keep
	// threshold or the slow log's.
	var kept *trace.Trace
	if c.details.Tracing() {
		reason := ""
		switch {
		case slow:
			reason = "slow_log"
		case trace.KeepThreshold() > 0 && d >= trace.KeepThreshold():
			reason = "threshold"
		case warm && d > p95:
			reason = "p95"
		}
		if reason == "" {
			trace.Dropped()
		} else {
			kept = &trace.Trace{Time: now, ConnID: c.id, Type: label, Digest: dg.digest, Query: query, Duration: d.Seconds(),
				Reason: reason}
			if warm {
				kept.P95 = p95.Seconds()
			}
			if slowest < execdetails.NumStages {
				kept.Slowest = slowest.String()
			}
			c.spanBuf, kept.Truncated = c.details.Spans(c.spanBuf[:0])
			trace.Keep(kept, c.spanBuf, kept.Truncated)
			if len(kept.Query) > slowQueryMaxLen {
				kept.Query = kept.Query[:slowQueryMaxLen]
			}
			c.srv.traces.Add(kept)
		}
	}
	c.details.Begin(time.Now(), trace.Enabled()) // the next statement of a multi-statement text starts at zero
	if !slow {
		return
	}
	user, host := c.sess.Account()
	var bySt map[string]float64
	for st, v := range stages {
		if v > 0 {
			if bySt == nil {
				bySt = map[string]float64{}
			}
			bySt[execdetails.Stage(st).String()] = v.Seconds()
		}
	}
	e := SlowEntry{Time: now, ConnID: c.id, User: user, Host: host, DB: db, Type: label,
		QueryTime: d.Seconds(), Digest: dg.digest, Prepared: prepared, Succ: res != nil, ErrorCode: code, Rows: rows,
		Stages: bySt, Query: query, Trace: kept}
	if slowest < execdetails.NumStages {
		e.SlowestStage = slowest.String()
	}
	c.srv.slowRing.Add(&e)
	c.srv.slow.Write(e)
}

// errNotAllowed is ER_NOT_ALLOWED_COMMAND.
const errNotAllowed uint16 = 1148

// loadDataLocal runs LOAD DATA LOCAL INFILE: it asks the client for the
// file (0xFB + name), streams the content packets into the session's
// loader, and reads to the client's empty packet whatever happens, so the
// connection stays in sync for the answer.
func (c *clientConn) loadDataLocal(ctx context.Context, x *ast.LoadDataStmt) (*executor.Result, error) {
	if c.caps&mysql.ClientLocalFiles == 0 {
		return nil, errno.New(errNotAllowed, "The used command is not allowed with this Strata version: the client did not enable LOCAL INFILE (mysql --local-infile=1)")
	}
	b := append(c.wbuf[:0], 0xfb)
	b = append(b, x.Path...)
	c.wbuf = b
	if err := c.pkt.writePacket(b); err != nil {
		return nil, err
	}
	if err := c.pkt.flush(); err != nil {
		return nil, err
	}
	c.disarmIdleTimeout()
	in := &infileReader{p: c.pkt}
	res, err := c.sess.LoadData(ctx, x, in)
	if derr := in.drain(); derr != nil {
		return nil, derr // the connection is broken
	}
	return res, err
}

// infileReader reads the client's LOAD DATA LOCAL packets up to the empty
// one that ends the file.
type infileReader struct {
	p    *packetIO
	buf  []byte
	done bool
	err  error
}

func (r *infileReader) Read(b []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.done {
			if r.err != nil {
				return 0, r.err
			}
			return 0, io.EOF
		}
		data, err := r.p.readPacket()
		if err != nil {
			r.done, r.err = true, err
			return 0, err
		}
		if len(data) == 0 {
			r.done = true
			return 0, io.EOF
		}
		r.buf = data // valid until the next readPacket
	}
	n := copy(b, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// drain discards the rest of the file; it returns a read error (the
// connection is then unusable).
func (r *infileReader) drain() error {
	for !r.done {
		r.buf = nil
		if _, err := r.Read(make([]byte, 1)); err != nil && err != io.EOF {
			return err
		}
	}
	return r.err
}

// --- responses ---------------------------------------------------------

func (c *clientConn) writeOK(affected, lastID uint64, status uint16, info string) error {
	b := append(c.wbuf[:0], 0x00)
	b = appendLenEncInt(b, affected)
	b = appendLenEncInt(b, lastID)
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, c.warningCount())
	if info != "" {
		b = appendLenEncString(b, info) // as MySQL's net_send_ok: libmysql/libmariadb read a length
	}
	c.wbuf = b
	return c.pkt.writePacket(b)
}

// warningCount is the warnings of the session's last statement, as OK and
// EOF packets carry them.
func (c *clientConn) warningCount() uint16 {
	if c.sess == nil {
		return 0
	}
	return uint16(min(c.sess.WarningCount(), 65535))
}

// writeEOF ends a result set: an OK packet with the 0xFE header when the
// client set DEPRECATE_EOF, else a classic EOF packet.
func (c *clientConn) writeEOF(status uint16) error {
	b := append(c.wbuf[:0], 0xfe)
	if c.caps&mysql.ClientDeprecateEOF != 0 {
		b = append(b, 0, 0) // affected rows, last insert id
		b = binary.LittleEndian.AppendUint16(b, status)
		b = binary.LittleEndian.AppendUint16(b, c.warningCount())
	} else {
		b = binary.LittleEndian.AppendUint16(b, c.warningCount())
		b = binary.LittleEndian.AppendUint16(b, status)
	}
	c.wbuf = b
	return c.pkt.writePacket(b)
}

func (c *clientConn) writeError(err error) error {
	e := errno.FromError(err)
	countError(e.Code)
	c.wbuf = errPacket(c.wbuf[:0], e)
	return c.pkt.writePacket(c.wbuf)
}

// errPacket appends the ERR packet payload of e to b.
func errPacket(b []byte, e *errno.Error) []byte {
	b = append(b, 0xff)
	b = binary.LittleEndian.AppendUint16(b, e.Code)
	b = append(b, '#')
	b = append(b, e.State...)
	return append(b, e.Msg...)
}

// wireType is the column type sent in column definitions: VARCHAR is
// VAR_STRING, every BLOB/TEXT size is BLOB (the length tells them apart),
// ENUM and SET are STRING with ENUM_FLAG / SET_FLAG, as MySQL sends them.
func wireType(ft types.FieldType) byte {
	switch ft.Tp {
	case mysql.TypeVarchar:
		return mysql.TypeVarString
	case mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		return mysql.TypeBlob
	case mysql.TypeEnum, mysql.TypeSet:
		return mysql.TypeString
	}
	return ft.Tp
}

func (c *clientConn) writeColumnDef(col *executor.ResultColumn) error {
	b := appendLenEncString(c.wbuf[:0], "def")
	b = appendLenEncString(b, col.DB)
	b = appendLenEncString(b, col.Table)
	b = appendLenEncString(b, col.OrgTable)
	b = appendLenEncString(b, col.Name)
	b = appendLenEncString(b, col.OrgName)
	b = append(b, 0x0c)
	b = binary.LittleEndian.AppendUint16(b, col.Type.Charset())
	b = binary.LittleEndian.AppendUint32(b, col.Type.ColumnLength())
	b = append(b, wireType(col.Type))
	b = binary.LittleEndian.AppendUint16(b, col.Type.WireFlags())
	b = append(b, col.Type.WireDecimals(), 0, 0)
	c.wbuf = b
	return c.pkt.writePacket(b)
}

// localTimestamps says which columns of res are TIMESTAMPs the client
// sees in the session time zone (sql/expr timezone.go): nil when none
// needs converting.
func (c *clientConn) localTimestamps(res *executor.Result) (*time.Location, []bool) {
	if c.sess == nil {
		return nil, nil
	}
	loc := expr.TimestampZone(c.sess)
	if loc == nil {
		return nil, nil
	}
	var local []bool
	for j, col := range res.Columns {
		if col.Type.Tp == mysql.TypeTimestamp {
			if local == nil {
				local = make([]bool, len(res.Columns))
			}
			local[j] = true
		}
	}
	return loc, local
}

func (c *clientConn) writeResultSet(res *executor.Result, status uint16) error {
	if err := c.pkt.writePacket(appendLenEncInt(c.wbuf[:0], uint64(len(res.Columns)))); err != nil {
		return err
	}
	for i := range res.Columns {
		if err := c.writeColumnDef(&res.Columns[i]); err != nil {
			return err
		}
	}
	if c.caps&mysql.ClientDeprecateEOF == 0 {
		if err := c.writeEOF(status); err != nil {
			return err
		}
	}
	loc, local := c.localTimestamps(res)
	for _, row := range res.Rows {
		b := c.wbuf[:0]
		for j, d := range row {
			if d.IsNull() {
				b = append(b, 0xfb)
				continue
			}
			if local != nil && local[j] {
				d = expr.TimestampToLocal(d, loc, res.Columns[j].Type.Decimal)
			}
			// Reserve a 1-byte length and fix it up when the value is longer.
			start := len(b)
			b = append(b, 0)
			b = types.AppendText(b, d, &res.Columns[j].Type)
			if n := len(b) - start - 1; n < 251 {
				b[start] = byte(n)
			} else {
				val := append([]byte(nil), b[start+1:]...)
				b = appendLenEncBytes(b[:start], val)
			}
		}
		c.wbuf = b
		if err := c.pkt.writePacket(b); err != nil {
			return err
		}
	}
	return c.writeEOF(status)
}
