package memdb

import (
	"bytes"
	"iter"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// Flags are per-key marks that are not the key's value.
type Flags uint8

const (
	// Locked: the transaction holds a pessimistic lock on the key.
	Locked Flags = 1 << iota
)

// Entry is the buffered state of one key.
type Entry struct {
	// Op is what prewrite does with the key: Put, Del, Insert (Put
	// asserting the key has no live value), CheckNotExists (assert absent,
	// write nothing: an inserted key deleted again), or Lock (no write).
	Op    kvrpcpb.Op
	Value []byte
	Flags Flags
}

// HasValue: reads of the key are answered by the buffer (a value, or absent
// when Deleted).
func (e Entry) HasValue() bool { return e.Op != kvrpcpb.Op_Lock }

// Deleted: the buffer says the key has no value.
func (e Entry) Deleted() bool { return e.Op == kvrpcpb.Op_Del || e.Op == kvrpcpb.Op_CheckNotExists }

// undoRec is the state a write replaced (prev.live false: the key was
// not in the buffer) and the value arena's end before it.
type undoRec struct {
	leaf uint32
	prev state
	vals addr
}

// MemDB is the write buffer. The zero value is not usable; use New.
type MemDB struct {
	// tree is made by the first write: a read-only transaction (every
	// autocommit SELECT) never builds one.
	tree  *art
	undo  []undoRec
	holds int // live checkpoints; undo is recorded while > 0
	size  int // bytes of keys and values
}

// New returns an empty buffer.
func New() *MemDB { return &MemDB{} }

// Len is the number of keys in the buffer (written or locked).
func (m *MemDB) Len() int {
	if m.tree == nil {
		return 0
	}
	return m.tree.live
}

// Size is the bytes of keys and values in the buffer.
func (m *MemDB) Size() int { return m.size }

// Get returns key's entry.
func (m *MemDB) Get(key []byte) (Entry, bool) {
	if m.tree == nil {
		return Entry{}, false
	}
	li := m.tree.lookup(key)
	if li < 0 || !m.tree.leaves[li].st.live {
		return Entry{}, false
	}
	return m.entry(m.tree.leaves[li].st), true
}

func (m *MemDB) entry(st state) Entry {
	return Entry{Op: st.op, Value: m.tree.value(st), Flags: st.flags}
}

// leaf returns key's leaf (made when the buffer has none) and its entry,
// zero when the key is not in the buffer.
func (m *MemDB) leaf(key []byte) (int, Entry, bool) {
	if m.tree == nil {
		m.tree = newArt()
		m.undo = m.tree.undo0[:0]
	}
	li := m.tree.insert(key)
	st := m.tree.leaves[li].st
	if !st.live {
		return li, Entry{}, false
	}
	return li, m.entry(st), true
}

// put sets leaf li's entry to op and flags with value (nil: none) copied
// into the arena, or, when keep, the value the leaf has.
func (m *MemDB) put(li int, op kvrpcpb.Op, flags Flags, value []byte, keep bool) {
	t := m.tree
	l := &t.leaves[li]
	prev := l.st
	if m.holds > 0 {
		m.undo = append(grow(m.undo), undoRec{leaf: uint32(li), prev: prev, vals: t.vals.pos()})
	}
	if prev.live {
		m.size -= int(l.klen) + int(max(prev.vlen, 0))
	} else {
		t.live++
	}
	st := state{op: op, flags: flags, live: true, val: prev.val, vlen: prev.vlen}
	if !keep {
		st.vlen = -1
		if value != nil {
			st.val, st.vlen = t.vals.alloc(value), int32(len(value))
		}
	}
	l.st = st
	m.size += int(l.klen) + int(max(st.vlen, 0))
}

// Set buffers a Put of key. An inserted key stays an Insert (the assertion
// that it did not exist before the transaction still holds).
func (m *MemDB) Set(key, value []byte) {
	li, prev, had := m.leaf(key)
	op := kvrpcpb.Op_Put
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_Insert
	}
	m.put(li, op, prev.Flags, nonNil(value), false)
}

