package session

import (
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/stratadb/strata/sql/types"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/trace"
)

// SlowQuery is one entry of a SQL node's slow query log: a JSON line of
// the file, a row of information_schema.SLOW_QUERY (field names as TiDB's
// slow log where they apply).
type SlowQuery struct {
	Time      time.Time `json:"time"`       // when the statement ended
	ConnID    uint64    `json:"conn_id"`    // the connection (SHOW PROCESSLIST's Id)
	User      string    `json:"user"`       // the account's user name
	Host      string    `json:"host"`       // the client's host
	DB        string    `json:"db"`         // the current database
	Type      string    `json:"type"`       // Select, Update, ... (strata_sql_query_duration_seconds' label)
	QueryTime float64   `json:"query_time"` // seconds, from receiving the command to answering it
	Digest    string    `json:"digest"`     // of the normalized statement: the same for every literal
	Prepared  bool      `json:"prepared"`   // run by COM_STMT_EXECUTE
	Succ      bool      `json:"succ"`
	ErrorCode uint16    `json:"error_code,omitempty"` // the MySQL error the client got
	Rows      uint64    `json:"rows"`                 // rows sent, or affected rows
	// Stages is the statement's time per stage in seconds, by
	// execdetails stage name; stages it did not spend time in are absent.
	Stages map[string]float64 `json:"stages,omitempty"`
	// SlowestStage is the stage it spent most time in.
	SlowestStage string `json:"slowest_stage,omitempty"`
	Query        string `json:"query"` // the statement text (cut at 4 KiB)
	// Trace is its kept trace (sql/trace), absent when tracing was off.
	Trace *trace.Trace `json:"trace,omitempty"`
}

// SlowQueryLog is what a server offers sessions about its slow query log
// (the Processes of SetProcesses may implement it).
type SlowQueryLog interface {
	// SlowQueries returns the entries of the log's files, oldest first.
	SlowQueries() ([]SlowQuery, error)
}

// SlowQueryRows implements infoschema.Viewer: the node's slow queries, all
// of them with the PROCESS privilege, else the session's user's own.
func (s *Session) SlowQueryRows() ([][]types.Datum, error) {
	l, ok := s.procs.(SlowQueryLog)
	if !ok {
		return nil, nil
	}
	entries, err := l.SlowQueries()
	if err != nil {
		return nil, err
	}
	all := s.CheckGlobal(mysql.ProcessPriv, "PROCESS") == nil
	var rows [][]types.Datum
	for _, e := range entries {
		if !all && e.User != s.user {
			continue
		}
		rows = append(rows, []types.Datum{
			types.NewString(e.Time.In(time.Local).Format("2006-01-02 15:04:05.000000")),
			types.NewString(e.User), types.NewString(e.Host), types.NewUint(e.ConnID), types.NewFloat(e.QueryTime),
			nullIfEmpty(e.DB), types.NewString(e.Type), types.NewString(e.Digest), boolInt(e.Prepared), boolInt(e.Succ),
			types.NewUint(uint64(e.ErrorCode)), types.NewUint(e.Rows),
		})
		row := &rows[len(rows)-1]
		for st := range execdetails.NumStages {
			*row = append(*row, types.NewFloat(e.Stages[st.String()]))
		}
		*row = append(*row, types.NewString(e.Query))
	}
	return rows, nil
}

// StmtSummary is one statement digest's aggregate over a window
// (information_schema.STATEMENTS_SUMMARY[_HISTORY]).
type StmtSummary struct {
	Begin, End           time.Time
	Schema, Digest       string
	DigestText, StmtType string
	Prepared             bool
	ExecCount, Errors    uint64
	SumLatency           time.Duration
	MaxLatency           time.Duration
	MinLatency           time.Duration
	P99Latency           time.Duration // the upper bound of its power-of-two bucket
	SumStages            [execdetails.NumStages]time.Duration
	Rows                 uint64
	FirstSeen, LastSeen  time.Time
	Sample               string // one execution's text
}

// StmtSummaries is what a server offers sessions about the statements it
// ran (the Processes of SetProcesses may implement it).
type StmtSummaries interface {
	// StatementsSummary returns the current window's digests, or with
	// history the earlier windows'.
	StatementsSummary(history bool) []StmtSummary
}

// StatementsSummaryRows implements infoschema.Viewer: the node's
// statement summary, with the PROCESS privilege (it spans every user).
func (s *Session) StatementsSummaryRows(history bool) ([][]types.Datum, error) {
	p, ok := s.procs.(StmtSummaries)
	if !ok || s.CheckGlobal(mysql.ProcessPriv, "PROCESS") != nil {
		return nil, nil
	}
	ts := func(t time.Time) types.Datum { return types.NewString(t.In(time.Local).Format("2006-01-02 15:04:05")) }
	ns := func(d time.Duration) types.Datum { return types.NewUint(uint64(d.Nanoseconds())) }
	var rows [][]types.Datum
	for _, e := range p.StatementsSummary(history) {
		rows = append(rows, []types.Datum{
			ts(e.Begin), ts(e.End), types.NewString(e.StmtType), nullIfEmpty(e.Schema), nullIfEmpty(e.Digest), nullIfEmpty(e.DigestText),
			types.NewUint(e.ExecCount), types.NewUint(e.Errors), ns(e.SumLatency), ns(e.MaxLatency), ns(e.MinLatency),
			ns(e.SumLatency / time.Duration(max(e.ExecCount, 1))), ns(e.P99Latency),
			types.NewUint(e.Rows), types.NewUint(e.Rows / max(e.ExecCount, 1)), boolInt(e.Prepared),
		})
		row := &rows[len(rows)-1]
		for _, d := range e.SumStages {
			*row = append(*row, ns(d/time.Duration(max(e.ExecCount, 1))))
		}
		*row = append(*row, ts(e.FirstSeen), ts(e.LastSeen), nullIfEmpty(e.Sample))
	}
	return rows, nil
}

// nullIfEmpty is s as a datum, NULL when s is empty.
func nullIfEmpty(s string) types.Datum {
	if s == "" {
		return types.NullDatum
	}
	return types.NewString(s)
}
