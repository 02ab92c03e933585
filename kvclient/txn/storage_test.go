package txn

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
)

func TestMapErr(t *testing.T) {
	conflict := &kvclient.WriteConflictError{StartTS: 1, ConflictTS: 2, Key: []byte("k")}
	tests := []struct {
		name  string
		in    error
		check func(t *testing.T, err error)
	}{
		{"nil", nil, func(t *testing.T, err error) { require.NoError(t, err) }},
		{"already exists", &kvclient.AlreadyExistError{Key: []byte("k")}, func(t *testing.T, err error) {
			var ke *kv.KeyExistsError
			require.ErrorAs(t, err, &ke)
		}},
		{"conflict", fmt.Errorf("region 1: %w", conflict), func(t *testing.T, err error) {
			var wc *kv.WriteConflictError
			require.ErrorAs(t, err, &wc)
			require.Equal(t, uint64(2), wc.ConflictCommitTS)
		}},
		{"undetermined", kvclient.ErrUndetermined, func(t *testing.T, err error) { require.ErrorIs(t, err, kv.ErrUndetermined) }},
		{"unavailable", kvclient.ErrRegionUnavailable, func(t *testing.T, err error) { require.ErrorIs(t, err, kv.ErrRegionUnavailable) }},
		{"deadline", context.DeadlineExceeded, func(t *testing.T, err error) { require.ErrorIs(t, err, context.DeadlineExceeded) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, mapErr(tt.in)) })
	}
}
