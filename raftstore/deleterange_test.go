package raftstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TestHarnessDeleteRangeCrashAtApply: a DeleteRange command (the range of
// a dropped table) applied while a replica loses power at its next apply
// round: the replica restarts from what was synced, applies the command
// again from its log, and every replica ends without the range's keys and
// with the keys around it, with equal hashes through raft. Each store
// queued the deleted range for compaction.
func TestHarnessDeleteRangeCrashAtApply(t *testing.T) {
	h := newCrashHarness(t, seedOr(t, 91), 3, nil)
	acked := map[string]string{}
	for i := range 30 {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
		h.putRetrying(k, v)
		acked[k] = v
	}
	r := h.ledRegionAt("k010")
	var victim uint64
	for _, s := range h.replicas(r.GetId()) {
		if h.leader(r.GetId()) != s {
			victim = s.id
		}
	}
	// Every replica applied the puts: the victim's next apply round holds
	// the DeleteRange.
	h.requireConsistent(r.GetId())
	h.crashAt(victim, "apply", 0, 3)
	h.proposeRetrying("delete range applied", r.GetId(), func(cur *metapb.Region) *raft_cmdpb.RaftCmdRequest {
		return cfCmd(cur, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange, Cf: raft_cmdpb.CF_DEFAULT,
			Key: keys.Encode(nil, []byte("k010")), EndKey: keys.Encode(nil, []byte("k020"))})
	})
	h.waitFor("the victim crashed and restarted", 200, func() bool {
		_, armed := h.armed[victim]
		_, down := h.down[victim]
		return !armed && !down
	})
	for i := 10; i < 20; i++ {
		delete(acked, fmt.Sprintf("k%03d", i))
	}
	h.requireSurvived(acked)
	for _, s := range h.replicas(r.GetId()) {
		for i := 10; i < 20; i++ {
			require.Empty(t, value(t, s, fmt.Sprintf("k%03d", i)), "store %d", s.id)
		}
		s.compactor.mu.Lock()
		queued := len(s.compactor.pending)
		s.compactor.mu.Unlock()
		require.Positive(t, queued, "store %d queued the range for compaction (manual mode runs no compactor)", s.id)
	}
}
