// Package br backs up a cluster at a timestamp and restores the backup
// into a fresh cluster (cmd/br is its command line; TiDB's BR in small).
//
// # Backup
//
//  1. The backup ts is the one given or a fresh TSO. br registers a
//     service GC safe point at it with PD (UpdateServiceGCSafePoint, a
//     TTL renewed every third of it): PD never raises the cluster's GC
//     safe point above a live one (pd/gc.go), so no version the backup
//     needs is collected while it runs; it is removed at the end (or
//     expires if br dies). A ts already below the GC safe point fails.
//  2. The schema is read at the backup ts as the catalog stores it (the
//     DBInfo and TableInfo JSON under 'm', sql/catalog), with each table's
//     AUTO_INCREMENT bound (sql/autoid), and PD's id allocator position.
//  3. Each selected table's key range (rows and index entries) is cut at
//     the region boundaries, and the pieces are exported in parallel
//     (Config.Concurrency): KvExport to the region's leader, which writes
//     the pairs a read at the backup ts sees as one SST file into the
//     storage directory (kv/backupfile), paced by the store-wide rate
//     limit, and answers the file's range, count, size and checksum.
//     Region errors re-locate the piece and retry, as every kvclient
//     request does; a lock at or below the backup ts is resolved with the
//     SQL node's lock resolver (kvclient/txn) and the piece is sent again.
//  4. The manifest (backupmeta.json, written last and atomically) lists
//     the backup ts, cluster id, schema, files with ranges and checksums,
//     per-table and total checksums.
//
// # Restore
//
//  1. The tables to restore (Filter) must not exist in the target: not by
//     name, not by id, and their key ranges must be empty; otherwise it
//     fails with ErrTargetNotEmpty before changing anything.
//  2. PD's id allocator is raised past the backup's, so ids the target
//     hands out later (tables, hidden row ids) never collide.
//  3. Schema: a missing database is created (a new id), each table is
//     created with its backed-up id through the catalog (a schema version
//     bump every SQL node loads), without indexes or columns a DDL job was
//     still building at the backup; AUTO_INCREMENT bounds are written back.
//  4. Regions are pre-split at the table and file boundaries. Two TSOs give
//     the restore's start and commit ts. Each file goes, piece by region,
//     to the region's leader as KvIngest, which reads the file and
//     proposes its pairs as committed Put versions in raft commands of
//     about 1 MiB: every replica applies them through raft, as any write
//     (never an SST side-loaded into one replica's engine). Ingesting a
//     file again writes the same versions, so any failed piece is retried.
//     The data is written through the regions' raft groups rather than
//     through transactions because a restore owns its empty key ranges:
//     no locks, no 2PC round trips, ~1 MiB per raft entry.
//  5. Verify: each table's keys are read back at a fresh ts on the stores
//     (KvExport without a file) and their checksum must equal the
//     backup's (ErrChecksum otherwise).
//
// # Checksums
//
// crc64-ECMA of key||value xor-ed over the pairs, with their count and
// bytes (kv/backupfile): independent of order and of how regions cut the
// data, so a table's checksum in the source at the backup ts equals the
// one read back from the target whatever its regions.
//
// Metrics: strata_br_bytes_total, strata_br_kvs_total and
// strata_br_duration_seconds (op, stage); the stores count their side in
// strata_store_backup_bytes_total and strata_store_backup_kvs_total.
// Progress lines go to Config.Progress, structured logs to Config.Logger.
package br
