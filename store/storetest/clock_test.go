package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/store/storetest"
	"github.com/stratadb/strata/tso"
)

// Options.ClockAhead runs PD's timestamps ahead of the wall clock, still
// strictly increasing.
func TestClockAhead(t *testing.T) {
	st, err := storetest.New(storetest.Options{ClockAhead: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	before := time.Now()
	a, err := st.GetTS(context.Background())
	require.NoError(t, err)
	b, err := st.GetTS(context.Background())
	require.NoError(t, err)
	require.Greater(t, b, a)
	require.GreaterOrEqual(t, tso.Physical(a), before.Add(time.Hour).UnixMilli())
	require.LessOrEqual(t, tso.Physical(b), time.Now().Add(time.Hour).UnixMilli())
}
