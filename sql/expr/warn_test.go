package expr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
)

// warnEnv is a session that records the conditions evaluation raises, or
// fails on them (a strict write).
type warnEnv struct {
	env
	fail  bool
	warns []string
}

func (e *warnEnv) Warn(code uint16, msg string) error {
	if e.fail {
		return errno.New(code, "%s", msg)
	}
	e.warns = append(e.warns, fmt.Sprintf("%d %s", code, msg))
	return nil
}

// TestConversionWarnings: a string read as a number or a date that it is
// not all of gives MySQL's value and warning 1292 through the Env's
// Warner (wrapped as the planner wraps it); values that convert whole say
// nothing.
func TestConversionWarnings(t *testing.T) {
	for _, c := range []struct{ expr, want, warn string }{
		{"CAST('12abc' AS SIGNED)", "12", "1292 Truncated incorrect INTEGER value: '12abc'"},
		{"CAST('-3x' AS SIGNED)", "-3", "1292 Truncated incorrect INTEGER value: '-3x'"},
		{"CAST('1.5' AS SIGNED)", "1", "1292 Truncated incorrect INTEGER value: '1.5'"},
		{"CAST('1e3' AS UNSIGNED)", "1", "1292 Truncated incorrect INTEGER value: '1e3'"},
		{"CAST('-1x' AS UNSIGNED)", "18446744073709551615", "1292 Truncated incorrect INTEGER value: '-1x'"},
		{"CAST('' AS SIGNED)", "0", "1292 Truncated incorrect INTEGER value: ''"},
		{"CAST(' 42' AS SIGNED)", "42", ""},
		{"CAST('x' AS DECIMAL)", "0", "1292 Truncated incorrect DECIMAL value: 'x'"},
		{"CAST('1.25x' AS DECIMAL(5,2))", "1.25", "1292 Truncated incorrect DECIMAL value: '1.25x'"},
		{"CAST('1e2' AS DECIMAL(6,1))", "100.0", ""},
		{"CAST(' 2.5 ' AS DECIMAL(3,1))", "2.5", ""},
		{"CAST('1.5x' AS DOUBLE)", "1.5", "1292 Truncated incorrect DOUBLE value: '1.5x'"},
		{"CAST('2.5' AS DOUBLE)", "2.5", ""},
		{"'1a' + 1", "2", "1292 Truncated incorrect DOUBLE value: '1a'"},
		{"'abc' * 2", "0", "1292 Truncated incorrect DOUBLE value: 'abc'"},
		{"' 12 ' + 0", "12", ""},
		{"'' + 0", "0", ""},
		{"CAST('2020-13-45' AS DATE)", "NULL", "1292 Incorrect datetime value: '2020-13-45'"},
		{"CAST('2020-02-30 10:00:00' AS DATETIME)", "NULL", "1292 Incorrect datetime value: '2020-02-30 10:00:00'"},
		{"CAST('2020-02-28' AS DATE)", "2020-02-28", ""},
		{"CAST('abc' AS TIME)", "NULL", "1292 Truncated incorrect time value: 'abc'"},
		{"CAST('900:00:00' AS TIME)", "838:59:59", "1292 Truncated incorrect time value: '900:00:00'"},
		{"DATE_ADD('2020-13-45', INTERVAL 1 DAY)", "NULL", "1292 Incorrect datetime value: '2020-13-45'"},
		{"'2020-02-30' - INTERVAL 1 DAY", "NULL", "1292 Incorrect datetime value: '2020-02-30'"},
		{"DATE_ADD('2020-02-28', INTERVAL 1 DAY)", "2020-02-29", ""},
	} {
		sess := &warnEnv{}
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Env: wrapEnv{sess}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(nil)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
		if c.warn == "" {
			require.Empty(t, sess.warns, c.expr)
		} else {
			require.Equal(t, []string{c.warn}, sess.warns, c.expr)
		}

		// In a strict write the condition ends the statement.
		strict := &warnEnv{fail: true}
		e, err = expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Env: strict})
		require.NoError(t, err, c.expr)
		_, err = e.Eval(nil)
		var me *errno.Error
		if c.warn == "" {
			require.NoError(t, err, c.expr)
		} else {
			require.True(t, errors.As(err, &me), c.expr)
			require.Equal(t, errno.ErrTruncatedWrongValue, me.Code, c.expr)
		}

		// Without a Warner (the stores) the value is the same and nothing
		// is said.
		e, err = expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Env: env{}})
		require.NoError(t, err, c.expr)
		d, err = e.Eval(nil)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
	}
}

// TestDivisionByZeroWarner: division by zero is condition 1365 of the
// same Warner.
func TestDivisionByZeroWarner(t *testing.T) {
	sess := &warnEnv{}
	e, err := expr.Compile(parseExpr(t, "1 DIV 0"), &expr.Ctx{Env: sess})
	require.NoError(t, err)
	d, err := e.Eval(nil)
	require.NoError(t, err)
	require.True(t, d.IsNull())
	require.Equal(t, []string{"1365 Division by 0"}, sess.warns)
}
