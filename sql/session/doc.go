// Package session holds one client connection's state (current database,
// session and user variables, last insert id) and turns query text into
// results: it parses with the TiDB parser, dispatches each statement (DDL to
// the catalog, DML to the executor, SHOW/SET/USE here) and maps every
// failure to a MySQL error (sql/errno).
//
// A Session belongs to one connection and is not safe for concurrent use.
// Everything it shares with other sessions (Catalog, Executor) is.
package session
