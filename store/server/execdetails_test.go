package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// TestExecDetails: every read and write answered by a real store carries
// its side of the request (kvrpcpb.ExecDetails): a read its ReadIndex,
// concurrency-manager check, Pebble read and processing within its total
// and the versions it returned; a write its latch wait, ReadIndex and
// evaluation, and the raft round of its proposal (proposal to commit, the
// leader's fsync within it, commit to apply); a write that wrote nothing
// no raft stages.
func TestExecDetails(t *testing.T) {
	c := newTestCluster(t)
	ts := c.nextTS()
	muts := []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("va")}, {Op: kvrpcpb.Op_Put, Key: []byte("b"), Value: []byte("vb")}}
	pw := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.PrewriteResponse, error) {
		return cl.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: c.reqCtx(), Mutations: muts, PrimaryLock: []byte("a"), StartVersion: ts, LockTtl: 3000})
	})
	require.Empty(t, pw.GetErrors())
	requireWrote(t, pw.GetExecDetails())
	commitTS := c.nextTS()
	cm := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.CommitResponse, error) {
		return cl.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: c.reqCtx(), StartVersion: ts, Keys: bkeys("a", "b"), CommitVersion: commitTS})
	})
	require.Nil(t, cm.GetError())
	requireWrote(t, cm.GetExecDetails())

	// Committing again finds nothing to write: no raft round.
	again := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.CommitResponse, error) {
		return cl.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: c.reqCtx(), StartVersion: ts, Keys: bkeys("a", "b"), CommitVersion: commitTS})
	})
	w := again.GetExecDetails().GetWriteDetail()
	require.NotNil(t, w)
	require.Zero(t, w.GetCommitLogNanos())
	require.Zero(t, w.GetApplyLogNanos())

	get := c.get("a", c.nextTS())
	require.Equal(t, "va", string(get.GetValue()))
	requireRead(t, get.GetExecDetails(), 1, len("a")+len("va"))

	bg := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.BatchGetResponse, error) {
		return cl.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: c.reqCtx(), Keys: bkeys("a", "b", "c"), Version: c.nextTS()})
	})
	require.Len(t, bg.GetPairs(), 2)
	requireRead(t, bg.GetExecDetails(), 2, 2+2*len("va"))

	sc := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.ScanResponse, error) {
		return cl.KvScan(ctx, &kvrpcpb.ScanRequest{Context: c.reqCtx(), StartKey: []byte("a"), Version: c.nextTS()})
	})
	require.Len(t, sc.GetPairs(), 2)
	requireRead(t, sc.GetExecDetails(), 2, 2+2*len("va"))
}

// requireWrote checks the details of a write that went through raft.
func requireWrote(t *testing.T, d *kvrpcpb.ExecDetails) {
	t.Helper()
	require.NotNil(t, d)
	require.Nil(t, d.GetScanDetail())
	td, w := d.GetTimeDetail(), d.GetWriteDetail()
	require.NotNil(t, td)
	require.NotNil(t, w)
	require.Positive(t, td.GetReadIndexWaitNs())
	require.Positive(t, td.GetProcessWallTimeNs())
	require.Positive(t, w.GetProposeSendWaitNanos())
	require.Positive(t, w.GetPersistLogNanos(), "the leader fsynced the entry")
	require.Positive(t, w.GetCommitLogNanos())
	require.Positive(t, w.GetApplyLogNanos())
	sum := w.GetLatchWaitNanos() + td.GetReadIndexWaitNs() + td.GetProcessWallTimeNs() + w.GetProposeSendWaitNanos() + w.GetCommitLogNanos() + w.GetApplyLogNanos()
	require.LessOrEqual(t, sum, td.GetTotalRpcWallTimeNs(), "the stages follow each other within the request: %v", d)
	require.Less(t, time.Duration(td.GetTotalRpcWallTimeNs()), 10*time.Second)
}

// requireRead checks the details of a leader read that returned versions
// keys of size bytes.
func requireRead(t *testing.T, d *kvrpcpb.ExecDetails, versions, size int) {
	t.Helper()
	require.NotNil(t, d)
	require.Nil(t, d.GetWriteDetail())
	td, sd := d.GetTimeDetail(), d.GetScanDetail()
	require.NotNil(t, td)
	require.Positive(t, td.GetReadIndexWaitNs())
	require.Positive(t, td.GetKvReadWallTimeNs())
	require.GreaterOrEqual(t, td.GetProcessWallTimeNs(), td.GetKvReadWallTimeNs(), "the Pebble read is part of processing")
	require.LessOrEqual(t, td.GetReadIndexWaitNs()+td.GetConcurrencyManagerWaitNs()+td.GetProcessWallTimeNs(), td.GetTotalRpcWallTimeNs())
	require.EqualValues(t, versions, sd.GetProcessedVersions())
	require.EqualValues(t, size, sd.GetProcessedVersionsSize())
}
