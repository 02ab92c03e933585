package keys

import "github.com/cockroachdb/pebble/v2"

// ComparerName names Comparer in a store's Pebble files. A data directory
// written with another comparer (before it existed: Pebble's default,
// "leveldb.BytewiseComparator") does not open with it.
const ComparerName = "strata.keys.v1"

// Comparer is the ordering of a store's engine keys: bytewise, as Pebble's
// default comparer, with a Split that separates the versioned key spaces
// (WRITE, DEFAULT) into the prefix 'w'/'z' enc(key) and the 8-byte
// timestamp suffix, so that Pebble's bloom filters and SeekPrefixGE serve
// the point reads of one user key's versions. Every other key (LOCK, the
// raft and local key spaces, bounds, and anything not a well-formed
// versioned key) is its own prefix. Pebble requires of Split that prefixes
// order keys before suffixes; that holds for any byte strings here because
// the prefix is found by parsing enc(key) from the front
// (versionedPrefixLen). It does not hold for keys with leading bytes cut
// off, so Pebble's synthetic prefixes (external files ingested under a
// replaced prefix) must not be used with it.
var Comparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = split
	c.ImmediateSuccessor = immediateSuccessor
	c.Name = ComparerName
	return &c
}()

// split returns the length of key's prefix: for a key of WRITE or DEFAULT
// whose enc(key) part is complete, the prefix byte and enc(key); else the
// whole key.
func split(key []byte) int {
	if n := versionedPrefixLen(key); n > 0 {
		return n
	}
	return len(key)
}

// versionedPrefixLen returns the length of the prefix byte and enc(key)
// that key starts with when its prefix byte is WRITE's or DEFAULT's and
// enc(key) is complete, else 0. enc is codec.EncodeBytes: groups of 8
// bytes, each followed by a marker 0xFF (another group follows) or 0xFF-pad
// with 0 < pad <= 8 (the last group). Because the parse reads from the
// front, two keys that share a complete prefix have the same prefix, and a
// key whose parse ends within another's bytes has that key's prefix:
// bytewise order of keys equals the order of their prefixes, then of their
// suffixes, for any byte strings.
func versionedPrefixLen(key []byte) int {
	if len(key) == 0 || key[0] != PrefixWrite && key[0] != PrefixDefault {
		return 0
	}
	for i := 1 + 8; i < len(key); i += 9 {
		switch m := key[i]; {
		case m == 0xFF:
		case m >= 0xFF-8:
			return i + 1
		default:
			return 0 // not enc
		}
	}
	return 0
}

// immediateSuccessor appends the smallest prefix after prefix a: for 'w'/'z'
// enc(key), a with its last marker byte raised (every key that starts with
// a sorts before it, and no other prefix lies between); otherwise a
// followed by a zero byte, as Pebble's default comparer does.
func immediateSuccessor(dst, a []byte) []byte {
	dst = append(dst, a...)
	if len(a) > 0 && versionedPrefixLen(a) == len(a) {
		dst[len(dst)-1]++
		return dst
	}
	return append(dst, 0)
}
