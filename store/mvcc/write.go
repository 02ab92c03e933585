package mvcc

import (
	"encoding/binary"
	"fmt"
)

// WriteKind is the kind of a write record.
type WriteKind byte

// Write kinds; the byte values are the stored encoding.
const (
	WritePut      WriteKind = 'P'
	WriteDelete   WriteKind = 'D'
	WriteLock     WriteKind = 'L' // a committed Lock: no data change
	WriteRollback WriteKind = 'R' // stored at commit_ts = start_ts of the rolled back txn
)

func (k WriteKind) String() string {
	switch k {
	case WritePut:
		return "Put"
	case WriteDelete:
		return "Delete"
	case WriteLock:
		return "Lock"
	case WriteRollback:
		return "Rollback"
	}
	return fmt.Sprintf("WriteKind(%d)", byte(k))
}

// WriteKindOf is the write kind that commits a lock of type t (Pessimistic
// commits as Lock).
func WriteKindOf(t LockType) WriteKind {
	switch t {
	case LockPut:
		return WritePut
	case LockDelete:
		return WriteDelete
	default:
		return WriteLock
	}
}

// Write is a write record: the value of key+^commit_ts in WRITE.
type Write struct {
	Kind          WriteKind
	StartTS       uint64
	ShortValue    []byte
	HasShortValue bool
	// OverlappedRollback: a transaction whose start_ts equals this record's
	// commit_ts was rolled back on this key; its rollback record would have
	// had this key, so it is kept as this flag (TiKV's
	// has_overlapped_rollback).
	OverlappedRollback bool
}

const (
	tagOverlappedRollback = 'R'
)

// Encode appends the stored form of w to b.
func (w *Write) Encode(b []byte) []byte {
	b = append(b, byte(w.Kind))
	b = binary.AppendUvarint(b, w.StartTS)
	if w.HasShortValue {
		b = append(b, tagShortValue)
		b = appendBytes(b, w.ShortValue)
	}
	if w.OverlappedRollback {
		b = append(b, tagOverlappedRollback)
	}
	return b
}

// DecodeWrite parses a stored write record. ShortValue aliases v.
func DecodeWrite(v []byte) (*Write, error) {
	w := &Write{}
	if err := w.decode(v); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Write) decode(v []byte) error {
	*w = Write{}
	if len(v) == 0 {
		return fmt.Errorf("%w: empty write record", ErrCorruptRecord)
	}
	d := decoder{b: v}
	w.Kind = WriteKind(d.byte())
	switch w.Kind {
	case WritePut, WriteDelete, WriteLock, WriteRollback:
	default:
		return fmt.Errorf("%w: write kind %d", ErrCorruptRecord, v[0])
	}
	w.StartTS = d.uvarint()
	for d.err == nil && len(d.b) > 0 {
		switch tag := d.byte(); tag {
		case tagShortValue:
			w.ShortValue, w.HasShortValue = d.bytes(), true
		case tagOverlappedRollback:
			w.OverlappedRollback = true
		default:
			return fmt.Errorf("%w: write field tag %d", ErrCorruptRecord, tag)
		}
	}
	return d.err
}
