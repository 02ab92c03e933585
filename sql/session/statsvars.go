package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// The auto-analyze settings (package statistics, auto.go) are cluster-wide
// global variables kept with the statistics: tidb_enable_auto_analyze
// (ON/OFF) and tidb_auto_analyze_ratio (modifications per analyzed row
// that trigger an analyze). They exist only in GLOBAL scope; a change
// reaches the other SQL nodes within a statistics lease.
const (
	autoAnalyzeVar      = "tidb_enable_auto_analyze"
	autoAnalyzeRatioVar = "tidb_auto_analyze_ratio"
)

// statsSysVar returns the value of an auto-analyze variable (ok false for
// other names).
func (s *Session) statsSysVar(name string) (types.Datum, types.FieldType, bool) {
	a := s.dom.Stats().AutoSettings()
	switch name {
	case autoAnalyzeVar:
		v := "OFF"
		if a.Enabled {
			v = "ON"
		}
		ft := types.VarcharType
		ft.Flen = len(v)
		return types.NewString(v), ft, true
	case autoAnalyzeRatioVar:
		return types.NewFloat(a.Ratio), types.DoubleType, true
	}
	return types.Datum{}, types.FieldType{}, false
}

// setStatsSysVar handles SET [GLOBAL] of an auto-analyze variable (handled
// false for other names).
func (s *Session) setStatsSysVar(ctx context.Context, name string, global bool, val types.Datum) (handled bool, err error) {
	if name != autoAnalyzeVar && name != autoAnalyzeRatioVar {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	text := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	a := s.dom.Stats().AutoSettings()
	switch name {
	case autoAnalyzeVar:
		switch strings.ToUpper(text) {
		case "ON", "1", "TRUE":
			a.Enabled = true
		case "OFF", "0", "FALSE":
			a.Enabled = false
		default:
			return true, errno.New(errno.ErrWrongValueForVar, "Variable '%s' can't be set to the value of '%s'", name, text)
		}
	case autoAnalyzeRatioVar:
		r, perr := strconv.ParseFloat(text, 64)
		if perr != nil || r <= 0 {
			return true, errno.New(errno.ErrWrongValueForVar, "Variable '%s' can't be set to the value of '%s' (a number above 0, such as 0.5)", name, text)
		}
		a.Ratio = r
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return true, s.dom.Stats().SetAutoSettings(ctx, a)
}
