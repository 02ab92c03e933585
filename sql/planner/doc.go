// Package planner turns a parsed statement into a physical plan the
// executor runs as a tree of streaming operators: SELECT over tables,
// joins (join.go, joinreorder.go), subqueries (subquery.go,
// decorrelate.go), derived tables and views (view.go), CTEs including
// recursive ones (cte.go), window functions (window.go), UNION (setop.go)
// and information_schema tables (memtable.go), and the reads of UPDATE and
// DELETE (ScanPlan). A grouped SELECT is checked against sql_mode
// ONLY_FULL_GROUP_BY (fullgroupby.go: functional dependencies through
// primary and NOT NULL unique keys and equalities; window functions over
// the groups included), and so is SELECT DISTINCT ... ORDER BY (3065 for
// an ORDER BY column neither selected nor dependent on the selection).
//
// Its behaviour is pinned by the scripts in testdata/ (EXPLAIN of each
// access path beside the rows the plan returns); they run through a whole
// SQL node in sql/server's TestPlannerScripts, since they need sessions,
// the catalog, statistics and storage.
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
//     ranges, then batched row gets; an index of a common-handle table
//     covers the key's columns its handle gives back), compared by a cost from estimated
//     row counts (TiDB's pseudo statistics: 10000 rows, 1/1000 for an
//     equality, 1/40 for a bounded range, 1/3 for a half-open one) and
//     restricted by USE / FORCE / IGNORE INDEX. Row counts come from
//     ANALYZE's statistics where a table has them (stats.go). Only public
//     indexes are read: an index being built (delete-only, write-only)
//     never is. A clustered PRIMARY KEY of a common-handle table is the
//     rows themselves: its points read row keys (PointGet.Key) and its
//     ranges are a TableReader over row-key ranges (TableScan.PKRanges),
//     also as an IndexJoin's inner side. Joins are HashJoins or IndexJoins (the outer side's keys
//     looked up in the inner table's handle or index), inner joins of
//     three or more tables reordered greedily by estimated size.
//  4. Store pushdown (strata_allow_pushdown, ON by default), over a
//     TableReader: the residual conditions when every one serializes
//     (expr.ToPB) become a cop[tikv] Selection, an aggregation (with or
//     without GROUP BY, when every key and argument serializes; only
//     COUNT, SUM, AVG, MIN and MAX without DISTINCT: not GROUP_CONCAT, the
//     JSON, variance, standard deviation and BIT_* aggregates) a cop[tikv]
//     HashAgg of partial states merged by the
//     root HashAgg (PushedPartial), and ORDER BY ... LIMIT a cop[tikv] TopN
//     of offset+count rows per region under the root TopN. An IndexLookUp's
//     row lookups run on the stores (strata_index_lookup_pushdown). A LIMIT
//     reaches the access path only when no sort comes between them.
//
// Plans are built per execution and are not shared; a plan holds the
// catalog objects it was built from, which are immutable. The exception is
// a prepared SELECT, and the read of a prepared single-table UPDATE or
// DELETE (cache.go, TiDB's prepared plan cache): PlanPrepared and
// PlanPreparedScan plan it in an Env that records the constants its
// parameter markers
// compile to (expr.ParamRecorder), and its access paths keep the
// conditions their ranges came from (rangeSpec). Rebind then readies the
// plan for each execution: the tables must still be the catalog's, each
// marker's constants take the execution's value, and every access path
// detaches its conditions again for the new values, which must give the
// same shape (the same conditions turned into ranges, the same columns
// bounded, still a point, a batch, ranges or nothing); then its handle
// ranges, index ranges, point key or IN-list points are the new ones, and
// an index join's lookup constants from parameters are evaluated again
// (IndexJoin.constE; a NULL plans again). LIMIT ? and OFFSET ? hold the
// plan to the values it was planned with (fixParam: TiDB keys the plan by
// them); another value plans again. Otherwise the statement is planned
// again. A statement whose plan would hold only for its values is not
// cached, with a reason: a condition on parameters alone (folded), a
// LIMIT operand other than a marker, a parameter folded by compilation
// (expr.Constant.Folded: a date string's canonical form, a precision),
// an outer-join simplification from a parameter; so are
// statements with variables or functions of the session or clock,
// subqueries, CTEs, window functions, derived tables, views and system
// tables.
//
// EXPLAIN renders a plan with Explain: TiDB's operator names and ids, the
// tree drawing, estRows, task (root on the SQL node, cop[tikv] for the
// reads the stores serve), access object and operator info; expression
// text is built only then.
//
// Ranges (ranger.go) follow TiDB's pkg/util/ranger: for each index column
// in order, the conjuncts on that column alone (or, for a generated
// column, on its expression, as MySQL 8 matches them: same canonical text,
// model.GeneratedText, and type class; such a conjunct narrows the index
// and stays in the Selection) (=, IN, <, <=, >, >=,
// BETWEEN, IS [NOT] NULL, and OR / AND of those) become a union of
// intervals; while every interval is a point the next column extends the
// ranges, the first non-point column ends them. Conditions are access
// conditions (removed from the Selection) only when their intervals are
// exact: integer columns compared with numbers, string columns with
// strings. DATE, DATETIME and TIMESTAMP columns are bounded by their
// canonical text (types.TemporalConstant); a date constant bounding a
// TIMESTAMP column is read in the session time zone and bounds its UTC
// values (ranger.utc), as the evaluator compares them (sql/expr
// timezone.go). DECIMAL, FLOAT and TIME columns are never turned into
// ranges. An index of a column of a
// non-binary collation holds the collation's sort key
// (model.IndexDatum): its ranges and point gets are bounded by the
// constants' sort keys, it never covers the column's value (the row is
// read), and a constant under COLLATE does not bound it. A prefix key
// part (`v(3)`) holds the values' first characters: its intervals are over
// the constants' prefixes with closed bounds (`v < 'abd'` is `prefix <=
// 'abd'`), never exact (the Selection keeps the condition), the index never
// covers the column nor gives an order from that column on, and an index
// join looks up only the columns before it.
//
// # Joins
//
// Comma, CROSS, INNER and LEFT / RIGHT [OUTER] joins with ON, USING or
// NATURAL resolve names as MySQL does (join.go: a USING column is one column
// for * and unqualified names; 1052 for an ambiguous name, 1066 for a
// repeated alias). WHERE conjuncts are qualified, x = c AND x = y adds y = c,
// and each conjunct moves below the joins to the one table it reads; a WHERE
// that rejects the NULL rows of an outer join's inner side makes it an inner
// join. HashJoin builds on the side with fewer estimated rows (the inner side
// of an outer join). IndexJoin replaces it when the inner table's handle or
// an index prefix is among the keys and it costs less, in rows read, than
// the hash join and the index join the other way round (a lookup by every
// column of a unique index is a Batch_Point_Get of the keys,
// IndexJoin.Unique); a pseudo estimate
// (a table without statistics) weighs 10 times more, so an unanalyzed big
// table is not trusted as a small outer side. STRAIGHT_JOIN keeps MySQL's
// meaning: no reorder, the left table first. The greedy reorder of three or
// more inner-joined tables (joinreorder.go) starts from the smallest
// estimated input and adds at each step the smallest table connected by an
// equality to those joined; a Projection puts the columns back in the
// statement's order. A condition holding a correlated subquery is placed
// where every table it may name is joined.
//
// # Other sources
//
// A derived table is a SubqueryScan over its plan; in a join, a = constant
// the statement implies on a plain column the subquery groups on goes into
// the subquery's WHERE (derivedpush.go). A subquery in an expression
// (subquery.go: scalar, EXISTS, IN, ANY / ALL, with MySQL's NULL semantics,
// 1242 and 1241) is planned with the statement; an uncorrelated one runs at
// most once, in the statement's transaction. A name its own tables lack
// resolves in the enclosing queries (expr.OuterResolver), which makes it
// correlated. When every outer reference is a WHERE conjunct inner = outer
// on integers or strings it is decorrelated (decorrelate.go): run once
// without those conjuncts, hashed by the inner sides, and looked up per outer
// row; otherwise it re-runs per outer row, cached per distinct outer value.
// A FROM name resolves to a CTE in scope before a table (cte.go); a
// non-recursive CTE is planned as a derived table at each reference, a
// recursive one becomes the executor's CTE operator, with MySQL's 3573 /
// 3574 / 3575 / 3577 restrictions. Window functions (window.go) run after
// GROUP BY / HAVING and before ORDER BY / DISTINCT / LIMIT; the functions of
// one window share a Sort and a Window operator; elsewhere a window function
// is 3593, window definition errors are 3579 to 3591. GROUP BY ... WITH
// ROLLUP takes columns only (an expression is 1235). A view (view.go) is
// planned from its stored SQL as a derived table, names resolving in the
// view's database: 1356 when it no longer plans, 1462 past 32 nested views;
// writing a view is 1288. Expressions serialize for pushdown (expr.ToPB)
// unless they hold a scalar function or a cast.
package planner
