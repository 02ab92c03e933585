package backupfile

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChecksumOrderAndCutIndependent: the checksum of a set of pairs is
// the same whatever their order and however they are cut into parts.
func TestChecksumOrderAndCutIndependent(t *testing.T) {
	var all, rev, a, b Checksum
	n := 100
	for i := range n {
		k, v := fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", i*i)
		all.Add(k, v)
		if i < 37 {
			a.Add(k, v)
		} else {
			b.Add(k, v)
		}
		j := n - 1 - i
		rev.Add(fmt.Appendf(nil, "k%03d", j), fmt.Appendf(nil, "v%d", j*j))
	}
	require.Equal(t, all, rev)
	a.Merge(b)
	require.Equal(t, all, a)
	require.Equal(t, uint64(n), all.KVs)

	var changed Checksum
	changed.Merge(all)
	changed.Add([]byte("k000"), []byte("v0")) // the same pair twice cancels its crc
	require.NotEqual(t, all, changed)
	var other Checksum
	other.Add([]byte("k000"), []byte("v1"))
	var orig Checksum
	orig.Add([]byte("k000"), []byte("v0"))
	require.NotEqual(t, orig.CRC64, other.CRC64, "a changed value changes the crc")
}

// TestWriteRead: a file written with Create/Add/Finish reads back, bounded
// by [start, end), with the same pairs and checksum; a rate limit holds.
func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "1.sst")
	w, err := Create(context.Background(), path, NewLimiter(1<<30))
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, w.Add(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "value-%d", i)))
	}
	want := w.Checksum()
	size, err := w.Finish()
	require.NoError(t, err)
	require.NotZero(t, size)

	var got Checksum
	require.NoError(t, Read(path, nil, nil, func(k, v []byte) error { got.Add(k, v); return nil }))
	require.Equal(t, want, got)

	var part Checksum
	var first, last string
	require.NoError(t, Read(path, []byte("k0100"), []byte("k0200"), func(k, v []byte) error {
		if first == "" {
			first = string(k)
		}
		last = string(k)
		part.Add(k, v)
		return nil
	}))
	require.Equal(t, uint64(100), part.KVs)
	require.Equal(t, "k0100", first)
	require.Equal(t, "k0199", last)

	require.ErrorIs(t, Read(filepath.Join(t.TempDir(), "missing.sst"), nil, nil, nil), ErrFile)
}
