package raftstore

import (
	"encoding/binary"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// TestStorageFormat: a new engine, and one from before the format key,
// record StorageFormat; an engine in a format this binary cannot read is
// refused with an error that says what to do, and is left as it was.
func TestStorageFormat(t *testing.T) {
	for _, c := range []struct {
		name   string
		stored []byte // nil: no key
		ident  bool   // the engine holds a store ident (data from before the key)
		want   uint32
		errHas string
	}{
		{name: "new engine", want: StorageFormat},
		{name: "engine from before the key", ident: true, want: 1},
		{name: "current", stored: binary.BigEndian.AppendUint32(nil, StorageFormat), want: StorageFormat},
		{name: "newer", stored: binary.BigEndian.AppendUint32(nil, StorageFormat+1), errHas: "written by a newer Strata"},
		{name: "older than readable", stored: binary.BigEndian.AppendUint32(nil, minStorageFormat-1), errHas: "upgrade through an intermediate Strata version first"},
		{name: "corrupt", stored: []byte{1}, errHas: "storage format of 1 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			eng, err := openEngine(dir, nil, 0, slog.Default())
			require.NoError(t, err)
			defer eng.close()
			if c.ident {
				require.NoError(t, eng.db.Set(storeIdentKey(), binary.BigEndian.AppendUint64(nil, 7), pebble.Sync))
			}
			if c.stored != nil {
				require.NoError(t, eng.db.Set(formatKey(), c.stored, pebble.Sync))
			}
			got, err := checkStorageFormat(eng.db, dir)
			if c.errHas != "" {
				require.ErrorContains(t, err, c.errHas)
				require.ErrorContains(t, err, dir)
				v, closer, gerr := eng.db.Get(formatKey())
				require.NoError(t, gerr)
				require.Equal(t, c.stored, v, "left as it was")
				closer.Close()
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			again, err := checkStorageFormat(eng.db, dir)
			require.NoError(t, err)
			require.Equal(t, c.want, again, "recorded")
		})
	}
}
