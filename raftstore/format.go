package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Storage format versions (issue 33: a binary refuses data it cannot
// read, rather than misreading it).
//
// StorageFormat numbers the layout of everything a store writes: the raft
// and local key spaces (keys.go), raft commands and snapshots, and the
// MVCC encoding of store/mvcc. A change that an older binary would
// misread bumps it; a binary reads every format from minStorageFormat up
// to StorageFormat. The engine records its format under formatKey,
// written (synced) when the store is created; an engine from before the
// key has format 1, the only layout that existed then.
//
// The check is twofold. Open refuses a data directory whose format is
// newer than this binary's (a downgrade past a format change) or older
// than it still reads (skipping a required intermediate version). And the
// store tells PD its data's format and the newest it reads
// (metapb.Store); PD refuses to register a store whose binary cannot read
// a format another store of the cluster holds, since data moves between
// stores as raft entries and snapshots. A rolling upgrade therefore
// replaces binaries before any store writes a newer format
// (docs/operations.md, "Upgrade").
const (
	StorageFormat    uint32 = 1
	minStorageFormat uint32 = 1
)

// checkStorageFormat reads the engine's storage format, recording it on
// an engine that has none (a new one, or one from before the key), and
// refuses a format this binary cannot read.
func checkStorageFormat(db *pebble.DB, dir string) (uint32, error) {
	v, closer, err := db.Get(formatKey())
	switch {
	case err == nil:
		defer closer.Close()
		if len(v) != 4 {
			return 0, fmt.Errorf("%w: storage format of %d bytes in %s", ErrCorrupt, len(v), dir)
		}
		f := binary.BigEndian.Uint32(v)
		switch {
		case f > StorageFormat:
			return 0, fmt.Errorf("%w: %s holds storage format %d, written by a newer Strata; this binary reads formats %d to %d: run a binary at least as new as the one that wrote it (a downgrade past a format change is not possible)",
				ErrStorageFormat, dir, f, minStorageFormat, StorageFormat)
		case f < minStorageFormat:
			return 0, fmt.Errorf("%w: %s holds storage format %d; this binary reads formats %d to %d: upgrade through an intermediate Strata version first",
				ErrStorageFormat, dir, f, minStorageFormat, StorageFormat)
		}
		return f, nil
	case errors.Is(err, pebble.ErrNotFound):
		// New engine, or one from before the key: both are format 1 data
		// or empty, and this binary writes StorageFormat from here on.
		// Format 1 is the only one so far; a bump must decide here what
		// an engine without the key holds.
		if err := db.Set(formatKey(), binary.BigEndian.AppendUint32(nil, StorageFormat), pebble.Sync); err != nil {
			return 0, fmt.Errorf("raftstore: record storage format: %w", err)
		}
		return StorageFormat, nil
	default:
		return 0, fmt.Errorf("raftstore: read storage format: %w", err)
	}
}
