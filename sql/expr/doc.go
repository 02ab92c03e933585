// Package expr compiles TiDB parser expressions into Expr trees and
// evaluates them against a row.
//
// Compilation resolves column names against a Schema (to row offsets),
// folds session values (DATABASE(), @@variables, ...) into constants through
// Env, and fixes each node's static type, which decides how comparisons
// work: two string/temporal operands compare as strings; anything else
// compares numerically (exactly for two integers, as float64 otherwise,
// strings by their numeric prefix as MySQL does). NULL follows SQL
// three-valued logic.
//
// # Warnings
//
// Evaluation raises MySQL's conditions through one hook, an Env that
// implements Warner (the session), which records each as a warning of
// the statement or returns the error that ends it (strict writes):
// division and modulo by zero are NULL with 1365 (under sql_mode
// ERROR_FOR_DIVISION_BY_ZERO); a string operand of arithmetic that is not
// all number is its numeric prefix with 1292 "Truncated incorrect DOUBLE
// value"; CAST to SIGNED / UNSIGNED, DECIMAL and DOUBLE likewise
// ("INTEGER", "DECIMAL", "DOUBLE"; SIGNED reads integer digits only:
// CAST('1.5' AS SIGNED) is 1); CAST to DATE / DATETIME and DATE_ADD /
// DATE_SUB of a string that is no date are NULL with 1292 "Incorrect
// datetime value", CAST to TIME of no time NULL (or clipped to
// ±838:59:59) with "Truncated incorrect time value". A builtin's function
// raises one by returning a *Condition beside its result (funcExpr
// reports it). Comparisons of a string with a number do not warn yet.
// Expressions the stores evaluate (pushed down, FromPBWarn) raise theirs
// into a collector of the request; the response carries them (the first
// 64 of each) and the SQL node hands each to the statement's Warner, so a
// pushed-down division by zero is the same warning, or strict error, as
// one the SQL node evaluates.
//
// # Collations
//
// A text type carries its collation (types.FieldType.Coll; 0 is
// utf8mb4_bin). Strings under utf8mb4_bin and the other binary collations
// compare bytewise, on the same code path as before collations (a nil
// *collate.Collation in the compiled node, no interface call); under
// general_ci, unicode_ci or 0900_ai_ci, =, <>, <, >, BETWEEN, IN, CASE x
// WHEN and LIKE compare with sql/collate. Which collation a comparison
// uses follows MySQL's coercibility rules (collation.go: COLLATE 0, a
// column 2, a literal 4, a number 5, NULL 6; the lower wins, a binary
// string wins a tie, two different implicit or explicit ones are ERROR
// 1267). `e COLLATE name` is 1273 for an unknown name and 1253 for
// another character set's. CompareAs (ORDER BY, MIN / MAX) uses the
// type's collation, AppendGroupKeyColl a string's sort key (GROUP BY,
// DISTINCT, hash joins, the stores' partial aggregation), and the
// comparison's collation travels in ToPB's tree, so the stores compare
// as the SQL node does. String functions (CONCAT, UPPER, SUBSTRING, ...)
// give their result their arguments' collation.
//
// Scalar functions are compiled from tables (builtin*.go): each checks its
// argument count (ERROR 1582) and fixes its result type. Regular
// expressions run on Go's RE2 rather than MySQL's ICU (builtin_regexp.go
// lists the differences); they match case-sensitively whatever the
// collation. Functions whose value differs per call (RAND, UUID) are evaluated
// per row: nothing here folds them, and the planner does not fold them
// either.
//
// A compiled Expr is safe for concurrent use and immutable but for
// RAND(N)'s sequence (one per compiled call, under a mutex), the last
// pattern a REGEXP with a non-constant pattern compiled, and the constants
// of parameter markers compiled for a cached plan, which its owner
// rebinds between executions (ParamRecorder, Constant.Rebind; a
// constant compilation chose something from is Folded and makes the plan
// uncacheable); Eval does not retain row. Byte results may alias row or
// the Expr's constants.
//
// # Where functions live
//
// compileFunc (compile.go) looks a name up in the builtin tables first
// (builtin_string.go, builtin_math.go, builtin_time.go, ...: SUBSTRING,
// TRIM, LOCATE, LPAD, ROUND, TRUNCATE, GREATEST, EXTRACT, DATE_ADD and
// d + INTERVAL n unit, DATEDIFF, TIMESTAMPDIFF, DATE_FORMAT, STR_TO_DATE,
// ...), then handles session functions and a few basics itself. The
// clock functions (NOW, CURDATE, CURTIME, SYSDATE, LOCALTIME[STAMP]) are
// constants of Env.Now in the session time zone (TimeZoner; Now's own
// zone without one), UTC_TIMESTAMP / UTC_DATE / UTC_TIME of it in UTC;
// FROM_UNIXTIME and UNIX_TIMESTAMP(d) convert in the session zone, a
// wall clock in a daylight-saving gap meaning the instant the gap ends
// (LocalInstant, as MySQL); CONVERT_TZ's 'SYSTEM' is the process's zone.
// Zones are parsed by ParseTimeZone (Go's tzdata is embedded).
//
// # TIMESTAMP and the session time zone
//
// A TIMESTAMP value is its UTC wall clock everywhere below the client
// (stored, indexed, compared, sorted, pushed to the stores); timezone.go
// says where the session zone applies: a constant compared with a
// TIMESTAMP is converted to UTC at compile time (so the comparison stays
// pushable and index ranges agree, planner.ranger), any other read of a
// TIMESTAMP as a date, string or number goes through a localTimestamp
// node (a scalar function: never pushed, so the stores need no zone),
// writes convert other values to UTC (WriteValue, WriteDatum) and the
// protocol shows TIMESTAMP columns in the zone (TimestampToLocal). In a
// UTC session (TimestampZone nil) nothing is compiled differently. ToPB
// (pb.go) serializes comparisons, logic, IN, arithmetic, LIKE and CASE for
// the stores; a scalar function or a cast is not pushable (ErrNotPushable).
//
// # JSON
//
// JSON values are types.KindJSON datums. The JSON functions
// (builtin_json.go; -> and ->> are JSON_EXTRACT and JSON_UNQUOTE of it)
// and CAST(x AS JSON) are function nodes, so they stay on the SQL node. A
// comparison of a JSON operand with a SQL value converts the SQL value to
// JSON first (jsonValueExpr: a string is a JSON string, a DECIMAL a
// number) and compares as MySQL does (types.CompareJSON); that node is not
// pushable either. A JSON column read by a pushable node (IS NULL, a
// comparison of two JSON columns, MIN/MAX) is evaluated by the stores with
// this same code.
package expr
