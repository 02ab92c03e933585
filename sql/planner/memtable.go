package planner

import (
	"context"
	"strings"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/types"
)

// MemTable is a read-only table whose rows are computed when a statement
// reads it (information_schema). Rows returns every row, each with one datum
// per column of the table's TableInfo, in column order; the planner filters,
// sorts and limits them like any other source. env is the reading session
// (what it may see is the implementation's business).
type MemTable interface {
	Rows(ctx context.Context, env expr.Env) ([][]types.Datum, error)
}

// SystemSchema resolves the tables of system databases.
type SystemSchema interface {
	// IsSystemDB reports whether db (any case) is served by this schema.
	IsSystemDB(db string) bool
	// Table returns the definition and rows of db.name: ERROR 1146 when
	// db has no such table.
	Table(db, name string) (*model.TableInfo, MemTable, error)
}

// MemTableScan reads every row of a MemTable (EXPLAIN: MemTableScan).
type MemTableScan struct {
	BasePlan
	Src *Source
	Env expr.Env
}

func (p *MemTableScan) info() (string, string) { return tableObject(p.Src), "" }

// openSystemTable resolves a table of a system database.
func (pl *Planner) openSystemTable(dbName, name, alias string) (*Source, error) {
	tbl, mt, err := pl.System.Table(dbName, name)
	if err != nil {
		return nil, err
	}
	if alias == "" {
		alias = strings.ToLower(tbl.Name)
	}
	db := &model.DBInfo{Name: strings.ToLower(dbName)}
	s := &Source{DB: db, Table: tbl, Alias: alias, Cols: tbl.Schema(), Mem: mt}
	if alias != strings.ToLower(tbl.Name) {
		s.Cols = tbl.BuildSchema(alias)
	}
	return s, nil
}

// ErrReadOnlySystemTable is the error for writes to and locking reads of a
// system table: MySQL's 1044 for information_schema. user is env.User()
// ("name@host").
func ErrReadOnlySystemTable(user string, s *Source) error {
	name, host := user, ""
	if i := strings.LastIndexByte(user, '@'); i >= 0 {
		name, host = user[:i], user[i+1:]
	}
	return privilege.DBDenied(name, host, s.DB.Name)
}
