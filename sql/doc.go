// Package sql is the root of Strata's SQL layer: the stateless SQL node that
// speaks the MySQL protocol and turns statements into KV reads and writes.
//
// Layout (each subpackage has its own doc.go):
//
//	sql/server   MySQL wire protocol: listener, handshake, auth, commands, result packets
//	sql/session  per-connection state; parses a query and dispatches each statement
//	sql/executor plans and runs SELECT / INSERT / SHOW / SET against a Storage
//	sql/catalog  databases and tables, persisted as JSON under 'm' keys, cached
//	sql/expr     expression compilation (TiDB AST -> Expr) and evaluation
//	sql/types    column types, value conversion and range checks
//	sql/errno    MySQL error codes, SQLSTATEs and the client-visible Error type
//
// This package holds the one contract the SQL layer needs from below: Storage.
// The production Storage is pd/pdclient + kvclient (wired in cmd/sqlnode);
// tests use an in-memory fake that lives only in _test files.
package sql
