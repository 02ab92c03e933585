// Package planner turns a parsed statement into a physical plan the
// executor runs as a tree of streaming operators: SELECT over tables,
// joins (join.go, joinreorder.go), subqueries (subquery.go,
// decorrelate.go), derived tables and views (view.go), CTEs including
// recursive ones (cte.go), window functions (window.go), UNION (setop.go)
// and information_schema tables (memtable.go), and the reads of UPDATE and
// DELETE (ScanPlan).
//
// Planning has four steps, as in TiDB's pkg/planner/core at our scale:
//
//  1. Name resolution and a logical plan: the FROM clause (one table, or a
//     join tree whose Source has every table's columns), WHERE
//     split into conjuncts, aggregates, HAVING, ORDER BY, LIMIT and the
//     select list, compiled against the source row (every column, then the
//     handle). Names resolve as MySQL's do: a select-list alias may stand
//     anywhere in HAVING (a GROUP BY column of the same name wins), as a
//     bare name in ORDER BY, and in GROUP BY only when no column has the
//     name.
//  2. Rewrites: constant folding of conjuncts (a false or NULL one makes
//     the plan a TableDual of no rows, a true one is dropped; a conjunct
//     calling RAND, UUID or another per-call function is not folded and
//     filters each row), predicate
//     pushdown (every conjunct reaches the data source, where the ranger
//     turns the ones on an index prefix into key ranges and the rest stay a
//     Selection), column pruning (only the columns the statement reads are
//     needed, which decides whether an index covers it), Sort + Limit
//     become TopN, and a Sort the access path already satisfies is dropped.
//  3. Access-path selection: PointGet / BatchPointGet (handle or unique
//     index, every column equal to constants), TableReader over handle
//     ranges or the full table, IndexReader (covering), IndexLookUp (index
//     ranges, then batched row gets), compared by a cost from estimated
//     row counts (TiDB's pseudo statistics: 10000 rows, 1/1000 for an
//     equality, 1/40 for a bounded range, 1/3 for a half-open one) and
//     restricted by USE / FORCE / IGNORE INDEX. Row counts come from
//     ANALYZE's statistics where a table has them (stats.go). Only public
//     indexes are read: an index being built (delete-only, write-only)
//     never is. Joins are HashJoins or IndexJoins (the outer side's keys
//     looked up in the inner table's handle or index), inner joins of
//     three or more tables reordered greedily by estimated size.
//  4. Store pushdown (strata_allow_pushdown, ON by default), over a
//     TableReader: the residual conditions when every one serializes
//     (expr.ToPB) become a cop[tikv] Selection, an aggregation (with or
//     without GROUP BY, when every key and argument serializes; not
//     COUNT(DISTINCT) nor GROUP_CONCAT, as in TiDB before 5.x) a cop[tikv] HashAgg of partial states merged by the
//     root HashAgg (PushedPartial), and ORDER BY ... LIMIT a cop[tikv] TopN
//     of offset+count rows per region under the root TopN. An IndexLookUp's
//     row lookups run on the stores (strata_index_lookup_pushdown). A LIMIT
//     reaches the access path only when no sort comes between them.
//
// Plans are built per execution and are not shared; a plan holds the
// catalog objects it was built from, which are immutable. The exception is
// a prepared point select (cache.go): its PointTemplate is built once per
// session and statement, and BindPoint only checks that the table
// definition is still the one it was built from and binds the parameters
// to the key (TiDB's point-get plan cache).
//
// EXPLAIN renders a plan with Explain: TiDB's operator names and ids, the
// tree drawing, estRows, task (root on the SQL node, cop[tikv] for the
// reads the stores serve), access object and operator info; expression
// text is built only then.
//
// Ranges (ranger.go) follow TiDB's pkg/util/ranger: for each index column
// in order, the conjuncts on that column alone (=, IN, <, <=, >, >=,
// BETWEEN, IS [NOT] NULL, and OR / AND of those) become a union of
// intervals; while every interval is a point the next column extends the
// ranges, the first non-point column ends them. Conditions are access
// conditions (removed from the Selection) only when their intervals are
// exact: integer columns compared with numbers, string columns with
// strings (bytewise, utf8mb4_bin). Decimal and temporal columns are
// stored as text in index keys, so they are never turned into ranges.
package planner
