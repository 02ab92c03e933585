// Package tablecodec maps SQL rows onto KV keys and values.
//
// # Keys
//
// Every table owns the key range that starts with 't' + codec.EncodeInt(tableID).
// Row keys are
//
//	't' + EncodeInt(tableID) + "_r" + EncodeInt(handle)
//
// so a table's rows are contiguous and sorted by handle, and RecordRange gives
// the [start, end) range a full scan covers. Secondary index entries are
//
//	't' + EncodeInt(tableID) + "_i" + EncodeInt(indexID) + values [+ EncodeInt(handle)]
//
// with each value memcomparable (a flag byte, then an order-preserving
// encoding; NULL first; a common handle in place of EncodeInt(handle),
// below). A string column of a non-binary collation
// (utf8mb4_general_ci, ...) stores its collation's sort key there, not
// its value (model.IndexDatum), and a prefix key part (`v(10)`) the value's
// first characters (model.IndexColumnDatum); the row keeps the value. A unique index's entry has no handle in its key
// (two rows with the same values collide on one key) and stores the handle
// as its value; non-unique entries, and unique ones with a NULL value, carry
// the handle in the key and store "0".
// Catalog metadata lives under the single byte prefix 'm' (MetaPrefix), which
// sorts before every table.
//
// # Handles
//
// A Handle is an int handle (an integer PRIMARY KEY or _tidb_rowid; the
// row key above) or a common handle (handle.go), the key of a row of a
// table clustered by a PRIMARY KEY of another type or of several columns:
//
//	't' + EncodeInt(tableID) + "_r" + AppendCommonHandle(key values)
//
// where each key value is memcomparable as in index keys (a collation's
// sort key for a string of a non-binary collation), except a DECIMAL, which
// is flag 0x06, a sign class (0x00 negative, 0x01 zero, 0x02 positive),
// then EncodeInt(exponent) and EncodeBytes(significant digits) of its
// absolute value (0.digits x 10^exponent), inverted bytewise when negative,
// so the key sorts numerically and 1.5 and 1.50 collide. sql/model
// (handle.go) writes it for tables whose TableInfo says CommonHandle:
// such a table's secondary index entries carry the common handle where
// an int handle's carry EncodeInt(handle) (at the end of a non-unique
// entry's key, as a unique entry's value), and its PRIMARY KEY has no
// entries of its own. DecodeIndexKey, DecodeIndexHandle and
// DecodeHandleRowKey take the table's layout (common) to tell which.
//
// # Row values
//
// A row value is a version byte (RowFormatV1) followed, per stored column, by
// the column id (uvarint), a one-byte type tag and the value:
//
//	tagNull  : nothing
//	tagInt   : zigzag varint
//	tagUint  : uvarint
//	tagFloat : 8 bytes, little-endian IEEE-754 bits
//	tagBytes : uvarint length + bytes
//	tagJSON  : uvarint length + a JSON value's binary form (types.JSON:
//	           type code, then the value), decoded as a KindJSON datum
//
// NULL is stored explicitly; a column absent from a value (added later by a
// schema change) decodes as absent so the caller can apply its default.
//
// # Ownership
//
// Encoders append into a caller-owned buffer and return it. Decoders never
// copy: byte values returned in a Datum alias the input, which the caller must
// keep alive and unmodified for as long as it uses the Datum. A RowDecoder is
// immutable after construction and safe for concurrent use.
package tablecodec
