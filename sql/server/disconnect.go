package server

import (
	"context"
	"time"
)

// Clients that go away mid-statement (MySQL's check of the connection
// while a statement runs). A client that closes its connection while a
// statement runs (a timeout, Ctrl-C in the mysql CLI, a killed process)
// gets nothing from the statement's result; without this the statement
// would keep running (a lock wait for innodb_lock_wait_timeout, a large
// scan) and keep its locks and memory. Every disconnectCheckInterval one
// goroutine looks at the connections whose command has run for at least
// that long and, for each whose peer closed its end (a peek at the socket
// reads EOF or a reset; pending input counts as alive), cancels the
// statement as KILL QUERY would and closes the connection after it.
// Statements shorter than the interval cost nothing.

// disconnectCheckInterval is the period of the check, and how long a
// command must have run before it is checked.
const disconnectCheckInterval = time.Second

// watchDisconnects runs the check until ctx is done.
func (s *Server) watchDisconnects(ctx context.Context) {
	t := time.NewTicker(disconnectCheckInterval)
	defer t.Stop()
	var long []*clientConn
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			long = s.longCommands(now, long[:0])
			for i, c := range long {
				long[i] = nil
				if peerClosed(c.netConn) {
					c.abandoned()
				}
			}
		}
	}
}

// longCommands appends the connections running a command for at least
// disconnectCheckInterval at now.
func (s *Server) longCommands(now time.Time, out []*clientConn) []*clientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.mu.Lock()
		if c.busy && !c.closing && now.Sub(c.cmdStart) >= disconnectCheckInterval {
			out = append(out, c)
		}
		c.mu.Unlock()
	}
	return out
}

// abandoned ends c's running command (it fails with 1317 when it next
// waits for the cluster) and closes c after it: its client is gone.
func (c *clientConn) abandoned() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.busy || c.closing {
		return
	}
	c.closing = true
	if c.stmtCancel != nil {
		c.stmtCancel()
	}
	abandonedStatements.Inc()
	c.log.Info("client closed its connection while a statement ran; the statement is cancelled",
		"conn", c.id, "user", c.shown.user, "running", time.Since(c.cmdStart).Round(time.Millisecond))
}
