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
		if x.CountWarningsOrErrors {
			return &executor.Result{Columns: []executor.ResultColumn{{Name: "@@session.warning_count", Type: types.Int64Type}},
				Rows: [][]types.Datum{{types.NewInt(0)}}}, nil
		}
		res = &executor.Result{Columns: []executor.ResultColumn{executor.StringColumn("Level", 7), executor.StringColumn("Code", 4), executor.StringColumn("Message", 512)}}
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
