package pd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
)

// TestPutStoreRefusesUnreadableFormat: PD refuses to register a store
// whose binary cannot read the storage format another store holds (data
// moves between stores as raft entries and snapshots), with an error that
// says which store and what to run; a store from before the fields counts
// as format 1; a tombstone's format does not count.
func TestPutStoreRefusesUnreadableFormat(t *testing.T) {
	srv := pdtest.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := pdclient.New(ctx, []string{srv.Addr})
	require.NoError(t, err)
	defer cli.Close()
	put := func(id uint64, format, reads uint32) error {
		return cli.PutStore(ctx, &metapb.Store{Id: id, Address: "127.0.0.1:1", StorageFormat: format, MaxStorageFormat: reads})
	}
	require.NoError(t, put(1, 0, 0), "a store from before the fields")
	require.NoError(t, put(2, 1, 1))
	require.NoError(t, put(3, 2, 2), "a newer binary that wrote format 2 reads format 1 too")
	err = put(4, 1, 1)
	require.ErrorContains(t, err, "store 4 (127.0.0.1:1) reads storage formats up to 1, but store 3 holds format 2")
	require.ErrorContains(t, err, "run the Strata version the other stores run, or newer")
	require.NoError(t, put(4, 1, 2), "a binary that reads format 2 may join")
	require.NoError(t, put(3, 2, 2), "a restart of the store itself is fine")
}
