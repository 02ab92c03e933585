// Package layout keeps the repository's process layout honest. Its test
// (layout_test.go) checks the direction of dependencies with `go list`:
//
//   - cmd/storenode links no SQL front end: no sql/server, sql/session,
//     sql/planner, sql/executor, sql/ddl or sql/domain package.
//   - cmd/sqlnode links nothing under store/.
//   - no package under store/ imports kvclient/ or sql/ beyond sql/types,
//     sql/expr, sql/collate, sql/tablecodec and sql/model (the evaluator,
//     its collations, the codec and the schema both sides share), nor
//     depends on kvclient/ through anything.
//
// Known exceptions are listed in the test with the reason; one that is no
// longer needed fails the test, so the list stays true. The rewrite
// subdirectory is the tool the layout moves of issue 26 were made with.
package layout
