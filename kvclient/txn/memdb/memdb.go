package memdb

import (
	"iter"
	"strings"

	"github.com/RaduBerinde/btreemap"

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

type undoRec struct {
	key    string
	prev   Entry
	hadKey bool
}

// MemDB is the write buffer. The zero value is not usable; use New.
type MemDB struct {
	// tree is made by the first write: a read-only transaction (every
	// autocommit SELECT) never builds one.
	tree  *btreemap.BTreeMap[string, Entry]
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
	return m.tree.Len()
}

// Size is the bytes of keys and values in the buffer.
func (m *MemDB) Size() int { return m.size }

// Get returns key's entry.
func (m *MemDB) Get(key []byte) (Entry, bool) { return m.get(string(key)) }

func (m *MemDB) get(k string) (Entry, bool) {
	if m.tree == nil {
		return Entry{}, false
	}
	_, e, ok := m.tree.Get(k)
	return e, ok
}

func (m *MemDB) put(k string, e Entry) {
	if m.tree == nil {
		m.tree = btreemap.New[string, Entry](16, strings.Compare)
	}
	_, prev, had := m.tree.ReplaceOrInsert(k, e)
	if m.holds > 0 {
		m.undo = append(m.undo, undoRec{key: k, prev: prev, hadKey: had})
	}
	if had {
		m.size -= len(k) + len(prev.Value)
	}
	m.size += len(k) + len(e.Value)
}

// Set buffers a Put of key. An inserted key stays an Insert (the assertion
// that it did not exist before the transaction still holds).
func (m *MemDB) Set(key, value []byte) {
	k := string(key)
	prev, had := m.get(k)
	op := kvrpcpb.Op_Put
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_Insert
	}
	m.put(k, Entry{Op: op, Value: clone(value), Flags: prev.Flags})
}

// Insert buffers an Insert of key: a Put asserting the key has no live
// value. The caller checks the buffer first (a key with a buffered value
// already exists); a key deleted earlier in the transaction is simply put.
func (m *MemDB) Insert(key, value []byte) {
	k := string(key)
	prev, had := m.get(k)
	op := kvrpcpb.Op_Insert
	if had && prev.Op == kvrpcpb.Op_Del {
		op = kvrpcpb.Op_Put
	}
	m.put(k, Entry{Op: op, Value: clone(value), Flags: prev.Flags})
}

// Delete buffers a Del of key. Deleting a key this transaction inserted
// leaves only the assertion that it did not exist (CheckNotExists).
func (m *MemDB) Delete(key []byte) {
	k := string(key)
	prev, had := m.get(k)
	op := kvrpcpb.Op_Del
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_CheckNotExists
	}
	m.put(k, Entry{Op: op, Flags: prev.Flags})
}

// Lock marks key as locked by the transaction (adding a Lock entry when the
// key has none) and ORs flags in.
func (m *MemDB) Lock(key []byte, flags Flags) {
	k := string(key)
	prev, had := m.get(k)
	if had && prev.Flags&flags == flags {
		return
	}
	if !had {
		prev = Entry{Op: kvrpcpb.Op_Lock}
	}
	prev.Flags |= flags
	m.put(k, prev)
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
		clear(m.undo)
		m.undo = m.undo[:0]
	}
}

// RevertTo undoes every change made after cp was taken (the checkpoint
// stays live). Locked flags are kept.
func (m *MemDB) RevertTo(cp int) {
	for len(m.undo) > cp {
		u := m.undo[len(m.undo)-1]
		m.undo = m.undo[:len(m.undo)-1]
		_, cur, _ := m.tree.Get(u.key)
		locked := cur.Flags & Locked
		m.size -= len(u.key) + len(cur.Value)
		switch {
		case u.hadKey:
			u.prev.Flags |= locked
			m.tree.ReplaceOrInsert(u.key, u.prev)
			m.size += len(u.key) + len(u.prev.Value)
		case locked != 0:
			m.tree.ReplaceOrInsert(u.key, Entry{Op: kvrpcpb.Op_Lock, Flags: locked})
			m.size += len(u.key)
		default:
			m.tree.Delete(u.key)
		}
	}
}

// Iter yields the entries with keys in [start, end) (end empty: no bound),
// ascending, or descending when reverse. The buffer must not be changed
// during the iteration.
func (m *MemDB) Iter(start, end []byte, reverse bool) iter.Seq2[[]byte, Entry] {
	return func(yield func([]byte, Entry) bool) {
		if m.tree == nil {
			return
		}
		lo := btreemap.GE(string(start))
		hi := btreemap.Max[string]()
		if len(end) != 0 {
			hi = btreemap.LT(string(end))
		}
		var seq iter.Seq2[string, Entry]
		if reverse {
			seq = m.tree.Descend(hi, lo)
		} else {
			seq = m.tree.Ascend(lo, hi)
		}
		for k, e := range seq {
			if !yield([]byte(k), e) {
				return
			}
		}
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte(nil), b...)
}
