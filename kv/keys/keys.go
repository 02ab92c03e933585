// Package keys is the engine key layout of a store's Pebble instance for
// user data: three key spaces (column families) of Percolator MVCC, each a
// prefix byte followed by the memcomparable user key and, for versioned
// spaces, a descending timestamp.
//
//	LOCK    'l' enc(key)              -> lock (store/mvcc)
//	WRITE   'w' enc(key) ^commit_ts   -> write record, short value inlined
//	DEFAULT 'z' enc(key) ^start_ts    -> long value
//
// enc is codec.EncodeBytes, so every version of a user key sorts after
// enc(key) and before enc(next key), and a region [start, end) of user keys
// is [prefix enc(start), prefix enc(end)) in every space. raftstore adds the
// prefix when it applies a raft_cmdpb.Request (whose key is the part after
// the prefix) and uses CFBounds to find a region's data for splits,
// snapshots and consistency checks; it knows nothing else of MVCC. The
// raft and local key spaces (raftstore/keys.go) use prefixes below 0x10.
//
// Comparer is the engine's key order (bytewise) with the Split that tells
// Pebble where the timestamp of a WRITE or DEFAULT key begins: every
// store engine, and every Pebble DB that holds MVCC data for store/mvcc's
// readers (whose point reads are SeekPrefixGE), is opened with it.
package keys

import (
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Key space prefixes.
const (
	PrefixDefault byte = 'z'
	PrefixLock    byte = 'l'
	PrefixWrite   byte = 'w'
)

// CFs lists every user-data key space, in a fixed order.
var CFs = []raft_cmdpb.CF{raft_cmdpb.CF_DEFAULT, raft_cmdpb.CF_LOCK, raft_cmdpb.CF_WRITE}

// Prefix returns the prefix byte of cf.
func Prefix(cf raft_cmdpb.CF) byte {
	switch cf {
	case raft_cmdpb.CF_LOCK:
		return PrefixLock
	case raft_cmdpb.CF_WRITE:
		return PrefixWrite
	default:
		return PrefixDefault
	}
}

// EngineKey appends the engine key of cfKey (the key inside cf) to b.
func EngineKey(b []byte, cf raft_cmdpb.CF, cfKey []byte) []byte {
	b = append(b, Prefix(cf))
	return append(b, cfKey...)
}

// Encode appends the cf key of user key k without a version (the whole key
// in LOCK, the prefix of every version in WRITE and DEFAULT).
func Encode(b, k []byte) []byte { return codec.EncodeBytes(b, k) }

// EncodeVersioned appends the cf key of version ts of user key k.
func EncodeVersioned(b, k []byte, ts uint64) []byte {
	return codec.EncodeUintDesc(codec.EncodeBytes(b, k), ts)
}

// DecodeVersioned splits a versioned cf key into user key (appended to buf)
// and timestamp.
func DecodeVersioned(cfKey, buf []byte) (k []byte, ts uint64, err error) {
	rest, k, err := codec.DecodeBytes(cfKey, buf)
	if err != nil {
		return nil, 0, err
	}
	rest, ts, err = codec.DecodeUintDesc(rest)
	if err == nil && len(rest) != 0 {
		err = codec.ErrInvalidEncoding
	}
	return k, ts, err
}

// CFBounds returns the engine key bounds [lower, upper) of user range
// [start, end) in cf; an empty end is the end of the key space.
func CFBounds(cf raft_cmdpb.CF, start, end []byte) (lower, upper []byte) {
	p := Prefix(cf)
	lower = codec.EncodeBytes([]byte{p}, start)
	if len(end) == 0 {
		return lower, []byte{p + 1}
	}
	return lower, codec.EncodeBytes([]byte{p}, end)
}
