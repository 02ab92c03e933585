package session

import (
	"strconv"
	"strings"
	"time"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/trace"
	"github.com/stratadb/strata/sql/types"
)

// Trace sampling (package sql/trace) is this SQL node's, GLOBAL only and
// not persisted: strata_enable_trace turns span recording on or off,
// strata_trace_keep_threshold (milliseconds) keeps the trace of every
// statement at least that slow (0: only those slower than their digest's
// p95, and slow log entries).
const (
	enableTraceVar   = "strata_enable_trace"
	traceKeepVar     = "strata_trace_keep_threshold"
	traceKeepVarHelp = "a number of milliseconds, 0 or more"
)

// traceSysVar reads the trace variables (ok false for other names).
func traceSysVar(name string) (types.Datum, types.FieldType, bool) {
	switch name {
	case enableTraceVar:
		return boolInt(trace.Enabled()), types.Int64Type, true
	case traceKeepVar:
		return types.NewInt(trace.KeepThreshold().Milliseconds()), types.Int64Type, true
	}
	return types.Datum{}, types.FieldType{}, false
}

// setTraceSysVar runs SET GLOBAL of a trace variable (handled false for
// other names).
func setTraceSysVar(name string, global bool, val types.Datum) (handled bool, err error) {
	if name != enableTraceVar && name != traceKeepVar {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	raw := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	if name == enableTraceVar {
		switch strings.ToUpper(raw) {
		case "1", "ON", "TRUE":
			trace.SetEnabled(true)
		case "0", "OFF", "FALSE":
			trace.SetEnabled(false)
		default:
			return true, wrongValue(name, raw)
		}
		return true, nil
	}
	ms, err := strconv.ParseFloat(raw, 64)
	if err != nil || ms < 0 {
		return true, errno.New(errno.ErrWrongValueForVar, "Variable '%s' can't be set to the value of '%s' (%s)", name, raw, traceKeepVarHelp)
	}
	trace.SetKeepThreshold(time.Duration(ms * float64(time.Millisecond)))
	return true, nil
}
