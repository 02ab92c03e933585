// Package spill writes rows that do not fit in a statement's memory quota
// to temporary files and reads them back: the disk half of the sort, hash
// join and hash aggregation operators of sql/executor (TiDB's
// chunk.ListInDisk, at our scale).
//
// Files live in one directory per process, <root>/strata-spill-<pid>
// (root: --tmp-storage-path, default os.TempDir()). Each file is unlinked
// as soon as it is created, so it disappears when it is closed or the
// process dies; SetRoot also removes the directories of processes that no
// longer run. A File is written, then read through any number of Readers
// over byte ranges of it; it is not safe for concurrent use.
//
// Rows are encoded per datum: a kind byte, then 8 bytes (integers,
// floats) or a uvarint length and the bytes; NULL is the kind alone.
package spill
