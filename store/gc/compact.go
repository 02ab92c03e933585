package gc

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
)

// keyGC is the garbage of one user key below a safe point.
type keyGC struct {
	key []byte
	// writes are the commit_ts of the WRITE records to delete, newest
	// first; values the start_ts of the DEFAULT values to delete.
	writes []uint64
	values []uint64
}

func (g *keyGC) empty() bool { return len(g.writes) == 0 }

// collector decides, version by version (newest first, one user key at a
// time), what GC deletes below safePoint.
type collector struct {
	safePoint uint64
	cur       keyGC
	// keepFound: the newest visible Put/Delete <= safePoint was seen; every
	// older record is garbage.
	keepFound bool
}

func (c *collector) reset(key []byte) {
	c.cur = keyGC{key: key}
	c.keepFound = false
}

// add looks at the record of the current key at commitTS.
func (c *collector) add(commitTS uint64, w *mvcc.Write) {
	if commitTS > c.safePoint {
		return
	}
	if c.keepFound {
		c.cur.writes = append(c.cur.writes, commitTS)
		if w.Kind == mvcc.WritePut && !w.HasShortValue {
			c.cur.values = append(c.cur.values, w.StartTS)
		}
		return
	}
	switch w.Kind {
	case mvcc.WritePut:
		c.keepFound = true // kept: what a read at the safe point sees
	case mvcc.WriteDelete:
		c.keepFound = true
		c.cur.writes = append(c.cur.writes, commitTS)
	default: // Lock, Rollback: no data, not needed by any reader
		c.cur.writes = append(c.cur.writes, commitTS)
	}
}

// scanner walks the WRITE records of a key range on one snapshot.
type scanner struct {
	it   *pebble.Iterator
	kbuf []byte
}

func newScanner(snap mvcc.Snapshot, start, end []byte) (*scanner, error) {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, start, end)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("gc: write iterator: %w", err)
	}
	return &scanner{it: it}, nil
}

func (s *scanner) close() error { return s.it.Close() }

// collect returns the garbage of the keys in the scanner's range at
// safePoint, at most maxKeys keys with garbage, and the user key to resume
// from (nil when the range is done). scanned counts the records read. A
// key's garbage is reported whole: a key is never split over two calls.
func (s *scanner) collect(safePoint uint64, maxKeys int) (out []keyGC, resume []byte, scanned int, err error) {
	c := collector{safePoint: safePoint}
	var curKey []byte
	valid := s.it.First()
	for ; valid; valid = s.it.Next() {
		k := s.it.Key()
		userKey, commitTS, derr := keys.DecodeVersioned(k[1:], s.kbuf[:0])
		if derr != nil {
			return nil, nil, scanned, fmt.Errorf("%w: write key %x: %v", mvcc.ErrCorruptRecord, k, derr)
		}
		s.kbuf = userKey
		if curKey == nil || !bytes.Equal(curKey, userKey) {
			if curKey != nil && !c.cur.empty() {
				out = append(out, c.cur)
				if len(out) >= maxKeys {
					return out, bytes.Clone(userKey), scanned, nil
				}
			}
			curKey = bytes.Clone(userKey)
			c.reset(curKey)
		}
		scanned++
		if commitTS > safePoint {
			continue
		}
		v, verr := s.it.ValueAndErr()
		if verr != nil {
			return nil, nil, scanned, fmt.Errorf("gc: read write record: %w", verr)
		}
		w, derr := mvcc.DecodeWrite(v)
		if derr != nil {
			return nil, nil, scanned, fmt.Errorf("write record %x: %w", k, derr)
		}
		c.add(commitTS, w)
	}
	if err := s.it.Error(); err != nil {
		return nil, nil, scanned, fmt.Errorf("gc: scan writes: %w", err)
	}
	if curKey != nil && !c.cur.empty() {
		out = append(out, c.cur)
	}
	return out, nil, scanned, nil
}

// keyGarbage computes the garbage of one key on snap (used again under the
// key's latch, on a fresh snapshot).
func keyGarbage(snap mvcc.Snapshot, key []byte, safePoint uint64) (keyGC, error) {
	lo := keys.Encode([]byte{keys.PrefixWrite}, key)
	// enc(key) is a prefix of no other key's encoding, so the range is
	// exactly key's versions.
	hi := append(bytes.Clone(lo), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return keyGC{}, fmt.Errorf("gc: write iterator: %w", err)
	}
	defer it.Close()
	c := collector{safePoint: safePoint}
	c.reset(key)
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		_, commitTS, derr := keys.DecodeVersioned(k[1:], nil)
		if derr != nil {
			return keyGC{}, fmt.Errorf("%w: write key %x: %v", mvcc.ErrCorruptRecord, k, derr)
		}
		if commitTS > safePoint {
			continue
		}
		v, verr := it.ValueAndErr()
		if verr != nil {
			return keyGC{}, fmt.Errorf("gc: read write record: %w", verr)
		}
		w, derr := mvcc.DecodeWrite(v)
		if derr != nil {
			return keyGC{}, fmt.Errorf("write record %x: %w", k, derr)
		}
		c.add(commitTS, w)
	}
	return c.cur, it.Error()
}

// deletes appends the raft requests deleting g's garbage to reqs, oldest
// first (see the package documentation).
func (g *keyGC) deletes(reqs []*raft_cmdpb.Request) []*raft_cmdpb.Request {
	for _, ts := range g.values {
		reqs = append(reqs, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete, Cf: raft_cmdpb.CF_DEFAULT, Key: keys.EncodeVersioned(nil, g.key, ts)})
	}
	for i := len(g.writes) - 1; i >= 0; i-- {
		reqs = append(reqs, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete, Cf: raft_cmdpb.CF_WRITE, Key: keys.EncodeVersioned(nil, g.key, g.writes[i])})
	}
	return reqs
}
