package freeport

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTakeDistinctBindablePortsBelowEphemeralRange(t *testing.T) {
	a, err := Take(20)
	require.NoError(t, err)
	b, err := Take(20)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range append(a, b...) {
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		require.GreaterOrEqual(t, p, lowest)
		require.Less(t, p, ephemeralStart())
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		require.NoError(t, err)
		ln.Close()
	}
}

// A port another holder has locked is skipped: the lock is what keeps two
// test processes apart.
func TestTakeSkipsLockedPorts(t *testing.T) {
	p, err := Take(1)
	require.NoError(t, err)
	_, ok := lock(t.TempDir(), p[0]) // a fresh directory: not held
	require.True(t, ok)
	mu.Lock()
	f := held[len(held)-1]
	mu.Unlock()
	_, ok = lock(filepath.Dir(f.Name()), p[0])
	require.False(t, ok, "a held port's lock must not be taken again")
}
