package txn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/tso"
)

// TestResolveAsyncCommitFallback: a transaction's primary was prewritten
// for async commit, but its other key's region refused async commit (the
// max_commit_ts the schema allows was passed), so the committer fell back
// to two-phase commit, and it then stopped before committing the primary
// (its commit_ts was refused, or it died). Once its locks expire, a reader
// must decide the transaction by its primary, as for any two-phase one:
// rolled back. Counting the plain secondary lock as "still locked" would
// commit it at the largest min_commit_ts, a timestamp its client never
// chose, while the client reported that nothing was committed.
func TestResolveAsyncCommitFallback(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	now, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	start := now - tso.ComposeTS(2000, 0) // its 500 ms locks expired long ago
	prewrite := func(req *kvrpcpb.PrewriteRequest) {
		t.Helper()
		bo := c.kv.NewBackoffer()
		for {
			r, err := c.kv.Locate(ctx, bo, req.Mutations[0].Key)
			require.NoError(t, err)
			resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: req}})
			require.NoError(t, err)
			if retry {
				continue
			}
			require.Empty(t, resp.GetPrewrite().GetErrors())
			return
		}
	}
	put := func(k string) []*kvrpcpb.Mutation {
		return []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte("uncommitted")}}
	}
	prewrite(&kvrpcpb.PrewriteRequest{Mutations: put("fb-a"), PrimaryLock: []byte("fb-a"), StartVersion: start,
		LockTtl: 500, TxnSize: 2, MinCommitTs: start + 1, UseAsyncCommit: true, Secondaries: [][]byte{[]byte("fb-z")}})
	prewrite(&kvrpcpb.PrewriteRequest{Mutations: put("fb-z"), PrimaryLock: []byte("fb-a"), StartVersion: start,
		LockTtl: 500, TxnSize: 2, MinCommitTs: start + 1}) // the region that refused async commit

	for _, k := range []string{"fb-z", "fb-a"} {
		v, found := c.read(t, k)
		require.False(t, found, "%s = %q: a transaction that fell back to two-phase commit and never committed its primary was committed by a reader", k, v)
	}
}
