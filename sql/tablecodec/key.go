package tablecodec

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/kv/codec"
)

// Key prefixes.
const (
	// TablePrefix starts every key owned by a table.
	TablePrefix byte = 't'
	// MetaPrefix starts every catalog key.
	MetaPrefix byte = 'm'
)

var (
	recordSep = []byte("_r")
	indexSep  = []byte("_i")
)

// RowKeyLen is the length of every row key.
const RowKeyLen = 1 + 8 + 2 + 8

// ErrInvalidKey is returned when a key is not a row key.
var ErrInvalidKey = errors.New("tablecodec: not a row key")

// AppendTablePrefix appends 't' + EncodeInt(tableID).
func AppendTablePrefix(b []byte, tableID int64) []byte {
	b = append(b, TablePrefix)
	return codec.EncodeInt(b, tableID)
}

// AppendRecordPrefix appends the prefix shared by all row keys of tableID.
func AppendRecordPrefix(b []byte, tableID int64) []byte {
	b = AppendTablePrefix(b, tableID)
	return append(b, recordSep...)
}

// AppendIndexPrefix appends the prefix shared by all keys of index indexID.
func AppendIndexPrefix(b []byte, tableID, indexID int64) []byte {
	b = AppendTablePrefix(b, tableID)
	b = append(b, indexSep...)
	return codec.EncodeInt(b, indexID)
}

// AppendRowKey appends the key of the row with the given handle.
func AppendRowKey(b []byte, tableID, handle int64) []byte {
	b = AppendRecordPrefix(b, tableID)
	return codec.EncodeInt(b, handle)
}

// RowKey returns a freshly allocated row key.
func RowKey(tableID, handle int64) []byte {
	return AppendRowKey(make([]byte, 0, RowKeyLen), tableID, handle)
}

// DecodeRowKey splits a row key into its table id and handle.
func DecodeRowKey(key []byte) (tableID, handle int64, err error) {
	if len(key) != RowKeyLen || key[0] != TablePrefix || key[9] != recordSep[0] || key[10] != recordSep[1] {
		return 0, 0, fmt.Errorf("%w: %x", ErrInvalidKey, key)
	}
	_, tableID, _ = codec.DecodeInt(key[1:9])
	_, handle, _ = codec.DecodeInt(key[11:])
	return tableID, handle, nil
}

// RecordRange returns the [start, end) range holding every row of tableID.
func RecordRange(tableID int64) (start, end []byte) {
	start = AppendRecordPrefix(make([]byte, 0, 11), tableID)
	end = PrefixNext(start)
	return start, end
}

// TableRange returns the [start, end) range holding every key of tableID
// (rows and indexes).
func TableRange(tableID int64) (start, end []byte) {
	start = AppendTablePrefix(make([]byte, 0, 9), tableID)
	return start, PrefixNext(start)
}

// PrefixNext returns the smallest key greater than every key with prefix p,
// in a new slice. For an all-0xFF prefix it returns nil (unbounded).
func PrefixNext(p []byte) []byte {
	out := append([]byte(nil), p...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			return out[:i+1]
		}
	}
	return nil
}