// Insert buffers an Insert of key: a Put asserting the key has no live
// value. The caller checks the buffer first (a key with a buffered value
// already exists); a key deleted earlier in the transaction is simply put.
func (m *MemDB) Insert(key, value []byte) {
	li, prev, had := m.leaf(key)
	op := kvrpcpb.Op_Insert
	if had && prev.Op == kvrpcpb.Op_Del {
		op = kvrpcpb.Op_Put
	}
	m.put(li, op, prev.Flags, nonNil(value), false)
}

// Delete buffers a Del of key. Deleting a key this transaction inserted
// leaves only the assertion that it did not exist (CheckNotExists).
func (m *MemDB) Delete(key []byte) {
	li, prev, had := m.leaf(key)
	op := kvrpcpb.Op_Del
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_CheckNotExists
	}
	m.put(li, op, prev.Flags, nil, false)
}

// Lock marks key as locked by the transaction (adding a Lock entry when the
// key has none) and ORs flags in.
func (m *MemDB) Lock(key []byte, flags Flags) {
	if m.tree != nil {
		if li := m.tree.lookup(key); li >= 0 {
			if st := m.tree.leaves[li].st; st.live && st.flags&flags == flags {
				return
			}
		}
	}
	li, prev, had := m.leaf(key)
	if !had {
		m.put(li, kvrpcpb.Op_Lock, flags, nil, false)
		return
	}
	m.put(li, prev.Op, prev.Flags|flags, nil, true)
}

// Checkpoint starts recording changes and returns a handle to revert to.
// Every Checkpoint must be Released.
func (m *MemDB) Checkpoint() int {
	m.holds++
	return len(m.undo)
}

// Release ends a checkpoint; its changes stay. When no checkpoint is left
// the undo log is dropped.
func (m *MemDB) Release(cp int) {
	if m.holds > 0 {
		m.holds--
	}
	if m.holds == 0 {
		m.undo = m.undo[:0]
	}
}

// RevertTo undoes every change made after cp was taken (the checkpoint
// stays live). Locked flags are kept. The values written since are
// dropped.
func (m *MemDB) RevertTo(cp int) {
	if len(m.undo) <= cp {
		return
	}
	defer m.tree.vals.truncate(m.undo[cp].vals)
	for len(m.undo) > cp {
		u := m.undo[len(m.undo)-1]
		m.undo = m.undo[:len(m.undo)-1]
		l := &m.tree.leaves[u.leaf]
		locked := l.st.flags & Locked
		m.size -= int(l.klen) + int(max(l.st.vlen, 0))
		switch {
		case u.prev.live:
			u.prev.flags |= locked
			l.st = u.prev
			m.size += int(l.klen) + int(max(l.st.vlen, 0))
		case locked != 0:
			l.st = state{op: kvrpcpb.Op_Lock, flags: locked, vlen: -1, live: true}
			m.size += int(l.klen)
		default:
			l.st = state{vlen: -1}
			m.tree.live--
		}
	}
}

// Iter yields the entries with keys in [start, end) (end empty: no bound),
// ascending, or descending when reverse. The buffer must not be changed
// during the iteration.
func (m *MemDB) Iter(start, end []byte, reverse bool) iter.Seq2[[]byte, Entry] {
	return func(yield func([]byte, Entry) bool) {
		t := m.tree
		if t == nil {
			return
		}
		if !reverse {
			t.ascend(t.root, 0, start, len(start) > 0, func(li int) bool {
				st := t.leaves[li].st
				if !st.live {
					return true
				}
				k := t.key(li)
				if len(end) != 0 && bytes.Compare(k, end) >= 0 {
					return false
				}
				return yield(k, m.entry(st))
			})
			return
		}
		t.descend(t.root, 0, end, len(end) > 0, func(li int) bool {
			st := t.leaves[li].st
			if !st.live {
				return true
			}
			k := t.key(li)
			if bytes.Compare(k, start) < 0 {
				return false
			}
			return yield(k, m.entry(st))
		})
	}
}

// nonNil: a Put of a nil value is a Put of the empty value.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
