package session

import (
	"strconv"
	"strings"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/types"
)

// Memory control (package memory): tidb_mem_quota_query and
// tidb_enable_tmp_storage_on_oom are ordinary session / global variables
// (sysvars.go) read when a statement starts; tidb_server_memory_limit is
// GLOBAL only and lives in memory.NodeLimiter (this SQL node; not
// persisted).
const serverMemLimitVar = "tidb_server_memory_limit"

// StatementMemory implements executor.MemoryTracked.
func (s *Session) StatementMemory() *memory.Statement { return s.mem }

// MemoryBytes is what the session's running statement tracks (0 when
// idle): SHOW PROCESSLIST's Mem.
func (s *Session) MemoryBytes() int64 { return s.mem.Bytes() }

// startStatementMemory starts tracking a top-level statement with the
// session's quota (nested Executes share it); the caller runs the
// returned end.
func (s *Session) startStatementMemory() (end func()) {
	s.memDepth++
	if s.memDepth > 1 {
		return s.endNested
	}
	q, err := strconv.ParseInt(s.varValue("tidb_mem_quota_query"), 10, 64)
	if err != nil {
		q = memory.DefaultQuota
	}
	s.mem.Start(q, s.varValue("tidb_enable_tmp_storage_on_oom") == "1")
	return s.endStatement
}

func (s *Session) endNested() { s.memDepth-- }

func (s *Session) endStatement() {
	s.memDepth--
	s.mem.End()
}

// serverMemSysVar reads tidb_server_memory_limit (ok false for other
// names).
func serverMemSysVar(name string) (types.Datum, types.FieldType, bool) {
	if name != serverMemLimitVar {
		return types.Datum{}, types.FieldType{}, false
	}
	v := memory.NodeLimiter.Text()
	ft := types.VarcharType
	ft.Flen = len(v)
	return types.NewString(v), ft, true
}

// setServerMemSysVar runs SET GLOBAL tidb_server_memory_limit (handled
// false for other names).
func setServerMemSysVar(name string, global bool, val types.Datum) (handled bool, err error) {
	if name != serverMemLimitVar {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	text := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	if !memory.NodeLimiter.Set(text) {
		return true, errno.New(errno.ErrWrongValueForVar, "Variable '%s' can't be set to the value of '%s' (0, a size such as 4GB, or a percentage of memory such as 80%%)", name, text)
	}
	return true, nil
}
