package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// TestBatchGetBehindAWriteHoldsNoOtherRequest: point gets served under the
// leader's lease run on the stream's receiving goroutine, but one that must
// wait (an in-flight write holds its key at a commit ts at or below the
// read's) goes to a worker. A get of another key in the same message is
// answered while it waits, and the waiting get is answered once the write
// is done.
func TestBatchGetBehindAWriteHoldsNoOtherRequest(t *testing.T) {
	c := newTestCluster(t)
	c.put("a", "1")
	c.put("b", "2")
	l := c.leader()
	require.Equal(t, "2", string(c.get("b", c.nextTS()).GetValue()), "the lease is in use")
	svc := c.nodes[l].srv.svc.Load()

	_, release, err := svc.cm.LockKeys(context.Background(), [][]byte{[]byte("a")}, c.nextTS())
	require.NoError(t, err)
	defer func() {
		if release != nil {
			release()
		}
	}()
	ts := c.nextTS() + 1000 // above the write's commit ts: the read of a must wait for it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.nodes[l].client.BatchCommands(ctx)
	require.NoError(t, err)
	get := func(key string) *storepb.BatchCommandsRequest_Request {
		return &storepb.BatchCommandsRequest_Request{Cmd: &storepb.BatchCommandsRequest_Request_Get{
			Get: &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte(key), Version: ts}}}
	}
	require.NoError(t, stream.Send(&storepb.BatchCommandsRequest{
		Requests: []*storepb.BatchCommandsRequest_Request{get("a"), get("b")}, RequestIds: []uint64{1, 2}}))

	msg, err := stream.Recv()
	require.NoError(t, err, "the get of b waited behind the get of a")
	require.Equal(t, []uint64{2}, msg.GetRequestIds())
	require.Equal(t, "2", string(msg.GetResponses()[0].GetGet().GetValue()))

	release()
	release = nil
	msg, err = stream.Recv()
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, msg.GetRequestIds())
	require.Equal(t, "1", string(msg.GetResponses()[0].GetGet().GetValue()))
	require.NoError(t, stream.CloseSend())
}
