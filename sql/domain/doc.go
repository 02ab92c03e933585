// Package domain holds a SQL node's shared state: everything the node's
// sessions use together and none of them owns. One Domain per node, built
// by sql/server from its configuration and handed to every session
// (session.New); TiDB's pkg/domain in small.
//
// A Domain owns
//
//   - the schema cache (sql/catalog.Catalog) and its version keeper,
//   - the DDL job queue and, while this node is DDL owner, its worker
//     (sql/ddl.DDL),
//   - table statistics and modify counts (sql/statistics.Handle) with the
//     auto-analyze loop,
//   - the row-handle and AUTO_INCREMENT allocators (sql/autoid),
//   - information_schema (sql/infoschema), wired into every executor's
//     planner (executor.New) at construction,
//   - the privilege tables' cache (sql/privilege.Manager).
//
// # Usage
//
//	dom := domain.New(domain.Config{Store: store, Addr: addr})
//	wait := dom.Start(ctx)                // pollers, DDL worker, statistics
//	defer wait()
//	sess := session.New(dom, connID, user, host)
//
// New reads nothing from the cluster; Start starts the background work,
// which stops when ctx ends. Everything a Domain
// hands out is safe for concurrent use; per-connection state (variables,
// the transaction, prepared statements) lives in sql/session.
package domain
