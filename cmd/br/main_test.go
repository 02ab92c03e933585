package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageErrors: bad command lines exit 2 with a message naming the
// problem, before any connection is tried.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{nil, "usage: br"},
		{[]string{"backup"}, "usage: br"},
		{[]string{"backup", "incremental"}, "usage: br"},
		{[]string{"backup", "full", "--pd", "127.0.0.1:1"}, "--storage is required"},
		{[]string{"backup", "full", "--storage", "s3://b/x"}, "only local:///absolute/path"},
		{[]string{"restore", "full", "--storage", "local:///tmp/x", "--ratelimit", "5"}, "flag provided but not defined: -ratelimit"},
		{[]string{"backup", "full", "--storage", "local:///tmp/x", "--ratelimit", "-1"}, "--ratelimit must be >= 0"},
		{[]string{"backup", "full", "--storage", "local:///tmp/x", "extra"}, "unexpected arguments"},
		{[]string{"backup", "full", "--storage", "local:///tmp/x", "--cluster-ssl-ca", "/nonexistent/ca.pem"}, "br:"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut)
		require.Equal(t, 2, code, "%v: %s", tc.args, errOut.String())
		require.Contains(t, errOut.String(), tc.msg, "%v", tc.args)
	}
}
