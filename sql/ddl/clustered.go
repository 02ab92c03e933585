package ddl

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// ClusteredIndexVar is TiDB's tidb_enable_clustered_index (SESSION and
// GLOBAL): how a PRIMARY KEY declared without CLUSTERED or NONCLUSTERED
// is stored. ON (TiDB 8.5's default) clusters every key (a single
// integer column as an int handle, any other key as a common handle);
// INT_ONLY clusters a single integer column only; OFF makes every key
// NONCLUSTERED.
const ClusteredIndexVar = "tidb_enable_clustered_index"

// Clustered is how a new table's PRIMARY KEY is stored.
type Clustered int8

const (
	// ClusteredIntOnly: a single integer column is the row handle; any
	// other key is a unique index over a hidden _tidb_rowid.
	ClusteredIntOnly Clustered = iota
	// ClusteredAlways: the key is the row handle (CLUSTERED).
	ClusteredAlways
	// ClusteredNever: the key is a unique index (NONCLUSTERED).
	ClusteredNever
)

// Clustering is how a PRIMARY KEY with keyword tp is stored: as the
// keyword says, else as env's tidb_enable_clustered_index says (env may
// be nil: the default).
func Clustering(tp ast.PrimaryKeyType, env expr.Env) Clustered {
	switch tp {
	case ast.PrimaryKeyTypeClustered:
		return ClusteredAlways
	case ast.PrimaryKeyTypeNonClustered:
		return ClusteredNever
	}
	if env == nil {
		return ClusteredIntOnly
	}
	v, _, err := env.SysVar(ClusteredIndexVar, false)
	if err != nil || v.Kind() != types.KindBytes {
		return ClusteredIntOnly
	}
	switch strings.ToUpper(string(v.Bytes())) {
	case "OFF":
		return ClusteredNever
	case "ON":
		return ClusteredAlways
	}
	return ClusteredIntOnly
}

// ClusteredWarning is the warning of a CREATE TABLE whose CLUSTERED
// PRIMARY KEY is stored NONCLUSTERED, nil when it is stored as declared:
// a key with a prefix part cannot be clustered, and a TiDB dump must
// load.
func ClusteredWarning(x *ast.CreateTableStmt, t *model.TableInfo) error {
	if t.PKIsHandle || t.CommonHandle {
		return nil
	}
	clustered := false
	for _, cd := range x.Cols {
		for _, o := range cd.Options {
			clustered = clustered || (o.Tp == ast.ColumnOptionPrimaryKey && o.PrimaryKeyTp == ast.PrimaryKeyTypeClustered)
		}
	}
	for _, c := range x.Constraints {
		clustered = clustered || (c.Tp == ast.ConstraintPrimaryKey && c.Option != nil && c.Option.PrimaryKeyTp == ast.PrimaryKeyTypeClustered)
	}
	if !clustered {
		return nil
	}
	return errno.New(errno.ErrUnknown, "the CLUSTERED PRIMARY KEY of %s is stored NONCLUSTERED: a key with a prefix part cannot be clustered", t.Name)
}

// ErrUnsupportedDDLOperation is TiDB's 8200, a schema change the table's
// layout cannot take.
const ErrUnsupportedDDLOperation uint16 = 8200

// CheckDropPrimary refuses to drop t's PRIMARY KEY when it is clustered:
// the rows are keyed by it (TiDB's 8200).
func CheckDropPrimary(t *model.TableInfo) error {
	if t.PKIsHandle || t.CommonHandle {
		return errno.New(ErrUnsupportedDDLOperation, "Unsupported drop primary key when the table is using clustered index")
	}
	return nil
}

// CheckAddPrimary refuses ALTER TABLE ADD PRIMARY KEY ... CLUSTERED: the
// existing rows are keyed by their handles (TiDB's 8200).
func CheckAddPrimary(c *ast.Constraint) error {
	if c.Option != nil && c.Option.PrimaryKeyTp == ast.PrimaryKeyTypeClustered {
		return errno.New(ErrUnsupportedDDLOperation, "Adding clustered primary key is not supported. Please consider adding NONCLUSTERED primary key instead")
	}
	return nil
}
