package session

import (
	"strings"
	"sync/atomic"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/types"
)

// tidb_enable_check_constraint (executor.EnableCheckVar) is this SQL
// node's, GLOBAL only and not persisted, as TiDB's. Its default is ON
// (TiDB's is OFF): CHECK constraints work as in MySQL 8.0.16+; OFF makes
// DDL ignore CHECK clauses with a warning.
var checksOff atomic.Bool

// checkSysVar reads the variable (ok false for other names).
func checkSysVar(name string) (types.Datum, types.FieldType, bool) {
	if name != executor.EnableCheckVar {
		return types.Datum{}, types.FieldType{}, false
	}
	return boolInt(!checksOff.Load()), types.Int64Type, true
}

// setCheckSysVar runs SET GLOBAL tidb_enable_check_constraint (handled
// false for other names).
func setCheckSysVar(name string, global bool, val types.Datum) (handled bool, err error) {
	if name != executor.EnableCheckVar {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	raw := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	switch strings.ToUpper(raw) {
	case "1", "ON", "TRUE":
		checksOff.Store(false)
	case "0", "OFF", "FALSE":
		checksOff.Store(true)
	default:
		return true, wrongValue(name, raw)
	}
	return true, nil
}
