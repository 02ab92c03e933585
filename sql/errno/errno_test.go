package errno_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
)

func TestFromErrorCoded(t *testing.T) {
	cases := []struct {
		err   error
		code  uint16
		state string
		msg   string
	}{
		{&expr.RangeError{Msg: "BIGINT value is out of range in '(2, 9223372036854775807)'"}, 1690, "22003", "BIGINT value is out of range in '(2, 9223372036854775807)'"},
		{fmt.Errorf("executor: %w", &kvclient.CopExprError{RegionID: 7, Code: 1690, Msg: "DECIMAL value is out of range in '(1, 2)'"}), 1690, "22003", "DECIMAL value is out of range in '(1, 2)'"},
		{&kvclient.CopExprError{RegionID: 7, Code: 1365, Msg: "Division by 0"}, 1365, "22012", "Division by 0"},
		{errors.New("boom"), errno.ErrUnknown, "HY000", "boom"},
	}
	for _, tc := range cases {
		e := errno.FromError(tc.err)
		require.Equal(t, tc.code, e.Code, tc.err.Error())
		require.Equal(t, tc.state, e.State, tc.err.Error())
		require.Equal(t, tc.msg, e.Msg, tc.err.Error())
	}
}
