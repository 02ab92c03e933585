package mvcc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockRoundTrip(t *testing.T) {
	for _, l := range []*Lock{
		{Type: LockPut, Primary: []byte("p"), StartTS: 10, TTL: 3000},
		{Type: LockPut, Primary: []byte("p"), StartTS: 10, TTL: 3000, ShortValue: []byte{}, HasShortValue: true},
		{Type: LockDelete, Primary: []byte("p"), StartTS: 1 << 60, ForUpdateTS: 1<<60 + 1, TxnSize: 7, MinCommitTS: 99},
		{Type: LockPessimistic, Primary: []byte{}, StartTS: 1, TTL: 1, ForUpdateTS: 2},
		{Type: LockLock, Primary: []byte("a"), StartTS: 5, UseAsyncCommit: true, Secondaries: [][]byte{[]byte("b"), {}, []byte("c")}, MinCommitTS: 6},
		{Type: LockPut, Primary: []byte("a"), StartTS: 5, UseOnePC: true, ShortValue: []byte("v"), HasShortValue: true},
	} {
		got, err := DecodeLock(l.Encode(nil))
		require.NoError(t, err)
		if l.Primary == nil {
			l.Primary = []byte{}
		}
		require.Equal(t, l, got)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	for _, w := range []*Write{
		{Kind: WritePut, StartTS: 10, ShortValue: []byte("v"), HasShortValue: true},
		{Kind: WritePut, StartTS: 10},
		{Kind: WriteDelete, StartTS: 1 << 62},
		{Kind: WriteRollback, StartTS: 3},
		{Kind: WriteLock, StartTS: 3, OverlappedRollback: true},
	} {
		got, err := DecodeWrite(w.Encode(nil))
		require.NoError(t, err)
		require.Equal(t, w, got)
	}
}

func TestDecodeRejectsCorruptRecords(t *testing.T) {
	lock := (&Lock{Type: LockPut, Primary: []byte("primary"), StartTS: 1 << 40, TTL: 5, ShortValue: []byte("value"), HasShortValue: true}).Encode(nil)
	// Optional fields are tagged: a cut before the short value's tag (after
	// type, primary, start_ts and ttl: 16 bytes) is a valid lock without
	// it; every other cut is inside a field.
	for i := 0; i < len(lock); i++ {
		_, err := DecodeLock(lock[:i])
		if i == 16 {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrCorruptRecord, "prefix of %d bytes", i)
	}
	_, err := DecodeLock(append([]byte{'X'}, lock[1:]...))
	require.ErrorIs(t, err, ErrCorruptRecord)
	_, err = DecodeLock(append(lock, 'Z'))
	require.ErrorIs(t, err, ErrCorruptRecord)

	w := (&Write{Kind: WritePut, StartTS: 1 << 40, ShortValue: []byte("value"), HasShortValue: true}).Encode(nil)
	for i := 0; i < len(w); i++ {
		_, err := DecodeWrite(w[:i])
		if i == 7 { // kind and start_ts: a record without a short value
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrCorruptRecord, "prefix of %d bytes", i)
	}
	_, err = DecodeWrite([]byte{'Q', 1})
	require.ErrorIs(t, err, ErrCorruptRecord)
}
