// Package codec holds the memcomparable encodings every key in Strata is built
// from: the byte order of an encoded value is the order of the value itself,
// so Pebble's bytewise comparator sorts rows, index entries and MVCC versions
// correctly.
//
// Encoders append to a caller-owned buffer and return it (no allocation when
// the buffer has room). Decoders return the remaining input and never retain
// or modify it.
package codec
