package session

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/types"
)

// ProcessInfo is one connection of this SQL node (SHOW PROCESSLIST).
type ProcessInfo struct {
	ID             uint64
	User, Host, DB string
	Command        string // "Query", "Sleep", ...
	TimeSec        int64
	Info           string // the running statement ("" when idle)
}

// Processes is what the server offers sessions about its connections.
type Processes interface {
	List() []ProcessInfo
	// Kill closes connection id (after its running statement). It reports
	// whether the connection exists.
	Kill(id uint64) bool
	// KillQuery cancels connection id's running statement.
	KillQuery(id uint64) bool
}

// SetProcesses connects the session to the node's connection list.
func (s *Session) SetProcesses(p Processes) { s.procs = p }

// showProcessList answers SHOW [FULL] PROCESSLIST: every connection with
// the PROCESS privilege, else the session's user's own.
func (s *Session) showProcessList(full bool) (*executor.Result, error) {
	if s.procs == nil {
		return nil, errno.NotSupported("SHOW PROCESSLIST without a server")
	}
	all := s.CheckGlobal(mysql.ProcessPriv, "PROCESS") == nil
	res := &executor.Result{Columns: []executor.ResultColumn{
		{Name: "Id", OrgName: "Id", Type: types.Uint64Type}, executor.StringColumn("User", 32), executor.StringColumn("Host", 64), executor.StringColumn("db", 64),
		executor.StringColumn("Command", 16), {Name: "Time", OrgName: "Time", Type: types.Int64Type}, executor.StringColumn("State", 64), executor.StringColumn("Info", 65535)}}
	for _, p := range s.procs.List() {
		if !all && p.User != s.user {
			continue
		}
		info := p.Info
		if !full && len(info) > 100 {
			info = info[:100]
		}
		res.Rows = append(res.Rows, []types.Datum{types.NewUint(p.ID), types.NewString(p.User), types.NewString(p.Host),
			nullIfEmpty(p.DB), types.NewString(p.Command), types.NewInt(p.TimeSec), types.NewString(""), nullIfEmpty(info)})
	}
	return res, nil
}

// kill runs KILL [CONNECTION | QUERY] id (own connections, or any with
// SUPER). KILL QUERY cancels the statement's context: it stops at its next
// wait for the cluster (a lock wait, a read, a commit) with 1317; SLEEP()
// and work on the SQL node are not interrupted.
func (s *Session) kill(_ context.Context, x *ast.KillStmt) (*executor.Result, error) {
	id := x.ConnectionID
	if x.Expr != nil {
		return nil, errno.NotSupported("KILL with an expression")
	}
	if s.procs == nil {
		return nil, errno.NotSupported("KILL without a server")
	}
	var owner string
	found := false
	for _, p := range s.procs.List() {
		if p.ID == id {
			owner, found = p.User, true
			break
		}
	}
	if !found {
		return nil, errno.New(1094, "Unknown thread id: %d", id)
	}
	if owner != s.user {
		if err := s.CheckGlobal(mysql.SuperPriv, "SUPER or CONNECTION_ADMIN"); err != nil {
			return nil, errno.New(1095, "You are not owner of thread %d", id)
		}
	}
	if x.Query {
		if id == s.connID {
			return &executor.Result{}, nil // the running statement is this KILL
		}
		if !s.procs.KillQuery(id) {
			return nil, errno.New(1094, "Unknown thread id: %d", id)
		}
		return &executor.Result{}, nil
	}
	if !s.procs.Kill(id) {
		return nil, errno.New(1094, "Unknown thread id: %d", id)
	}
	return &executor.Result{}, nil
}

// ProcessRows implements infoschema.Viewer: SHOW FULL PROCESSLIST's rows
// (the same columns, in information_schema.PROCESSLIST's order).
func (s *Session) ProcessRows() [][]types.Datum {
	res, err := s.showProcessList(true)
	if err != nil {
		return nil
	}
	return res.Rows
}
