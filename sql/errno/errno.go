package errno

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratadb/strata/kv"
)

// Character set and collation errors.
const (
	ErrUnknownCharacterSet      uint16 = 1115
	ErrCollationCharsetMismatch uint16 = 1253
	ErrIllegalMixOfCollations   uint16 = 1267
	ErrUnknownCollation         uint16 = 1273
)

// MySQL and TiDB error codes used by Strata.
const (
	ErrDBCreateExists      uint16 = 1007
	ErrDBDropExists        uint16 = 1008
	ErrAccessDenied        uint16 = 1045
	ErrNoDB                uint16 = 1046
	ErrUnknownCom          uint16 = 1047
	ErrBadNull             uint16 = 1048
	ErrBadDB               uint16 = 1049
	ErrTableExists         uint16 = 1050
	ErrBadTable            uint16 = 1051
	ErrNonUniq             uint16 = 1052
	ErrBadField            uint16 = 1054
	ErrDupFieldName        uint16 = 1060
	ErrDupEntry            uint16 = 1062
	ErrParse               uint16 = 1064
	ErrMultiplePriKey      uint16 = 1068
	ErrWrongAutoKey        uint16 = 1075
	ErrUnknown             uint16 = 1105
	ErrTableMustHaveCols   uint16 = 1113
	ErrWrongValueCount     uint16 = 1136
	ErrNetPacketTooLarge   uint16 = 1153
	ErrNoSuchTable         uint16 = 1146
	ErrUnknownSystemVar    uint16 = 1193
	ErrLocalVariable       uint16 = 1228 // a SESSION-only variable set GLOBAL
	ErrNotSupportedYet     uint16 = 1235
	ErrWarnDataOutOfRange  uint16 = 1264
	ErrDataTruncated       uint16 = 1265
	ErrTruncatedWrongValue uint16 = 1292
	ErrQueryInterrupted    uint16 = 1317
	ErrWrongValue          uint16 = 1525
	ErrNoDefaultForField   uint16 = 1364
	ErrTruncatedWrongField uint16 = 1366
	ErrDataTooLong         uint16 = 1406
	ErrInvalidUseOfNull    uint16 = 1138
	ErrDivisionByZero      uint16 = 1365
	ErrDataOutOfRange      uint16 = 1690
	ErrWrongFieldSpec      uint16 = 1063
	ErrTooBigDisplayWidth  uint16 = 1439
	ErrInvalidDefault      uint16 = 1067
	ErrWrongDBName         uint16 = 1102
	ErrWrongParamCount     uint16 = 1582 // of a native function
	ErrStoreTimeout        uint16 = 9002 // TiDB's ErrTiKVServerTimeout
	ErrRegionUnavailable   uint16 = 9005
	ErrWriteConflict       uint16 = 9007
	ErrGCTooEarly          uint16 = 9006
	ErrAsOf                uint16 = 8135 // invalid AS OF TIMESTAMP
	ErrResultUndetermined  uint16 = 8110
	ErrEntryTooLarge       uint16 = 8025
	ErrTxnTooLarge         uint16 = 8004
	ErrInfoSchemaExpired   uint16 = 8027 // schema lease not renewed
	ErrInfoSchemaChanged   uint16 = 8028 // a written table's schema changed

	// Prepared statements.
	ErrEmptyQuery           uint16 = 1065
	ErrWrongArguments       uint16 = 1210 // Incorrect arguments to EXECUTE
	ErrUnknownStmtHandler   uint16 = 1243
	ErrUnsupportedPS        uint16 = 1295
	ErrMaxPreparedStmtCount uint16 = 1461

	ErrLockWaitTimeout            uint16 = 1205
	ErrLockDeadlock               uint16 = 1213
	ErrSpDoesNotExist             uint16 = 1305 // SAVEPOINT ... does not exist
	ErrCantExecuteInReadOnlyTxn   uint16 = 1792
	ErrLockNowait                 uint16 = 3572
	ErrIsolationLevelNotSupported uint16 = 8048
	ErrWrongValueForVar           uint16 = 1231
	ErrUnknownTimeZone            uint16 = 1298 // Unknown or incorrect time zone: 'x'
	ErrTooBigPrecision            uint16 = 1426 // NOW(7): Too-big precision 7 specified for 'now'

	// Users and privileges.
	ErrDBAccessDenied          uint16 = 1044
	ErrPasswordNoMatch         uint16 = 1133
	ErrNonexistingGrant        uint16 = 1141
	ErrTableAccessDenied       uint16 = 1142
	ErrColumnAccessDenied      uint16 = 1143
	ErrIllegalGrantForTable    uint16 = 1144
	ErrNonexistingTableGrant   uint16 = 1147
	ErrWrongUsage              uint16 = 1221
	ErrSpecificAccessDenied    uint16 = 1227
	ErrCannotUser              uint16 = 1396
	ErrCantCreateUserWithGrant uint16 = 1410
	ErrWrongStringLength       uint16 = 1470
	ErrAccountLocked           uint16 = 3118

	// Regions.
	ErrKeyDoesNotExist          uint16 = 1176
	ErrInvalidSplitRegionRanges uint16 = 8212 // TiDB's

	// DDL jobs (TiDB's).
	ErrCancelledDDLJob      uint16 = 8214 // the job was cancelled (ADMIN CANCEL DDL JOBS)
	ErrDDLJobNotFound       uint16 = 8224
	ErrCancelFinishedDDLJob uint16 = 8225
	ErrCannotCancelDDLJob   uint16 = 8226

	// Foreign keys (MySQL 8.0's).
	ErrCannotAddForeign        uint16 = 1215 // Cannot add foreign key constraint
	ErrWrongFKDef              uint16 = 1239 // Incorrect foreign key definition
	ErrRowIsReferenced2        uint16 = 1451 // Cannot delete or update a parent row
	ErrNoReferencedRow2        uint16 = 1452 // Cannot add or update a child row
	ErrDropIndexFK             uint16 = 1553 // Cannot drop index: needed in a foreign key constraint
	ErrFKNoIndexParent         uint16 = 1822 // Missing index for constraint in the referenced table
	ErrFKCannotOpenParent      uint16 = 1824 // Failed to open the referenced table
	ErrFKDupName               uint16 = 1826 // Duplicate foreign key constraint name
	ErrFKColumnCannotDrop      uint16 = 1828 // Cannot drop column: needed in a foreign key constraint
	ErrTruncateIllegalFK       uint16 = 1701 // Cannot truncate a table referenced in a foreign key constraint
	ErrFKColumnCannotDropChild uint16 = 1829 // Cannot drop column: needed in a foreign key constraint of table
	ErrFKColumnNotNull         uint16 = 1830 // Column cannot be NOT NULL: needed in a foreign key constraint SET NULL
	ErrFKDepthExceeded         uint16 = 3008 // Foreign key cascade delete/update exceeds max depth
	ErrFKCannotDropParent      uint16 = 3730 // Cannot drop table referenced by a foreign key constraint
	ErrFKNoColumnParent        uint16 = 3734 // Missing column for constraint in the referenced table
	ErrFKIncompatibleColumns   uint16 = 3780 // Referencing column and referenced column are incompatible
)

