package pd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stratadb/strata/proto/pdpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// The SQL node registry: each live SQL node holds a server id (the high
// bits of its connection ids, sql/server) under prefixSQLNodes, attached
// to an etcd lease the node renews through SQLNodeHeartbeat. etcd deletes
// the key when the lease expires, and only then can another node take the
// id: a node that stopped renewing (killed, partitioned) keeps its id until
// its lease is gone, so two live nodes never hand out the same connection
// ids. The registry is entirely in etcd, so a new PD leader serves it as
// the old one left it.

const (
	prefixSQLNodes = rootPath + "sql_nodes/" // + %04d server id -> pdpb.SQLNode (leased)
	// MaxServerID is the largest SQL node server id: 11 bits, TiDB's
	// 32-bit connection id layout (sql/server connid.go).
	MaxServerID = 1<<11 - 1
	// minSQLNodeTTL is etcd's practical minimum lease TTL.
	minSQLNodeTTL = 2 * time.Second
)

// errNoServerID: every server id is held by a live node.
var errNoServerID = fmt.Errorf("pd: all %d SQL node server ids are held by live nodes; stop SQL nodes that are not needed, or wait for dead ones' leases to expire", MaxServerID)

func sqlNodeKey(id uint64) string { return fmt.Sprintf("%s%04d", prefixSQLNodes, id) }

// sqlNodeHeartbeat registers or renews req's node (see the RPC's contract
// in pdpb.proto).
func sqlNodeHeartbeat(ctx context.Context, kv *fencedKV, req *pdpb.SQLNodeHeartbeatRequest) (*pdpb.SQLNodeHeartbeatResponse, error) {
	n := req.GetNode()
	if n == nil || n.GetStatusAddr() == "" || n.GetSqlAddr() == "" {
		return nil, fmt.Errorf("%w: sql node heartbeat without sql and status addresses", ErrInvalidArgument)
	}
	if n.GetServerId() > MaxServerID {
		return nil, fmt.Errorf("%w: server id %d above %d", ErrInvalidArgument, n.GetServerId(), MaxServerID)
	}
	lease := clientv3.LeaseID(req.GetLeaseId())
	if req.GetTtlMs() == 0 { // release
		if lease != 0 {
			if _, err := kv.cli.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return nil, fmt.Errorf("pd: release sql node lease: %w", err)
			}
		}
		return &pdpb.SQLNodeHeartbeatResponse{}, nil
	}
	ttl := max(time.Duration(req.GetTtlMs())*time.Millisecond, minSQLNodeTTL)
	if lease != 0 && n.GetServerId() != 0 {
		// Renew; the key is still ours if the lease is live and is the key's.
		if _, err := kv.cli.KeepAliveOnce(ctx, lease); err == nil {
			resp, err := kv.cli.Get(ctx, sqlNodeKey(n.GetServerId()))
			if err != nil {
				return nil, fmt.Errorf("pd: etcd get sql node: %w", err)
			}
			if len(resp.Kvs) == 1 && clientv3.LeaseID(resp.Kvs[0].Lease) == lease {
				return &pdpb.SQLNodeHeartbeatResponse{ServerId: n.GetServerId(), LeaseId: int64(lease)}, nil
			}
		} else if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil, fmt.Errorf("pd: renew sql node lease: %w", err)
		}
	}
	// A new lease; the asked-for id first, then the lowest free one.
	g, err := kv.cli.Grant(ctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return nil, fmt.Errorf("pd: grant sql node lease: %w", err)
	}
	id, err := claimServerID(ctx, kv, n, g.ID)
	if err != nil {
		_, _ = kv.cli.Revoke(ctx, g.ID)
		return nil, err
	}
	return &pdpb.SQLNodeHeartbeatResponse{ServerId: id, LeaseId: int64(g.ID)}, nil
}

// claimServerID writes n under the first free id (n's own first) with
// lease, each attempt a fenced transaction on the key's absence.
func claimServerID(ctx context.Context, kv *fencedKV, n *pdpb.SQLNode, lease clientv3.LeaseID) (uint64, error) {
	held, err := liveServerIDs(ctx, kv.cli)
	if err != nil {
		return 0, err
	}
	try := func(id uint64) (bool, error) {
		rec := proto.Clone(n).(*pdpb.SQLNode)
		rec.ServerId = id
		key := sqlNodeKey(id)
		err := kv.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			clientv3.OpPut(key, mustMarshal(rec), clientv3.WithLease(lease)))
		if errors.Is(err, errTxnCond) {
			return false, nil // taken meanwhile
		}
		return err == nil, err
	}
	if id := n.GetServerId(); id != 0 && !held[id] {
		if ok, err := try(id); ok || err != nil {
			return id, err
		}
	}
	for id := uint64(1); id <= MaxServerID; id++ {
		if held[id] {
			continue
		}
		if ok, err := try(id); ok || err != nil {
			return id, err
		}
	}
	return 0, errNoServerID
}

// liveServerIDs is the set of ids whose keys exist (their leases live).
func liveServerIDs(ctx context.Context, cli *clientv3.Client) (map[uint64]bool, error) {
	resp, err := cli.Get(ctx, prefixSQLNodes, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("pd: etcd get %s: %w", prefixSQLNodes, err)
	}
	held := make(map[uint64]bool, len(resp.Kvs))
	for _, k := range resp.Kvs {
		id, err := strconv.ParseUint(strings.TrimPrefix(string(k.Key), prefixSQLNodes), 10, 64)
		if err == nil {
			held[id] = true
		}
	}
	return held, nil
}

// ---- RPCs ----

func (sv *service) SQLNodeHeartbeat(ctx context.Context, req *pdpb.SQLNodeHeartbeatRequest) (*pdpb.SQLNodeHeartbeatResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.SQLNodeHeartbeatResponse{Header: notLeaderHeader}, nil
	}
	resp, err := sqlNodeHeartbeat(ctx, t.kv, req)
	if err != nil {
		return &pdpb.SQLNodeHeartbeatResponse{Header: errorHeader(t, err)}, nil
	}
	resp.Header = header(t)
	return resp, nil
}

func (sv *service) GetSQLNodes(ctx context.Context, _ *pdpb.GetSQLNodesRequest) (*pdpb.GetSQLNodesResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetSQLNodesResponse{Header: notLeaderHeader}, nil
	}
	nodes, err := loadPrefix(ctx, t.kv.cli, prefixSQLNodes, func() *pdpb.SQLNode { return new(pdpb.SQLNode) })
	if err != nil {
		return &pdpb.GetSQLNodesResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.GetSQLNodesResponse{Header: header(t), Nodes: nodes}, nil
}
