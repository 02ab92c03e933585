// Package server is the MySQL protocol front end of a Strata SQL node. New
// builds the node's sql/domain.Domain (catalog, DDL owner, statistics,
// allocators, information_schema, privileges) and every connection's
// session gets it; Run starts the domain's background work before Ready
// and returns after it has stopped.
//
// Accounts come from the cluster's privilege tables (package privilege):
// a login matches user@host in the node's snapshot, confirmed current
// first, and the session checks each statement against the account.
//
// One goroutine per client connection reads a command, runs it through the
// connection's session and writes the response; nothing else runs per
// request. Each connection reuses its read and write buffers across
// commands. Supported: handshake v10 advertising 8.0.11-Strata-<version>,
// the auth plugins mysql_native_password and caching_sha2_password (a
// client answering with another plugin gets an auth switch request;
// caching_sha2_password takes the fast path when this node's cache knows the
// account, else full authentication with the cleartext password over TLS or
// RSA-encrypted with the node's key; a cleartext password on a plain
// connection is refused with 1045), TLS after an SSL request
// (Config.TLS; Config.RequireSecureTransport refuses plain connections with
// ERROR 3159; SHOW STATUS Ssl_cipher / Ssl_version), capability negotiation
// (PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH[_LENENC_CLIENT_DATA],
// CONNECT_WITH_DB, CONNECT_ATTRS, TRANSACTIONS, MULTI_STATEMENTS,
// MULTI_RESULTS, PS_MULTI_RESULTS, DEPRECATE_EOF, SSL, LOCAL_FILES), COM_QUERY (text protocol, multi-statement;
// LOAD DATA LOCAL INFILE streams the client's file into batches of
// executor.LoadBatchRows rows, each one INSERT),
// COM_INIT_DB, COM_PING, COM_FIELD_LIST, COM_STATISTICS,
// COM_RESET_CONNECTION, COM_CHANGE_USER, COM_PROCESS_KILL, COM_SET_OPTION,
// COM_DEBUG, COM_QUIT; SHOW [FULL] PROCESSLIST and KILL [CONNECTION|QUERY]
// come from the server's connection list (KILL QUERY cancels the running
// command's context: it stops at its next wait for the cluster with 1317,
// and a SLEEP returns 1 at once; KILL CONNECTION cancels it too and closes
// the connection;
// the context is re-created only after a kill; a client that closes its
// connection while a command runs for a second or more gets the same, and
// the connection ends: disconnect.go). Other commands get ERROR 1047; the
// connection stays usable. Packets larger than 16 MB (split on the wire) are
// reassembled, up to max_allowed_packet.
//
// TIMESTAMP result columns (stored and computed as UTC) are sent in the
// session time zone, in the text and the binary protocol alike
// (localTimestamps, expr.TimestampToLocal).
//
// Limits: wait_timeout (interactive_timeout for CLIENT_INTERACTIVE) of
// idleness between commands ends a connection with ERROR 4031;
// Config.MaxConnections open connections (one more gets ERROR 1040
// instead of the greeting); Config.HandshakeTimeout for the whole connection
// phase; max_allowed_packet (ERROR 1153). Packets out of sequence get ERROR
// 1156, unknown prepared statement ids ERROR 1243.
//
// Invariants: a malformed packet is answered with an ERR packet and the
// connection is closed (half-closed first, discarding what the client still
// sends for up to a second, so the client reads the ERR packet rather than a
// reset); a connection holds one goroutine and nothing outlives it; a panic while serving a connection is recovered,
// logged with its stack, and closes only that connection. On shutdown the
// listener closes at once, idle connections are closed, running statements
// may finish within Config.ShutdownTimeout, then everything is cut.
//
// # Statement observation
//
// Every statement's end goes through clientConn.observe: its latency
// (strata_sql_query_duration_seconds{type}), the statements summary
// (stmtsummary.go: per schema and digest, 30-minute windows, read as
// information_schema.STATEMENTS_SUMMARY[_HISTORY]) and, at or over
// Config.SlowThreshold, the slow query log (slowlog.go: JSON lines,
// rotated; information_schema.SLOW_QUERY; strata_sql_slow_queries_total).
//
// Tail-based trace sampling (package sql/trace): the connection's
// execdetails.Details records the statement's spans when tracing is on
// (read once per command); observe keeps the trace only when the
// statement was slower than its digest's running p95 (kept beside the
// digest's summary, under the summary's lock), than
// strata_trace_keep_threshold, or than the slow log's threshold. Kept
// traces go to a ring of keptTraces and into the slow log entry; the last
// recentSlows slow entries stay in memory for /dashboard.
// TRACE [FORMAT='row'] <stmt> (tracestmt.go) runs the statement with
// spans on and answers its span tree.
//
// # Global connection ids, KILL and CLUSTER_PROCESSLIST
//
// With Config.Registry (PD), Run registers the node before it accepts
// connections: PD grants a server id 1..2047 on an etcd lease renewed
// every 2 s (10 s TTL) and released after the last connection ended on
// shutdown (pd/sqlnodes.go). Connection ids are TiDB's 32-bit global ids,
// server id in bits 31-21, a local id in bits 20-1 (connid.go), so they
// fit the handshake's 4-byte id that clients keep. KILL [CONNECTION |
// QUERY] of another node's id is sent to that node's status port (POST
// /internal/kill), where it is judged as a local KILL with the
// requester's user and SUPER; an id no live node holds is 1094.
// information_schema.CLUSTER_PROCESSLIST gathers POST
// /internal/processlist from every registered node in parallel, 3 s per
// node, and reports a node that did not answer as a warning; SHOW
// PROCESSLIST and PROCESSLIST stay this node's, as in TiDB. Both
// endpoints are POST so security.Guard protects them as PD's
// state-changing API: with cluster TLS only peers with a certificate of
// the cluster CA get an answer (globalkill.go). If PD gives the node a new
// server id (its lease expired while PD was unreachable and another node
// took the id), connections with the old id are closed.
// strata_sql_kill_total{scope,outcome} counts KILLs (remote ones are
// logged on both nodes), strata_sql_peer_request_seconds{call,result}
// times the requests to other nodes.
//
// DashboardHandler (dashboard.go, dashboard.html embedded) serves
// /dashboard on the node's status port: server-rendered HTML, no script,
// and its JSON under /dashboard/api/.
//
// # Testing with real clients
//
// tests/clients_test.go runs the mysql CLI, pymysql, MySQLdb and GORM
// against a cluster (make test-clients); make test-go-sql-driver runs
// go-sql-driver's own suite (tests/clients/go-sql-driver.sh; results in
// bench/results/2026-11-30-2016-go-sql-driver.md).
package server