var sqlStates = map[uint16]string{
	ErrTooBigPrecision:          "42000",
	ErrWrongFKDef:               "42000",
	ErrRowIsReferenced2:         "23000",
	ErrNoReferencedRow2:         "23000",
	1059:                        "42000", // identifier name too long
	1061:                        "42000", // duplicate key name
	1069:                        "42000", // too many keys
	1070:                        "42000", // too many key parts
	1071:                        "42000", // specified key was too long
	1072:                        "42000", // key column doesn't exist
	1091:                        "42000", // can't drop key
	ErrKeyDoesNotExist:          "42000",
	1170:                        "42000", // BLOB/TEXT key without length
	1171:                        "42000", // PRIMARY KEY part NULL
	1280:                        "42000", // wrong index name
	1066:                        "42000", // not unique table/alias
	1109:                        "42S02", // unknown table in MULTI DELETE
	1286:                        "42000", // unknown storage engine
	1222:                        "21000", // different number of columns
	1241:                        "21000", // operand should contain n column(s)
	1242:                        "21000", // subquery returns more than 1 row
	ErrAccessDenied:             "28000",
	ErrNoDB:                     "3D000",
	ErrUnknownCom:               "08S01",
	ErrBadNull:                  "23000",
	ErrBadDB:                    "42000",
	ErrUnknownCharacterSet:      "42000",
	ErrCollationCharsetMismatch: "42000",
	ErrTableExists:              "42S01",
	ErrBadTable:                 "42S02",
	ErrNonUniq:                  "23000",
	ErrBadField:                 "42S22",
	ErrDupFieldName:             "42S21",
	ErrDupEntry:                 "23000",
	ErrParse:                    "42000",
	ErrEmptyQuery:               "42000",
	ErrMaxPreparedStmtCount:     "42000",
	ErrMultiplePriKey:           "42000",
	ErrWrongAutoKey:             "42000",
	ErrTableMustHaveCols:        "42000",
	ErrWrongValueCount:          "21S01",
	ErrNetPacketTooLarge:        "08S01",
	ErrNoSuchTable:              "42S02",
	ErrNotSupportedYet:          "42000",
	ErrWrongParamCount:          "42000",
	ErrWarnDataOutOfRange:       "22003",
	ErrDataTruncated:            "01000",
	ErrTruncatedWrongValue:      "22007",
	ErrQueryInterrupted:         "70100",
	ErrDataTooLong:              "22001",
	ErrInvalidUseOfNull:         "22004",
	ErrDivisionByZero:           "22012",
	ErrDataOutOfRange:           "22003",
	ErrWrongFieldSpec:           "42000",
	ErrTooBigDisplayWidth:       "42000",
	ErrInvalidDefault:           "42000",
	ErrWrongDBName:              "42000",
	ErrLockWaitTimeout:          "HY000",
	ErrLockDeadlock:             "40001",
	ErrSpDoesNotExist:           "42000",
	ErrCantExecuteInReadOnlyTxn: "25006",
	ErrLockNowait:               "HY000",
	ErrWrongValueForVar:         "42000",
	ErrDBAccessDenied:           "42000",
	ErrPasswordNoMatch:          "42000",
	ErrNonexistingGrant:         "42000",
	ErrTableAccessDenied:        "42000",
	ErrColumnAccessDenied:       "42000",
	ErrIllegalGrantForTable:     "42000",
	ErrNonexistingTableGrant:    "42000",
	ErrSpecificAccessDenied:     "42000",
	ErrCantCreateUserWithGrant:  "42000",
	1101:                        "42000", // BLOB, TEXT or JSON column can't have a default value
	// JSON (MySQL 8.0's codes).
	3140: "22032", // invalid JSON text (a column's value)
	3141: "22032", // invalid JSON text in a function's argument
	3143: "42000", // invalid JSON path
	3146: "22032", // invalid data type for JSON data
	3149: "42000", // path wildcards not allowed here
	3151: "22032", // JSON key too long
	3152: "42000", // JSON column used as a key
	3153: "42000", // path '$' not allowed here
	3154: "42000", // oneOrAll argument
	3157: "22032", // JSON document too deep
	3158: "22032", // NULL member name
	3165: "42000", // not a path to an array cell
}

