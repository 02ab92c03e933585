package executor

import (
	"github.com/stratadb/strata/sql/types"
)

// Result is what one statement produced: a result set (Columns != nil) or
// an OK with counters.
type Result struct {
	Columns      []ResultColumn
	Rows         [][]types.Datum
	AffectedRows uint64
	// FoundRows is the rows an UPDATE matched (reported instead of
	// AffectedRows to clients that set CLIENT_FOUND_ROWS).
	FoundRows    uint64
	LastInsertID uint64
	Info         string
}

// IsQuery reports whether the result is a result set.
func (r *Result) IsQuery() bool { return r.Columns != nil }
