// Package types describes column types (FieldType, persisted in the catalog
// as JSON) and converts values into a column's storage form with MySQL's
// strict-mode checks: range for integers and decimals, length for strings,
// validity for dates.
//
// Storage forms (Datum kinds, datum.go): signed integers and YEAR are
// Int64, unsigned integers and BIT(n) Uint64, FLOAT/DOUBLE Float64; strings,
// blobs, DECIMAL (canonical text, e.g. "12.30" for DECIMAL(5,2)),
// DATE/DATETIME/TIMESTAMP (canonical text, e.g. "2024-01-02 03:04:05";
// MySQL's zero date "0000-00-00" and dates with a zero month or day,
// DateParts, are stored too and sort first, bytewise; sql_mode's
// NO_ZERO_DATE / NO_ZERO_IN_DATE are the writer's check, ZeroParts; so
// is ALLOW_INVALID_DATES, under which ParseInvalidDate reads a day the
// month lacks, '2004-02-31', stored as it is too), TIME
// ("-12:34:56.5" with the column's fsp digits) and ENUM/SET (the members'
// text as the column spells them) are Bytes. A TIMESTAMP's text is its UTC
// wall clock (the session time zone is applied by sql/expr, timezone.go;
// rows written before time_zone was honoured were written with SYSTEM, UTC
// on Strata's hosts, so they read unchanged). Sorting and comparing TIME
// parses the durations and ENUM sorts by member position (expr.CompareAs);
// SET sorts as its text, not by its bit value as in MySQL. JSON is its
// own kind, KindJSON (below).
//
// A text type's collation is its Coll (a MySQL collation id, sql/collate;
// 0 is utf8mb4_bin, the default); Collation() is the id values compare
// under and the one column definitions send.
//
// Everything here is pure and safe for concurrent use.
//
// # Decimals and conversion errors
//
// DECIMAL values are exact (decimal.go): a coefficient and a scale, the
// coefficient an int64 when it fits and a big.Int beyond, with MySQL's
// result scales; a value stored into a column is rounded half away from zero
// to the column's scale. A value out of a column's range is 1264, a string
// too long for it 1406, a string with a numeric prefix for a number
// column 1265, one with none 1366 (convert.go). A string read as a number
// is its numeric prefix (NumericPrefix, IntPrefix: numprefix.go), which
// also says whether that is all of it (whether MySQL warns).
//
// # JSON
//
// A JSON value is stored in a binary form (json.go, modelled on MySQL's and
// TiDB's): a type code, then the value; arrays and objects carry offset
// tables so that a path reads one member without decoding the rest, and
// an object's keys are sorted as MySQL sorts them (shorter first, then
// bytewise), which is also the order MySQL prints them in. ParseJSON
// reads JSON text with MySQL's error messages and byte positions (ERROR
// 3140 / 3141 at the caller) and refuses nesting deeper than 100 (3157);
// ParseJSONPath reads MySQL's path language (json_path.go: $, .key,
// ."key", .*, [n], [last-n], [m to n], [*], **; 3143 otherwise).
// Changes (JSON_SET, JSON_REMOVE, merges) decode into a Go tree and encode
// again (json_path.go, json_ops.go). CompareJSON is MySQL's JSON
// comparison: type precedence, numbers numerically. A JSON column accepts
// JSON and JSON text; any other value is 3140 ("may need CAST").
package types
