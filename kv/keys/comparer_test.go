package keys

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestComparerSplitsVersions(t *testing.T) {
	for _, uk := range []string{"", "a", "1234567", "12345678", "123456789", "t1_r\x00\xff\xff"} {
		for _, p := range []byte{PrefixWrite, PrefixDefault} {
			prefix := append([]byte{p}, Encode(nil, []byte(uk))...)
			k := EncodeVersioned([]byte{p}, []byte(uk), 42)
			require.Equal(t, len(prefix), Comparer.Split(k), "key %x", k)
			require.Equal(t, len(prefix), Comparer.Split(prefix), "prefix %x", prefix)
		}
		lock := append([]byte{PrefixLock}, Encode(nil, []byte(uk))...)
		require.Equal(t, len(lock), Comparer.Split(lock))
	}
	for _, k := range [][]byte{nil, {0x02, 1, 2, 3}, {PrefixWrite}, {PrefixWrite + 1}, {PrefixWrite, 1, 2}, {PrefixDefault, 1, 2, 3, 4, 5, 6, 7, 8, 0}} {
		require.Equal(t, len(k), Comparer.Split(k), "key %x", k)
	}
}

// comparerKeys returns engine keys of every kind, and byte strings that are
// not keys but reach the comparer as bounds and index separators: truncated
// keys and keys with a byte raised.
func comparerKeys(rng *rand.Rand) [][]byte {
	var out [][]byte
	user := [][]byte{{}, []byte("a"), []byte("ab"), []byte("1234567"), []byte("12345678"), []byte("123456789"), {0xff, 0xff, 0, 0xff}}
	for range 3 {
		k := make([]byte, rng.IntN(20))
		for i := range k {
			k[i] = byte(rng.IntN(4)) * 0x55 // 0x00, 0x55, 0xaa, 0xff
		}
		user = append(user, k)
	}
	for _, uk := range user {
		for _, p := range []byte{PrefixWrite, PrefixDefault, PrefixLock} {
			out = append(out, append([]byte{p}, Encode(nil, uk)...))
			for _, ts := range []uint64{0, 1, 7, 1 << 40, ^uint64(0)} {
				out = append(out, EncodeVersioned([]byte{p}, uk, ts))
			}
		}
	}
	out = append(out, []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 1, 0x02}, []byte{PrefixWrite + 1}, []byte{PrefixDefault + 1})
	n := len(out)
	for _, k := range out[:n] {
		for range 2 {
			c := bytes.Clone(k[:rng.IntN(len(k)+1)])
			out = append(out, c)
			if len(c) > 0 && c[len(c)-1] != 0xff {
				d := bytes.Clone(c)
				d[len(d)-1]++
				out = append(out, d, append(bytes.Clone(c), byte(rng.IntN(256))))
			}
		}
	}
	return out
}

// TestComparerContract checks Pebble's Split contract (base.Split) and the
// ImmediateSuccessor contract on keys, bounds and separator-like strings:
// the order stays bytewise, prefixes order keys before suffixes, and a key
// that is only a prefix sorts before its versions.
func TestComparerContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ks := comparerKeys(rng)
	c := Comparer
	for _, a := range ks {
		n := c.Split(a)
		require.True(t, n >= 0 && n <= len(a))
		pa := a[:n]
		if n < len(a) {
			require.Negative(t, c.Compare(pa, a), "prefix of %x", a)
			require.Equal(t, n, c.Split(pa), "prefix of %x is not its own prefix", a)
		}
		for _, b := range ks {
			require.Equal(t, bytes.Compare(a, b), c.Compare(a, b))
			pb := b[:c.Split(b)]
			if pc := bytes.Compare(pa, pb); pc != 0 {
				require.Equal(t, pc, bytes.Compare(a, b), "prefixes of %x and %x", a, b)
			} else {
				require.Equal(t, c.ComparePointSuffixes(a[n:], b[len(pb):]), bytes.Compare(a, b), "suffixes of %x and %x", a, b)
			}
		}
		if n != len(a) {
			continue
		}
		succ := c.ImmediateSuccessor(nil, a)
		require.Equal(t, len(succ), c.Split(succ), "successor %x of %x", succ, a)
		require.Negative(t, c.Compare(a, succ))
		for _, b := range ks {
			if c.Compare(a, b) < 0 && c.Compare(b, succ) < 0 {
				require.NotEqual(t, len(b), c.Split(b), "prefix %x between %x and its successor %x", b, a, succ)
			}
		}
	}
}
