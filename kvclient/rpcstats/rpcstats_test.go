package rpcstats

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCounter(t *testing.T) {
	bg := context.Background()
	require.Nil(t, From(bg))
	From(bg).AddCop(1) // a nil Counter ignores adds
	require.Zero(t, From(bg).Cop())

	var c Counter
	ctx := With(bg, &c)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { From(ctx).AddCop(2) })
	}
	wg.Wait()
	require.EqualValues(t, 16, c.Cop())
}
