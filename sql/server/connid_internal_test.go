package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConnIDLayout: TiDB's 32-bit layout (11-bit server id, 20-bit local
// id, markup bit 0) round-trips and fits the handshake's 4 bytes; ids of
// another form are refused.
func TestConnIDLayout(t *testing.T) {
	for _, tc := range []struct {
		server, local, id uint64
	}{
		{0, 1, 2},
		{1, 1, 1<<21 | 2},
		{1, maxLocalConnID, 1<<21 | maxLocalConnID<<1},
		{MaxServerID, maxLocalConnID, 1<<32 - 2},
		{5, 12345, 5<<21 | 12345<<1},
	} {
		id := makeConnID(tc.server, tc.local)
		require.Equal(t, tc.id, id)
		require.Less(t, id, uint64(1)<<32, "fits the handshake's connection id")
		s, l, ok := splitConnID(id)
		require.True(t, ok)
		require.Equal(t, tc.server, s)
		require.Equal(t, tc.local, l)
	}
	for _, bad := range []uint64{0, 3, 1<<21 | 1, 1 << 32, 1<<63 | 2, 5 << 21} {
		_, _, ok := splitConnID(bad)
		require.False(t, ok, "%#x", bad)
	}
}

// TestConnIDsAllocation: local ids go up from 1, wrap after 2^20-1 and
// skip the ones still in use; with all in use there is none.
func TestConnIDsAllocation(t *testing.T) {
	var a connIDs
	free := func(uint64) bool { return false }
	for want := uint64(1); want <= 3; want++ {
		got, ok := a.next(free)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	a.last = maxLocalConnID - 1
	inUse := map[uint64]bool{maxLocalConnID: true, 1: true, 2: true}
	got, ok := a.next(func(l uint64) bool { return inUse[l] })
	require.True(t, ok)
	require.Equal(t, uint64(3), got, "wraps and skips ids in use")
	_, ok = a.next(func(uint64) bool { return true })
	require.False(t, ok, "every local id in use")
}
