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
	// Warnings are the statement's notes and warnings, in order (SHOW
	// WARNINGS; their count goes in the OK / EOF packet).
	Warnings []Warning
}

// Warning is one row of SHOW WARNINGS.
type Warning struct {
	Level string // "Note", "Warning" or "Error"
	Code  uint16
	Msg   string
}

// Warn appends a Warning-level message.
func (r *Result) Warn(code uint16, msg string) {
	r.Warnings = append(r.Warnings, Warning{Level: "Warning", Code: code, Msg: msg})
}

// IsQuery reports whether the result is a result set.
func (r *Result) IsQuery() bool { return r.Columns != nil }
