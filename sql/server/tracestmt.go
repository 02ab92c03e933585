package server

import (
	"context"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/trace"
	"github.com/stratadb/strata/sql/types"
)

// traceStmt runs TRACE [FORMAT='row'] <stmt>: the statement runs as
// usual (its result is discarded, its effects are not) with spans
// recorded whatever strata_enable_trace says, and the answer is its span
// tree in TiDB's row format: operation (indented by depth), startTS,
// duration.
func (c *clientConn) traceStmt(ctx context.Context, x *ast.TraceStmt) (*executor.Result, error) {
	if x.TracePlan {
		return nil, errno.NotSupported("TRACE PLAN")
	}
	if f := strings.ToLower(x.Format); f != "" && f != "row" {
		return nil, errno.New(errno.ErrNotSupportedYet, "TRACE FORMAT='%s' is not supported; use FORMAT='row'", x.Format)
	}
	if _, ok := x.Stmt.(*ast.TraceStmt); ok {
		return nil, errno.NotSupported("nested TRACE")
	}
	start := time.Now()
	c.details.Begin(start, true)
	if _, err := c.sess.Execute(ctx, x.Stmt); err != nil {
		return nil, err
	}
	total := time.Since(start)
	var spans []execdetails.Span
	spans, _ = c.details.Spans(spans)
	ts := make([]trace.Span, len(spans))
	for i, s := range spans {
		ts[i] = trace.Span{Name: s.Name, StartNS: int64(s.Start), DurNS: int64(s.Dur), RPC: s.RPC,
			Region: s.Region, Store: s.Store, Retries: s.Retries, Failed: s.Failed}
	}
	res := &executor.Result{Columns: []executor.ResultColumn{
		executor.StringColumn("operation", 256), executor.StringColumn("startTS", 32), executor.StringColumn("duration", 32)}}
	for _, n := range trace.Tree(session.StmtLabel(x.Stmt), total, ts) {
		op := n.Label()
		if n.Depth > 0 {
			op = strings.Repeat("  ", n.Depth) + "├─" + op
		}
		at := start.Add(time.Duration(n.StartNS))
		res.Rows = append(res.Rows, []types.Datum{types.NewString(op),
			types.NewString(at.Format("15:04:05.000000")), types.NewString(time.Duration(n.DurNS).String())})
	}
	return res, nil
}
