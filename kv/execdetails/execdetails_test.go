package execdetails

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDetails(t *testing.T) {
	bg := context.Background()
	require.Nil(t, From(bg))
	From(bg).Add(KVRead, time.Second) // a nil Details ignores adds
	require.Zero(t, From(bg).Get(KVRead))

	var x Details
	ctx := With(bg, &x)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { From(ctx).Add(KVRead, time.Millisecond) })
	}
	wg.Wait()
	From(ctx).Add(Backoff, 3*time.Millisecond)
	require.Equal(t, 8*time.Millisecond, x.Get(KVRead))
	require.Equal(t, 3*time.Millisecond, x.Get(Backoff))
	x.Reset()
	for s := range NumStages {
		require.Zero(t, x.Get(s), s.String())
	}
	require.Equal(t, "lock_keys", LockKeys.String())
}
