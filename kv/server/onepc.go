package server

import (
	"context"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/kv/mvcc"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/raftstore"
)

// onePC evaluates a 1PC write on the leader and proposes its result as
// plain writes. The caller holds the in-memory locks of every mutated key
// (kv/concurrency) until onePC returns, so no other write of this store to
// those keys is evaluated or applied in between; ReadIndex makes the
// engine reflect every write committed before (including a previous
// leader's), and leaderGen refuses the proposal if this store gained a
// leadership since, so the check below sees every earlier version of the
// keys. Temporary glue until kv/txn evaluates Percolator commands: the
// writes keep the kv/mvcc layout ('z' enc(key) ^commit_ts -> flag|value,
// which is kv/keys' CF_DEFAULT) so readers are unchanged.
//
// On success (no region error, no key errors) the write was applied on
// this store before onePC returned. A returned error means the outcome is
// undetermined only when it wraps raftstore.ErrUndetermined.
func (s *Service) onePC(ctx context.Context, req *kvrpcpb.OnePCRequest, commitTS, leaderGen uint64) (*kvrpcpb.OnePCResponse, error) {
	region, rerr, err := s.store.ReadIndex(ctx, req.GetContext())
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.OnePCResponse{RegionError: rerr}, nil
	}
	for _, m := range req.GetMutations() {
		if e := raftstore.CheckKeyInRegion(m.GetKey(), region); e != nil {
			return &kvrpcpb.OnePCResponse{RegionError: e}, nil
		}
	}
	resp := &kvrpcpb.OnePCResponse{}
	reader := mvcc.NewReader(s.store.Engine())
	for _, m := range req.GetMutations() {
		ts, deleted, found, err := reader.Newest(m.GetKey())
		if err != nil {
			return nil, err
		}
		switch {
		case found && ts > req.GetStartTs():
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Conflict: &kvrpcpb.WriteConflict{
				StartTs: req.GetStartTs(), ConflictCommitTs: ts, Key: m.GetKey(),
			}})
		case m.GetOp() == kvrpcpb.Op_Insert && found && !deleted:
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{AlreadyExist: &kvrpcpb.AlreadyExist{Key: m.GetKey()}})
		}
	}
	if len(resp.Errors) > 0 {
		return resp, nil // nothing proposed
	}
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{
			RegionId: region.GetId(), Peer: req.GetContext().GetPeer(), RegionEpoch: region.GetRegionEpoch(),
		},
		Requests: make([]*raft_cmdpb.Request, len(req.GetMutations())),
	}
	for i, m := range req.GetMutations() {
		var v []byte
		if m.GetOp() == kvrpcpb.Op_Del {
			v = []byte{mvcc.FlagDelete}
		} else {
			v = make([]byte, 0, 1+len(m.GetValue()))
			v = append(append(v, mvcc.FlagPut), m.GetValue()...)
		}
		cmd.Requests[i] = &raft_cmdpb.Request{
			CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_DEFAULT,
			Key: keys.EncodeVersioned(nil, m.GetKey(), commitTS), Value: v,
		}
	}
	// The keys stay locked until the outcome is known, even if the client
	// gives up: the store answers every proposal (applied, overwritten, or
	// stopped), so the call does not follow the client's cancellation.
	presp, err := s.store.Propose(context.WithoutCancel(ctx), cmd, leaderGen)
	if err != nil {
		return nil, err
	}
	return &kvrpcpb.OnePCResponse{RegionError: presp.GetRegionError()}, nil
}
