package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a:1", []string{"a:1"}},
		{" a:1, b:2 ,,c:3 ", []string{"a:1", "b:2", "c:3"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, SplitList(tt.in), tt.in)
	}
}

func TestSetupLogger(t *testing.T) {
	for _, ok := range []string{"debug", "info", "warn", "error", "INFO"} {
		_, err := SetupLogger(ok)
		require.NoError(t, err, ok)
	}
	_, err := SetupLogger("loud")
	require.ErrorContains(t, err, `"loud"`)
}
