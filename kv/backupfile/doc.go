// Package backupfile is the format of a backup's data files, shared by the
// stores that write and read them (store/server KvExport, KvIngest) and
// the br tool (package br) that names, lists and verifies them.
//
// A file is a Pebble SSTable (sstable.Writer, default bytewise comparer)
// of plain key/value pairs: the raw KV keys (kv/codec memcomparable, as
// sql/tablecodec builds them) and the values a read at the backup's
// timestamp returns. No MVCC metadata is kept: a restore writes each pair
// as a committed version at its own timestamp.
//
// A set of pairs has a Checksum: the number of pairs, their total size
// (len(key)+len(value)) and the xor of crc64-ECMA(key||value) of each pair,
// TiDB's ADMIN CHECKSUM scheme. Xor makes it independent of order and of
// how the pairs are cut into files and regions: the checksum of a table is
// the Merge of its files' checksums, and a restore verifies the pairs it
// reads back from the new cluster against it.
//
// Writers are not safe for concurrent use; Checksum values are plain data.
package backupfile
