package mvcc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// ErrCorruptRecord is returned when a stored lock or write record cannot be
// decoded.
var ErrCorruptRecord = errors.New("mvcc: corrupt record")

// ShortValueMaxLen is the longest value stored inline in a lock and its
// write record (TiKV's SHORT_VALUE_MAX_LEN); longer values go to DEFAULT.
const ShortValueMaxLen = 255

// IsShortValue reports whether v is stored inline.
func IsShortValue(v []byte) bool { return len(v) <= ShortValueMaxLen }

// LockType is the kind of a Percolator lock.
type LockType byte

// Lock types; the byte values are the stored encoding.
const (
	LockPut         LockType = 'P'
	LockDelete      LockType = 'D'
	LockLock        LockType = 'L' // locks the key, writes nothing
	LockPessimistic LockType = 'S' // pessimistic lock, not yet prewritten
)

func (t LockType) String() string {
	switch t {
	case LockPut:
		return "Put"
	case LockDelete:
		return "Delete"
	case LockLock:
		return "Lock"
	case LockPessimistic:
		return "Pessimistic"
	}
	return fmt.Sprintf("LockType(%d)", byte(t))
}

// Op is the kvrpcpb.Op reported in LockInfo.lock_type.
func (t LockType) Op() kvrpcpb.Op {
	switch t {
	case LockPut:
		return kvrpcpb.Op_Put
	case LockDelete:
		return kvrpcpb.Op_Del
	case LockLock:
		return kvrpcpb.Op_Lock
	default:
		return kvrpcpb.Op_PessimisticLock
	}
}

// Lock is a Percolator lock: the value of a key in LOCK. It carries
// everything kvrpcpb.LockInfo reports.
type Lock struct {
	Type        LockType
	Primary     []byte
	StartTS     uint64
	TTL         uint64 // ms, counted from the physical time of StartTS
	ForUpdateTS uint64 // > 0: the lock belongs to a pessimistic transaction
	TxnSize     uint64
	MinCommitTS uint64
	// ShortValue is the value of a Put whose value is short; it moves to the
	// write record on commit.
	ShortValue     []byte
	HasShortValue  bool
	UseAsyncCommit bool
	Secondaries    [][]byte // async commit, on the primary only
	UseOnePC       bool
}

// IsPessimisticTxn reports whether the lock belongs to a pessimistic
// transaction.
func (l *Lock) IsPessimisticTxn() bool { return l.ForUpdateTS != 0 }

// Info is the kvrpcpb.LockInfo of l held on key. key is retained.
func (l *Lock) Info(key []byte) *kvrpcpb.LockInfo {
	return &kvrpcpb.LockInfo{
		PrimaryLock:     l.Primary,
		LockVersion:     l.StartTS,
		Key:             key,
		LockTtl:         l.TTL,
		TxnSize:         l.TxnSize,
		LockType:        l.Type.Op(),
		LockForUpdateTs: l.ForUpdateTS,
		UseAsyncCommit:  l.UseAsyncCommit,
		MinCommitTs:     l.MinCommitTS,
		Secondaries:     l.Secondaries,
		UseOnePc:        l.UseOnePC,
	}
}

// Tags of the optional lock fields.
const (
	tagShortValue  = 'v'
	tagForUpdateTS = 'f'
	tagTxnSize     = 't'
	tagMinCommitTS = 'c'
	tagAsyncCommit = 'a'
	tagOnePC       = '1'
)

// Encode appends the stored form of l to b: type, primary, start_ts, ttl,
// then tagged optional fields.
func (l *Lock) Encode(b []byte) []byte {
	b = append(b, byte(l.Type))
	b = appendBytes(b, l.Primary)
	b = binary.AppendUvarint(b, l.StartTS)
	b = binary.AppendUvarint(b, l.TTL)
	if l.HasShortValue {
		b = append(b, tagShortValue)
		b = appendBytes(b, l.ShortValue)
	}
	if l.ForUpdateTS != 0 {
		b = binary.AppendUvarint(append(b, tagForUpdateTS), l.ForUpdateTS)
	}
	if l.TxnSize != 0 {
		b = binary.AppendUvarint(append(b, tagTxnSize), l.TxnSize)
	}
	if l.MinCommitTS != 0 {
		b = binary.AppendUvarint(append(b, tagMinCommitTS), l.MinCommitTS)
	}
	if l.UseAsyncCommit {
		b = binary.AppendUvarint(append(b, tagAsyncCommit), uint64(len(l.Secondaries)))
		for _, s := range l.Secondaries {
			b = appendBytes(b, s)
		}
	}
	if l.UseOnePC {
		b = append(b, tagOnePC)
	}
	return b
}

// DecodeLock parses a stored lock. The returned lock's byte slices alias v.
func DecodeLock(v []byte) (*Lock, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: empty lock", ErrCorruptRecord)
	}
	d := decoder{b: v}
	l := &Lock{Type: LockType(d.byte())}
	switch l.Type {
	case LockPut, LockDelete, LockLock, LockPessimistic:
	default:
		return nil, fmt.Errorf("%w: lock type %d", ErrCorruptRecord, v[0])
	}
	l.Primary = d.bytes()
	l.StartTS = d.uvarint()
	l.TTL = d.uvarint()
	for d.err == nil && len(d.b) > 0 {
		switch tag := d.byte(); tag {
		case tagShortValue:
			l.ShortValue, l.HasShortValue = d.bytes(), true
		case tagForUpdateTS:
			l.ForUpdateTS = d.uvarint()
		case tagTxnSize:
			l.TxnSize = d.uvarint()
		case tagMinCommitTS:
			l.MinCommitTS = d.uvarint()
		case tagAsyncCommit:
			l.UseAsyncCommit = true
			n := d.uvarint()
			if n > uint64(len(d.b)) {
				d.fail()
				break
			}
			l.Secondaries = make([][]byte, 0, n)
			for i := uint64(0); i < n && d.err == nil; i++ {
				l.Secondaries = append(l.Secondaries, d.bytes())
			}
		case tagOnePC:
			l.UseOnePC = true
		default:
			return nil, fmt.Errorf("%w: lock field tag %d", ErrCorruptRecord, tag)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return l, nil
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads the record encodings; the first failure sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated", ErrCorruptRecord)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
