// Package types describes column types (FieldType, persisted in the catalog
// as JSON) and converts values into a column's storage form with MySQL's
// strict-mode checks: range for integers and decimals, length for strings,
// validity for dates.
//
// Storage forms (tablecodec.Datum kinds): signed integers are Int64,
// unsigned integers Uint64, FLOAT/DOUBLE Float64; strings, blobs, DECIMAL
// (canonical text, e.g. "12.30" for DECIMAL(5,2)) and DATE/DATETIME/TIMESTAMP
// (canonical text, e.g. "2024-01-02 03:04:05") are Bytes.
//
// Everything here is pure and safe for concurrent use.
package types
