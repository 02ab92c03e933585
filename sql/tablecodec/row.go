package tablecodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/stratadb/strata/sql/types"
)

// RowFormatV1 is the first byte of every row value written by this package.
const RowFormatV1 byte = 1

const (
	tagNull  byte = 0
	tagInt   byte = 1
	tagUint  byte = 2
	tagFloat byte = 3
	tagBytes byte = 4
	tagJSON  byte = 5 // a JSON value's binary form (types/json.go)
)

// ErrCorruptRow is returned when a row value cannot be decoded.
var ErrCorruptRow = errors.New("tablecodec: corrupt row value")

// EncodeRow appends the row value for the given columns to buf and returns it.
// colIDs and vals are parallel; KindAbsent values are skipped.
func EncodeRow(buf []byte, colIDs []int64, vals []types.Datum) []byte {
	buf = append(buf, RowFormatV1)
	for i, d := range vals {
		if d.Kind() == types.KindAbsent {
			continue
		}
		buf = binary.AppendUvarint(buf, uint64(colIDs[i]))
		switch d.Kind() {
		case types.KindNull:
			buf = append(buf, tagNull)
		case types.KindInt64:
			buf = append(buf, tagInt)
			buf = binary.AppendVarint(buf, d.Int64())
		case types.KindUint64:
			buf = append(buf, tagUint)
			buf = binary.AppendUvarint(buf, d.Uint64())
		case types.KindFloat64:
			buf = append(buf, tagFloat)
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(d.Float64()))
		case types.KindBytes, types.KindJSON:
			tag := tagBytes
			if d.Kind() == types.KindJSON {
				tag = tagJSON
			}
			buf = append(buf, tag)
			buf = binary.AppendUvarint(buf, uint64(len(d.Bytes())))
			buf = append(buf, d.Bytes()...)
		}
	}
	return buf
}

// RowDecoder decodes the requested columns of row values. It is immutable
// and safe for concurrent use.
type RowDecoder struct {
	pos []int32 // column id -> output position, -1 when not requested
	n   int
}

// SeqColumnIDs returns the column ids 0..n-1: those of a row of computed
// values (a coprocessor's projection or partial aggregate).
func SeqColumnIDs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	return ids
}

// NewRowDecoder returns a decoder that writes column colIDs[i] to out[i].
// Column ids must be non-negative and small (they index a slice).
func NewRowDecoder(colIDs []int64) *RowDecoder {
	maxID := int64(0)
	for _, id := range colIDs {
		maxID = max(maxID, id)
	}
	pos := make([]int32, maxID+1)
	for i := range pos {
		pos[i] = -1
	}
	for i, id := range colIDs {
		pos[id] = int32(i)
	}
	return &RowDecoder{pos: pos, n: len(colIDs)}
}

// Decode fills out[:n] (n = number of requested columns) from row. Columns
// missing from the value are KindAbsent. Byte values alias row. It does not
// allocate.
func (rd *RowDecoder) Decode(row []byte, out []types.Datum) error {
	if len(out) < rd.n {
		return fmt.Errorf("tablecodec: output has %d slots, decoder needs %d", len(out), rd.n)
	}
	for i := 0; i < rd.n; i++ {
		out[i] = types.AbsentDatum
	}
	if len(row) == 0 || row[0] != RowFormatV1 {
		return fmt.Errorf("%w: bad version", ErrCorruptRow)
	}
	b := row[1:]
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 || len(b) <= n {
			return fmt.Errorf("%w: column id", ErrCorruptRow)
		}
		tag := b[n]
		b = b[n+1:]
		var d types.Datum
		switch tag {
		case tagNull:
		case tagInt:
			v, m := binary.Varint(b)
			if m <= 0 {
				return fmt.Errorf("%w: int", ErrCorruptRow)
			}
			d, b = types.NewInt(v), b[m:]
		case tagUint:
			v, m := binary.Uvarint(b)
			if m <= 0 {
				return fmt.Errorf("%w: uint", ErrCorruptRow)
			}
			d, b = types.NewUint(v), b[m:]
		case tagFloat:
			if len(b) < 8 {
				return fmt.Errorf("%w: float", ErrCorruptRow)
			}
			d, b = types.NewFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), b[8:]
		case tagBytes, tagJSON:
			l, m := binary.Uvarint(b)
			if m <= 0 || l > uint64(len(b)-m) || (tag == tagJSON && l == 0) {
				return fmt.Errorf("%w: bytes", ErrCorruptRow)
			}
			d, b = types.NewBytes(b[m:m+int(l):m+int(l)]), b[m+int(l):]
			if tag == tagJSON {
				d = types.NewJSONBytes(d.Bytes())
			}
		default:
			return fmt.Errorf("%w: tag %d", ErrCorruptRow, tag)
		}
		if id < uint64(len(rd.pos)) {
			if p := rd.pos[id]; p >= 0 {
				out[p] = d
			}
		}
	}
	return nil
}
