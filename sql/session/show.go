package session

import (
	"context"
	"io"
	"sort"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/types"
)

// show answers the SHOW statements about the session itself: variables,
// status, warnings and processes; the executor answers the rest
// (executor.Show).
func (s *Session) show(ctx context.Context, x *ast.ShowStmt) (*executor.Result, error) {
	var res *executor.Result
	switch x.Tp {
	case ast.ShowVariables:
		res = &executor.Result{Columns: []executor.ResultColumn{executor.StringColumn("Variable_name", 64), executor.StringColumn("Value", 1024)}}
		names := make([]string, 0, len(defaultSysVars))
		for n := range defaultSysVars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d, _, _ := s.SysVar(n, x.GlobalScope)
			res.Rows = append(res.Rows, []types.Datum{types.NewString(n), types.NewString(d.String())})
		}
	case ast.ShowWarnings, ast.ShowErrors:
		var ws []executor.Warning
		for _, w := range s.warnings {
			if x.Tp == ast.ShowWarnings || w.Level == "Error" {
				ws = append(ws, w)
			}
		}
		if x.CountWarningsOrErrors {
			name := "@@session.warning_count"
			if x.Tp == ast.ShowErrors {
				name = "@@session.error_count"
			}
			return &executor.Result{Columns: []executor.ResultColumn{{Name: name, Type: types.Int64Type}},
				Rows: [][]types.Datum{{types.NewInt(int64(len(ws)))}}}, nil
		}
		res = &executor.Result{Columns: []executor.ResultColumn{executor.StringColumn("Level", 7),
			{Name: "Code", Type: types.Uint64Type}, executor.StringColumn("Message", 512)}}
		for _, w := range ws {
			res.Rows = append(res.Rows, []types.Datum{types.NewString(w.Level), types.NewUint(uint64(w.Code)), types.NewString(w.Msg)})
		}
	case ast.ShowStatus:
		res = &executor.Result{Columns: []executor.ResultColumn{executor.StringColumn("Variable_name", 64), executor.StringColumn("Value", 1024)}}
		if s.statusVars != nil {
			for _, v := range s.statusVars() {
				res.Rows = append(res.Rows, executor.StringRow(v.Name, v.Value))
			}
		}
	case ast.ShowProcessList:
		return s.showProcessList(x.Full) // process.go
	default:
		return s.exec.Show(ctx, x, s)
	}
	return executor.FilterShow(res, x, s)
}

// FieldList answers COM_FIELD_LIST: the columns of a table in the current
// database.
func (s *Session) FieldList(ctx context.Context, table string) ([]executor.ResultColumn, error) {
	return s.exec.FieldList(ctx, table, s)
}

// LoadData runs LOAD DATA LOCAL INFILE x with the file's content read from
// r (executor.LoadData), each batch of rows an INSERT run by Execute.
func (s *Session) LoadData(ctx context.Context, x *ast.LoadDataStmt, r io.Reader) (*executor.Result, error) {
	return s.exec.LoadData(ctx, x, r, s, s.Execute)
}
