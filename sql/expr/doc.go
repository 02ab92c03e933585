// Package expr compiles TiDB parser expressions into Expr trees and
// evaluates them against a row.
//
// Compilation resolves column names against a Schema (to row offsets),
// folds session values (DATABASE(), @@variables, ...) into constants through
// Env, and fixes each node's static type, which decides how comparisons
// work: two string/temporal operands compare bytewise (Strata's collation is
// utf8mb4_bin); anything else compares numerically (exactly for two
// integers, as float64 otherwise, strings by their numeric prefix as MySQL
// does). NULL follows SQL three-valued logic.
//
// A compiled Expr is immutable and safe for concurrent use; Eval does not
// retain row. Byte results may alias row or the Expr's constants.
package expr