// State returns the SQLSTATE of code (HY000 when MySQL has no specific one).
func State(code uint16) string {
	if s, ok := sqlStates[code]; ok {
		return s
	}
	return "HY000"
}

// Error is an error as the MySQL client sees it.
type Error struct {
	Code  uint16
	State string
	Msg   string
}

func (e *Error) Error() string { return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Msg) }

// New returns an Error with code's SQLSTATE and a formatted message.
func New(code uint16, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, State: State(code), Msg: msg}
}

// NotSupported is ERROR 1235 for a feature Strata does not have yet.
func NotSupported(what string) *Error {
	return New(ErrNotSupportedYet, "This version of Strata doesn't yet support '%s'", what)
}

// Coded is an error that carries its MySQL error code and message without
// importing this package: sql/expr's evaluation errors, and the ones a
// store's coprocessor raised evaluating a pushed-down expression (which
// kvclient returns wrapped with the region).
type Coded interface {
	error
	MySQLError() (code uint16, msg string)
}

// FromError converts any error into the Error the client should see.
func FromError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ce Coded
	if errors.As(err, &ce) {
		code, msg := ce.MySQLError()
		return New(code, "%s", msg)
	}
	var wc *kv.WriteConflictError
	if errors.As(err, &wc) {
		return New(ErrWriteConflict, "Write conflict, txnStartTS=%d, conflictStartTS=%d, conflictCommitTS=%d, key=%x: another transaction committed this row after yours started; the transaction was rolled back, run it again [try again later]",
			wc.StartTS, wc.ConflictStartTS, wc.ConflictCommitTS, wc.Key)
	}
	var gc *kv.GCTooEarlyError
	if errors.As(err, &gc) {
		return New(ErrGCTooEarly, "GC life time is shorter than transaction duration, transaction starts at %s, GC safe point is %s; run shorter transactions or raise tidb_gc_life_time",
			tsTime(gc.StartTS), tsTime(gc.SafePoint))
	}
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		return New(ErrDupEntry, "Duplicate entry for key %x", ke.Key)
	}
	var tl *kv.TxnTooLargeError
	if errors.As(err, &tl) {
		return New(ErrTxnTooLarge, "Transaction is too large, size: %d (limit %d bytes, txn-total-size-limit): split the statement or transaction into smaller ones, or raise the SQL node's txn-total-size-limit", tl.Size, tl.Limit)
	}
	var dl *kv.DeadlockError
	if errors.As(err, &dl) {
		return New(ErrLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction")
	}
	var lc *kv.LockConflictError
	if errors.As(err, &lc) {
		return New(ErrLockNowait, "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set.")
	}
	switch {
	case errors.Is(err, kv.ErrPessimisticLockExpired):
		return New(ErrLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction (a row lock of this transaction expired: it was not renewed for longer than its TTL, as when the client or SQL node stalls, and another transaction then wrote or locked the row; the transaction was rolled back)")
	case errors.Is(err, kv.ErrPessimisticLockLost):
		return New(ErrLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction (a row lock of this transaction was lost when its region's leader failed, and the row was written or locked since; the transaction was rolled back)")
	case errors.Is(err, kv.ErrCommitLost):
		return New(ErrLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction (the commit was lost with its region's leader; the transaction was rolled back and nothing was written)")
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return New(ErrLockWaitTimeout, "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, kv.ErrRegionUnavailable):
		return New(ErrRegionUnavailable, "Region is unavailable; the data's replicas have no reachable leader right now, try again later")
	case errors.Is(err, kv.ErrUndetermined):
		return New(ErrResultUndetermined, "Execution result undetermined: the commit was sent but its outcome is unknown; check whether the change was applied before retrying")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return New(ErrQueryInterrupted, "Query execution was interrupted")
	}
	return New(ErrUnknown, "%s", err.Error())
}

// tsTime renders a TSO timestamp as TiDB does in 9006: its physical time
// and the raw value.
func tsTime(ts uint64) string {
	return fmt.Sprintf("%s (%d)", time.UnixMilli(int64(ts>>18)).UTC().Format("2006-01-02 15:04:05.000 UTC"), ts)
}
