package session

import (
	"math"
	"time"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// @@timestamp is MySQL's session clock: SET timestamp = N (seconds since
// the epoch, with a fraction down to microseconds) makes NOW(),
// CURRENT_TIMESTAMP, CURDATE(), UNIX_TIMESTAMP() and the CURRENT_TIMESTAMP
// defaults of the session's statements read that instant until SET
// timestamp = DEFAULT (or 0) gives the clock back (mysqlbinlog's output and
// tests rely on it). Reading it gives the instant NOW() reads, as a DOUBLE.

// maxUserTimestamp bounds the values MySQL 8.0.28+ accepts (up to
// '3001-01-18 23:59:59.999999' UTC).
const maxUserTimestamp = 32536771200

// timestampFt prints @@timestamp with microseconds, as MySQL.
var timestampFt = func() types.FieldType {
	ft := types.DoubleType
	ft.Decimal = 6
	return ft
}()

// timestampSysVar answers @@timestamp.
func (s *Session) timestampSysVar(global bool) (types.Datum, types.FieldType, error) {
	if global {
		return types.NullDatum, types.FieldType{}, errno.New(1238, "Variable 'timestamp' is a SESSION variable")
	}
	t := s.Now()
	return types.NewFloat(float64(t.UnixMicro()) / 1e6), timestampFt, nil
}

// setTimestamp runs SET timestamp = val (NULL: DEFAULT).
func (s *Session) setTimestamp(given string, global bool, val types.Datum) error {
	if global {
		return errno.New(errno.ErrLocalVariable, "Variable '%s' is a SESSION variable and can't be used with SET GLOBAL", given)
	}
	if val.IsNull() {
		s.userTime = time.Time{}
		return nil
	}
	f, ok := types.ToFloat(val)
	if !ok { // a DECIMAL is text too: only a number's text passes

		return errno.New(1232, "Incorrect argument type to variable '%s'", given)
	}
	if f < 0 || f >= maxUserTimestamp || math.IsNaN(f) {
		return wrongValue(given, string(types.AppendText(nil, val, nil)))
	}
	if f == 0 {
		s.userTime = time.Time{}
		return nil
	}
	s.userTime = time.UnixMicro(int64(math.Round(f * 1e6)))
	return nil
}
