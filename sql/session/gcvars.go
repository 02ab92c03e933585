package session

import (
	"context"
	"strings"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// The GC settings are cluster-wide global variables kept by PD (not by this
// SQL node): tidb_gc_life_time and tidb_gc_run_interval, Go duration
// strings as in TiDB ("10m0s"). They exist only in GLOBAL scope.
var gcVars = map[string]bool{"tidb_gc_life_time": true, "tidb_gc_run_interval": true}

const gcVarTimeout = 5 * time.Second

func (s *Session) gcSettings() (kv.GCSettings, error) {
	g, ok := s.dom.Store().(kv.GCSettings)
	if !ok {
		return nil, errno.NotSupported("GC settings on this storage")
	}
	return g, nil
}

// gcSysVar returns the value of a GC variable (ok false for other names).
func (s *Session) gcSysVar(name string) (d types.Datum, ft types.FieldType, ok bool, err error) {
	if !gcVars[name] {
		return d, ft, false, nil
	}
	g, err := s.gcSettings()
	if err != nil {
		return d, ft, true, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), gcVarTimeout)
	defer cancel()
	life, interval, err := g.GCConfig(ctx)
	if err != nil {
		return d, ft, true, err
	}
	v := life
	if name == "tidb_gc_run_interval" {
		v = interval
	}
	str := v.String()
	ft = types.VarcharType
	ft.Flen = len(str)
	return types.NewString(str), ft, true, nil
}

// setGCSysVar handles SET [GLOBAL] of a GC variable (handled false for
// other names).
func (s *Session) setGCSysVar(ctx context.Context, name string, global bool, val types.Datum) (handled bool, err error) {
	if !gcVars[name] {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	text := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	d, perr := time.ParseDuration(text)
	if perr != nil || d < time.Millisecond {
		return true, errno.New(1231, "Variable '%s' can't be set to the value of '%s' (a duration such as '10m0s')", name, text)
	}
	g, err := s.gcSettings()
	if err != nil {
		return true, err
	}
	life, interval := d, time.Duration(0)
	if name == "tidb_gc_run_interval" {
		life, interval = 0, d
	}
	return true, g.SetGCConfig(ctx, life, interval)
}
