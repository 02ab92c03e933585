// Package sql is the root of Strata's SQL layer: the stateless SQL node that
// speaks the MySQL protocol and turns statements into KV reads and writes.
// It holds no code; the contract the layer needs from below is package kv
// (kv.Storage, kv.Txn), implemented by kvclient/txn.Storage and wired in
// cmd/sqlnode.
//
// Subpackages (each has its own doc.go), roughly in the order a query
// passes through them:
//
//	sql/server      MySQL wire protocol: listener, handshake, auth, commands, result packets
//	sql/auth        authentication plugins and password hashes
//	sql/domain      the node's shared state: catalog, DDL owner, statistics,
//	                id allocators, information_schema, privileges
//	sql/session     per-connection state (variables, transaction, prepared
//	                statements); parses a query and dispatches each statement
//	sql/planner     logical and physical plans: access paths, joins, CTEs,
//	                windows, aggregation, what is pushed down to the stores
//	sql/executor    runs statements: plans and DML against a kv.Txn, DDL,
//	                SHOW, SPLIT, ADMIN, ANALYZE, LOAD DATA, views, accounts
//	sql/expr        expression compilation (TiDB AST -> Expr) and evaluation,
//	                also run by the stores' coprocessor
//	sql/types       column types, Datum, value conversion and range checks
//	sql/collate     collations: compare, sort keys, LIKE (shared with the stores)
//	sql/table       writes a row with its index entries
//	sql/tablecodec  SQL rows and index entries onto KV keys and values
//	sql/catalog     databases and tables, persisted as JSON under 'm' keys, cached
//	sql/model       the schema model (DBInfo, TableInfo, ColumnInfo, IndexInfo,
//	                schema states), shared with the stores' coprocessor
//	sql/ddl         schema changes as jobs run by the DDL owner; CREATE TABLE
//	                and index definitions to table info
//	sql/autoid      row handles and AUTO_INCREMENT values
//	sql/statistics  what ANALYZE TABLE learns, for the planner
//	sql/infoschema  information_schema tables
//	sql/trace       tail-based trace sampling: which statements' spans are kept
//	sql/privilege   users and privileges (GRANT, REVOKE; no roles)
//	sql/memory      statement memory tracking and quotas
//	sql/gcleader    the cluster's GC rounds, run by one SQL node
//	sql/errno       MySQL error codes, SQLSTATEs and the client-visible Error type
package sql
