package session

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/types"
)

// ProcessInfo is one connection of a SQL node (SHOW PROCESSLIST).
type ProcessInfo struct {
	ID             uint64
	User, Host, DB string
	Command        string // "Query", "Sleep", ...
	TimeSec        int64
	Info           string // the running statement ("" when idle)
}

// InstanceProcess is one connection of the cluster
// (information_schema.CLUSTER_PROCESSLIST): Instance is its node's status
// address.
type InstanceProcess struct {
	Instance string
	ProcessInfo
}

// KillRequest is one KILL [CONNECTION | QUERY] statement, as the node that
// owns the connection judges it: the connection's owner may be killed by
// User, any by a requester with Super (SUPER or CONNECTION_ADMIN, checked
// where the statement ran).
type KillRequest struct {
	ID    uint64
	Query bool // KILL QUERY: cancel the running statement only
	User  string
	Super bool
}

// Processes is what the server offers sessions about the cluster's
// connections.
type Processes interface {
	// List is this node's connections.
	List() []ProcessInfo
	// Kill runs r on the node that owns connection r.ID (this one or, with
	// global connection ids, another). Errors are MySQL errors: 1094 for
	// an id no live node has, 1095 when r may not kill it.
	Kill(ctx context.Context, r KillRequest) error
	// ClusterList is every live SQL node's connections; warnings name the
	// nodes that did not answer in time (their connections are missing).
	ClusterList(ctx context.Context) (procs []InstanceProcess, warnings []string)
}

// SetProcesses connects the session to the node's connection list.
func (s *Session) SetProcesses(p Processes) { s.procs = p }

// processColumns are SHOW PROCESSLIST's columns.
var processColumns = []executor.ResultColumn{
	{Name: "Id", OrgName: "Id", Type: types.Uint64Type}, executor.StringColumn("User", 32), executor.StringColumn("Host", 64), executor.StringColumn("db", 64),
	executor.StringColumn("Command", 16), {Name: "Time", OrgName: "Time", Type: types.Int64Type}, executor.StringColumn("State", 64), executor.StringColumn("Info", 65535)}

// showProcessList answers SHOW [FULL] PROCESSLIST: this node's connections
// (as TiDB, not the cluster's: CLUSTER_PROCESSLIST has those), every one
// with the PROCESS privilege, else the session's user's own.
func (s *Session) showProcessList(full bool) (*executor.Result, error) {
	if s.procs == nil {
		return nil, errno.NotSupported("SHOW PROCESSLIST without a server")
	}
	res := &executor.Result{Columns: processColumns}
	all := s.CheckGlobal(mysql.ProcessPriv, "PROCESS") == nil
	for _, p := range s.procs.List() {
		if all || p.User == s.user {
			res.Rows = append(res.Rows, processRow(p, full))
		}
	}
	return res, nil
}

// processRow is p as a SHOW PROCESSLIST row (Info cut to 100 characters
// unless full).
func processRow(p ProcessInfo, full bool) []types.Datum {
	info := p.Info
	if !full && len(info) > 100 {
		info = info[:100]
	}
	return []types.Datum{types.NewUint(p.ID), types.NewString(p.User), types.NewString(p.Host),
		nullIfEmpty(p.DB), types.NewString(p.Command), types.NewInt(p.TimeSec), types.NewString(""), nullIfEmpty(info)}
}

// kill runs KILL [CONNECTION | QUERY] id (own connections, or any with
// SUPER) on whichever node owns id. KILL QUERY cancels the statement's
// context: it stops at its next wait for the cluster (a lock wait, a
// read, a commit) with 1317, and a SLEEP() returns 1 at once (MySQL's
// answer when the SLEEP is all the statement does); other work on the SQL
// node is not interrupted.
func (s *Session) kill(ctx context.Context, x *ast.KillStmt) (*executor.Result, error) {
	if x.Expr != nil {
		return nil, errno.NotSupported("KILL with an expression")
	}
	if s.procs == nil {
		return nil, errno.NotSupported("KILL without a server")
	}
	if x.Query && x.ConnectionID == s.connID {
		return &executor.Result{}, nil // the running statement is this KILL
	}
	r := KillRequest{ID: x.ConnectionID, Query: x.Query, User: s.user,
		Super: s.CheckGlobal(mysql.SuperPriv, "SUPER or CONNECTION_ADMIN") == nil}
	if err := s.procs.Kill(ctx, r); err != nil {
		return nil, err
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

// ClusterProcessRows implements infoschema.Viewer: every live SQL node's
// connections the session may see (PROCESS: all, else its user's), as
// CLUSTER_PROCESSLIST rows (INSTANCE, then PROCESSLIST's columns). A node
// that did not answer is a warning of the statement (SHOW WARNINGS).
func (s *Session) ClusterProcessRows(ctx context.Context) ([][]types.Datum, error) {
	if s.procs == nil {
		return nil, errno.NotSupported("CLUSTER_PROCESSLIST without a server")
	}
	all := s.CheckGlobal(mysql.ProcessPriv, "PROCESS") == nil
	procs, warns := s.procs.ClusterList(ctx)
	s.warnMu.Lock()
	for _, w := range warns {
		s.extraWarnings = append(s.extraWarnings, executor.Warning{Level: "Warning", Code: errno.ErrUnknown, Msg: w})
	}
	s.warnMu.Unlock()
	var rows [][]types.Datum
	for _, p := range procs {
		if all || p.User == s.user {
			rows = append(rows, append([]types.Datum{types.NewString(p.Instance)}, processRow(p.ProcessInfo, true)...))
		}
	}
	return rows, nil
}
