package localcluster

import (
	"context"

	"google.golang.org/grpc"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/storepb"
)

// ProbeGRPC makes one RPC on a new connection to addr dialled with creds:
// GetMembers to a PD member (pd), else a KvGet without a region to a store
// (which answers a region error, not an RPC error). It returns the RPC's
// error: codes.Unavailable when the connection or its TLS handshake was
// refused.
func ProbeGRPC(ctx context.Context, addr string, creds grpc.DialOption, pd bool) error {
	conn, err := grpc.NewClient(addr, creds)
	if err != nil {
		return err
	}
	defer conn.Close()
	if pd {
		_, err = pdpb.NewPDClient(conn).GetMembers(ctx, &pdpb.GetMembersRequest{})
		return err
	}
	_, err = storepb.NewStoreClient(conn).KvGet(ctx, &kvrpcpb.GetRequest{})
	return err
}
