package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// sim is an in-memory cluster: a manual clock, the model, the controller
// and coordinator, and "stores" that execute every step PD hands out at
// the next heartbeat.
type sim struct {
	t      *testing.T
	now    time.Time
	c      *Cluster
	oc     *OperatorController
	co     *Coordinator
	nextID uint64
	dead   map[uint64]bool // stores that stopped heartbeating
}

func newSim(t *testing.T, stores int, cfg Config) *sim {
	s := &sim{t: t, now: time.Unix(1000, 0), nextID: 1000, dead: map[uint64]bool{}}
	s.c = NewCluster(cfg, func() time.Time { return s.now })
	quiet := slog.New(slog.DiscardHandler)
	s.oc = NewOperatorController(s.c, quiet)
	s.co = NewCoordinator(s.c, s.oc, func() (uint64, error) { s.nextID++; return s.nextID, nil }, quiet)
	s.co.Tombstone = func(_ context.Context, id uint64) error {
		st := s.c.GetStore(id)
		m := proto.CloneOf(st.Meta)
		m.State = metapb.StoreState_Tombstone
		s.c.PutStore(m)
		return nil
	}
	for i := 1; i <= stores; i++ {
		s.addStore(uint64(i))
	}
	return s
}

func (s *sim) addStore(id uint64) {
	s.c.PutStore(&metapb.Store{Id: id, Address: fmt.Sprintf("s%d", id)})
	s.c.StoreHeartbeat(&pdpb.StoreStats{StoreId: id})
}

// addRegions creates n regions over keys r000.. with replicas on stores
// 1..3 and leaders spread round-robin over them.
func (s *sim) addRegions(n int) {
	for i := range n {
		id := uint64(i + 1)
		r := &metapb.Region{Id: id, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}}
		if i > 0 {
			r.StartKey = fmt.Appendf(nil, "r%03d", i)
		}
		if i < n-1 {
			r.EndKey = fmt.Appendf(nil, "r%03d", i+1)
		}
		for sid := uint64(1); sid <= 3; sid++ {
			r.Peers = append(r.Peers, &metapb.Peer{Id: id*10 + sid, StoreId: sid})
		}
		s.c.PutRegion(&RegionInfo{Meta: r, Leader: r.Peers[i%3], Term: 1})
	}
}

// advance moves the clock by d; live stores heartbeat.
func (s *sim) advance(d time.Duration) {
	s.now = s.now.Add(d)
	for _, st := range s.c.Stores() {
		if id := st.Meta.GetId(); !s.dead[id] && st.Meta.GetState() != metapb.StoreState_Tombstone {
			s.c.StoreHeartbeat(&pdpb.StoreStats{StoreId: id})
		}
	}
}

// heartbeatAll sends every region's heartbeat (from its leader, if on a
// live store) and executes the returned step as a store would.
func (s *sim) heartbeatAll() {
	for _, r := range s.c.allRegions() {
		if s.dead[r.LeaderStore()] {
			// The live voters elect a new leader.
			cp := *r
			cp.Leader = nil
			for _, p := range r.Voters() {
				if !s.dead[p.GetStoreId()] {
					cp.Leader, cp.Term = p, r.Term+1
					break
				}
			}
			if cp.Leader == nil {
				continue
			}
			r = &cp
		}
		// The leader reports peers on dead stores as down.
		var down []*pdpb.PeerStats
		for _, p := range r.Meta.GetPeers() {
			if s.dead[p.GetStoreId()] {
				down = append(down, &pdpb.PeerStats{Peer: p, DownSeconds: 60})
			}
		}
		cp := *r
		cp.DownPeers = down
		r = &cp
		s.c.PutRegion(r)
		resp := &pdpb.RegionHeartbeatResponse{}
		s.oc.Dispatch(r, resp)
		if next := s.execute(r, resp); next != nil {
			s.c.PutRegion(next)
		}
	}
}

// execute applies a heartbeat response's step to r.
func (s *sim) execute(r *RegionInfo, resp *pdpb.RegionHeartbeatResponse) *RegionInfo {
	meta := proto.CloneOf(r.Meta)
	next := *r
	next.Meta = meta
	switch {
	case resp.TransferLeader != nil:
		to := resp.TransferLeader.Peer.GetStoreId()
		p := r.PeerOnStore(to)
		if p == nil || s.dead[to] {
			return nil
		}
		next.Leader, next.Term = p, r.Term+1
	case resp.ChangePeer != nil:
		cp := resp.ChangePeer
		if s.dead[cp.Peer.GetStoreId()] && cp.ChangeType != pdpb.ConfChangeType_RemoveNode {
			return nil
		}
		switch cp.ChangeType {
		case pdpb.ConfChangeType_AddLearnerNode:
			meta.Peers = append(meta.Peers, &metapb.Peer{Id: cp.Peer.GetId(), StoreId: cp.Peer.GetStoreId(), Role: metapb.PeerRole_Learner})
		case pdpb.ConfChangeType_AddNode:
			for _, p := range meta.Peers {
				if p.GetId() == cp.Peer.GetId() {
					p.Role = metapb.PeerRole_Voter
				}
			}
		case pdpb.ConfChangeType_RemoveNode:
			require.NotEqual(s.t, r.Leader.GetId(), cp.Peer.GetId(), "PD asked a leader to remove itself: %v", r.Meta)
			for i, p := range meta.Peers {
				if p.GetId() == cp.Peer.GetId() {
					meta.Peers = append(meta.Peers[:i], meta.Peers[i+1:]...)
					break
				}
			}
		}
		meta.RegionEpoch.ConfVer++
	default:
		return nil
	}
	return &next
}

// round is one scheduling round plus two heartbeat rounds.
func (s *sim) round() {
	s.advance(time.Second)
	s.co.RunOnce(context.Background())
	s.heartbeatAll()
	s.heartbeatAll()
}

func (s *sim) counts(sid uint64) (regions, leaders int) {
	n, l, _ := s.c.StoreCounts(sid)
	return n, l
}

// requireHealthy checks every region has MaxReplicas voters on live,
// non-offline stores and no learner.
func (s *sim) requireHealthy() {
	for _, r := range s.c.allRegions() {
		require.Len(s.t, r.Voters(), s.c.Config().MaxReplicas, "region %v", r.Meta)
		require.Empty(s.t, r.Learners(), "region %v", r.Meta)
		for _, p := range r.Voters() {
			require.False(s.t, s.dead[p.GetStoreId()], "region %d has a voter on dead store %d", r.ID(), p.GetStoreId())
			require.Equal(s.t, StoreUp, s.c.StoreState(p.GetStoreId()), "region %d store %d", r.ID(), p.GetStoreId())
		}
	}
}

func TestStoreState(t *testing.T) {
	cfg := Config{MaxStoreDownTime: Duration(time.Minute)}.Defaults()
	base := time.Unix(1000, 0)
	for _, tc := range []struct {
		state metapb.StoreState
		age   time.Duration
		want  StoreState
	}{
		{metapb.StoreState_Up, 0, StoreUp},
		{metapb.StoreState_Up, 19 * time.Second, StoreUp},
		{metapb.StoreState_Up, 20 * time.Second, StoreDisconnected},
		{metapb.StoreState_Up, 59 * time.Second, StoreDisconnected},
		{metapb.StoreState_Up, time.Minute, StoreDown},
		{metapb.StoreState_Offline, 0, StoreOffline},
		{metapb.StoreState_Offline, time.Hour, StoreOffline},
		{metapb.StoreState_Tombstone, 0, StoreTombstone},
	} {
		s := &StoreInfo{Meta: &metapb.Store{Id: 1, State: tc.state}, LastHeartbeat: base}
		require.Equal(t, tc.want, s.State(base.Add(tc.age), &cfg), "%v after %v", tc.state, tc.age)
	}
}

func TestHeartbeatCheck(t *testing.T) {
	c := NewCluster(Config{}, nil)
	peers := []*metapb.Peer{{Id: 11, StoreId: 1}, {Id: 12, StoreId: 2}, {Id: 13, StoreId: 3}}
	reg := func(id uint64, start, end string, ver, conf uint64) *metapb.Region {
		return &metapb.Region{Id: id, StartKey: []byte(start), EndKey: []byte(end),
			RegionEpoch: &metapb.RegionEpoch{Version: ver, ConfVer: conf}, Peers: peers}
	}
	c.PutRegion(&RegionInfo{Meta: reg(1, "", "m", 2, 3), Leader: peers[0], Term: 7})
	c.PutRegion(&RegionInfo{Meta: reg(2, "m", "", 2, 1), Leader: peers[1], Term: 4})
	for _, tc := range []struct {
		name   string
		r      *RegionInfo
		stale  bool
		reason string
	}{
		{"same", &RegionInfo{Meta: reg(1, "", "m", 2, 3), Term: 7}, false, ""},
		{"newer term", &RegionInfo{Meta: reg(1, "", "m", 2, 3), Term: 8}, false, ""},
		{"older term", &RegionInfo{Meta: reg(1, "", "m", 2, 3), Term: 6}, true, "term"},
		{"older conf ver", &RegionInfo{Meta: reg(1, "", "m", 2, 2), Term: 9}, true, "epoch"},
		{"older version", &RegionInfo{Meta: reg(1, "", "m", 1, 3), Term: 9}, true, "epoch"},
		{"newer conf ver, older term", &RegionInfo{Meta: reg(1, "", "m", 2, 4), Term: 6}, false, ""},
		{"pre-split region overlapping a newer one", &RegionInfo{Meta: reg(3, "a", "z", 1, 1), Term: 1}, true, "overlap"},
		{"merged region newer than both", &RegionInfo{Meta: reg(3, "", "", 3, 1), Term: 1}, false, ""},
	} {
		stale, reason := c.HeartbeatCheck(tc.r)
		require.Equal(t, tc.stale, stale, tc.name)
		require.Equal(t, tc.reason, reason, tc.name)
	}
}

func TestRegionTreeLookups(t *testing.T) {
	tr := NewRegionTree()
	for i, k := range []string{"", "b", "d", "f"} {
		r := &metapb.Region{Id: uint64(i + 1), StartKey: []byte(k), RegionEpoch: &metapb.RegionEpoch{}}
		if i < 3 {
			r.EndKey = []byte([]string{"b", "d", "f"}[i])
		}
		r.Peers = []*metapb.Peer{{Id: uint64(10 + i), StoreId: uint64(i%2 + 1)}}
		tr.Put(&RegionInfo{Meta: r, Leader: r.Peers[0]})
	}
	for _, tc := range []struct {
		key  string
		want uint64
	}{{"", 1}, {"a", 1}, {"b", 2}, {"c", 2}, {"e", 3}, {"f", 4}, {"zz", 4}} {
		require.Equal(t, tc.want, tr.Find([]byte(tc.key)).ID(), "key %q", tc.key)
	}
	ids := func(rs []*RegionInfo) (out []uint64) {
		for _, r := range rs {
			out = append(out, r.ID())
		}
		return out
	}
	require.Equal(t, []uint64{2, 3}, ids(tr.Scan([]byte("c"), []byte("e"), 0)))
	require.Equal(t, []uint64{1, 2}, ids(tr.Scan(nil, nil, 2)))
	require.Equal(t, []uint64{1, 3}, ids(tr.StoreRegions(1)))
	require.Equal(t, []uint64{2, 4}, ids(tr.StoreLeaders(2)))
	// A merged region replaces the two it covers and the indexes follow.
	over := tr.Put(&RegionInfo{Meta: &metapb.Region{Id: 2, StartKey: []byte("b"), EndKey: []byte("f"),
		RegionEpoch: &metapb.RegionEpoch{Version: 2}, Peers: []*metapb.Peer{{Id: 12, StoreId: 2}}}})
	require.Equal(t, []uint64{3}, ids(over))
	require.Equal(t, 3, tr.Len())
	require.Equal(t, []uint64{1}, ids(tr.StoreRegions(1)))
	require.Equal(t, []uint64{4}, ids(tr.StoreLeaders(2)))
}

func TestReplicaChecker(t *testing.T) {
	p := func(id, store uint64, learner bool) *metapb.Peer {
		pp := &metapb.Peer{Id: id, StoreId: store}
		if learner {
			pp.Role = metapb.PeerRole_Learner
		}
		return pp
	}
	for _, tc := range []struct {
		name     string
		peers    []*metapb.Peer
		leader   int
		pending  []uint64
		dead     []uint64 // stores Down
		offline  []uint64
		wantDesc string
		want     []string
	}{
		{name: "healthy", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false)}},
		{name: "missing replica goes to the empty store", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false)},
			wantDesc: "add-replica", want: []string{"add learner peer 1001 on store 4", "promote learner peer 1001 on store 4 to voter"}},
		{name: "down replica replaced", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false)}, dead: []uint64{3},
			wantDesc: "replace-down-replica", want: []string{"add learner peer 1001 on store 4", "promote learner peer 1001 on store 4 to voter", "remove peer 3 on store 3"}},
		{name: "offline leader replica moves its leadership first", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false)}, leader: 2, offline: []uint64{3},
			wantDesc: "replace-offline-replica", want: []string{"add learner peer 1001 on store 4", "promote learner peer 1001 on store 4 to voter",
				"transfer leader from store 3 to store 4", "remove peer 3 on store 3"}},
		{name: "extra replica removed from the fullest store, not the leader", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false), p(4, 4, false)},
			wantDesc: "remove-extra-replica", want: []string{"remove peer 2 on store 2"}},
		{name: "caught-up learner promoted", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(4, 4, true)},
			wantDesc: "promote-learner", want: []string{"promote learner peer 4 on store 4 to voter"}},
		{name: "pending learner left alone", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false), p(4, 4, true)}, pending: []uint64{4}},
		{name: "surplus learner removed", peers: []*metapb.Peer{p(1, 1, false), p(2, 2, false), p(3, 3, false), p(4, 4, true)},
			wantDesc: "remove-learner", want: []string{"remove peer 4 on store 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 4, Config{})
			// Store 2 is the fullest, store 4 the emptiest.
			s.addRegions(6)
			for i := 0; i < 3; i++ {
				s.c.PutRegion(&RegionInfo{Meta: &metapb.Region{Id: uint64(50 + i), StartKey: fmt.Appendf(nil, "z%d", i), EndKey: fmt.Appendf(nil, "z%d~", i),
					RegionEpoch: &metapb.RegionEpoch{}, Peers: []*metapb.Peer{{Id: uint64(500 + i), StoreId: 2}}}})
			}
			s.advance(0)
			for _, d := range tc.dead {
				s.dead[d] = true
			}
			s.advance(s.c.Config().MaxStoreDownTime.D())
			for _, o := range tc.offline {
				m := proto.CloneOf(s.c.GetStore(o).Meta)
				m.State = metapb.StoreState_Offline
				s.c.PutStore(m)
			}
			r := &RegionInfo{Meta: &metapb.Region{Id: 99, StartKey: []byte("y"), EndKey: []byte("y~"), RegionEpoch: &metapb.RegionEpoch{ConfVer: 5}, Peers: tc.peers},
				Leader: tc.peers[tc.leader]}
			for _, id := range tc.pending {
				r.PendingPeers = append(r.PendingPeers, &metapb.Peer{Id: id})
			}
			op, _, err := s.co.checker.Check(r, map[uint64]*storeInfluence{})
			require.NoError(t, err)
			if tc.wantDesc == "" {
				require.Nil(t, op, "%v", op)
				return
			}
			require.NotNil(t, op)
			require.Equal(t, tc.wantDesc, op.Desc)
			var got []string
			for _, st := range op.Steps {
				got = append(got, st.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// A 4th store gets its share of replicas and leaders, and scheduling then
// stops (no oscillation).
func TestScaleOutBalances(t *testing.T) {
	s := newSim(t, 3, Config{StoreLimit: 30})
	s.addRegions(24)
	s.addStore(4)
	rounds := 0
	for ; rounds < 200; rounds++ {
		s.round()
		n, l := s.counts(4)
		if n >= 16 && l >= 5 && len(s.oc.Operators()) == 0 {
			break
		}
	}
	n, l := s.counts(4)
	t.Logf("after %d rounds store 4 has %d replicas, %d leaders", rounds, n, l)
	require.GreaterOrEqual(t, n, 16, "fair share is 72/4 = 18 replicas")
	for sid := uint64(1); sid <= 4; sid++ {
		n, l := s.counts(sid)
		require.InDelta(t, 18, n, 2, "store %d replicas", sid)
		require.InDelta(t, 6, l, 1, "store %d leaders", sid)
	}
	s.requireHealthy()
	// Converged: more rounds create nothing.
	created := len(s.oc.History())
	for range 20 {
		s.round()
	}
	require.Equal(t, created, len(s.oc.History()), "operators after convergence: %v", s.oc.History()[created:])
}

// A store that stops heartbeating is Down after max-store-down-time and
// every region it held gets 3 healthy replicas again.
func TestDownStoreReplicasRebuilt(t *testing.T) {
	s := newSim(t, 4, Config{MaxStoreDownTime: Duration(30 * time.Second), StoreLimit: 60})
	s.addRegions(12)
	for range 100 { // balance onto store 4 first
		s.round()
		if n, _ := s.counts(4); n >= 8 && len(s.oc.Operators()) == 0 {
			break
		}
	}
	n, _ := s.counts(4)
	require.GreaterOrEqual(t, n, 8)
	s.dead[2] = true
	// Disconnected first: nothing is rebuilt yet.
	for range 25 {
		s.round()
	}
	require.Equal(t, StoreDisconnected, s.c.StoreState(2))
	n2, _ := s.counts(2)
	require.Positive(t, n2)
	for range 100 {
		s.round()
		if n, _ := s.counts(2); n == 0 && len(s.oc.Operators()) == 0 {
			break
		}
	}
	require.Equal(t, StoreDown, s.c.StoreState(2))
	n2, _ = s.counts(2)
	require.Zero(t, n2)
	s.requireHealthy()
}

// DELETE store: Offline, drained, then Tombstone.
func TestOfflineStoreDrainsToTombstone(t *testing.T) {
	s := newSim(t, 4, Config{StoreLimit: 60})
	s.addRegions(12)
	m := proto.CloneOf(s.c.GetStore(1).Meta)
	m.State = metapb.StoreState_Offline
	s.c.PutStore(m)
	for range 100 {
		s.round()
		if s.c.StoreState(1) == StoreTombstone {
			break
		}
	}
	require.Equal(t, StoreTombstone, s.c.StoreState(1))
	s.requireHealthy()
}

func TestStoreLimit(t *testing.T) {
	s := newSim(t, 3, Config{StoreLimit: 2})
	s.addRegions(24)
	s.addStore(4)
	s.co.RunOnce(context.Background())
	adds := 0
	for _, op := range s.oc.Operators() {
		for _, st := range op.Steps {
			if len(st) > 10 && st[:10] == "add learne" {
				adds++
			}
		}
	}
	require.Equal(t, 2, adds, "store limit 2/min lets 2 peers onto store 4 at once: %v", s.oc.Operators())
	// A minute later two more.
	s.advance(time.Minute)
	s.co.RunOnce(context.Background())
	require.Len(t, s.oc.Operators(), 4)
}

func TestOperatorTimeoutAndEpochCancel(t *testing.T) {
	s := newSim(t, 4, Config{})
	s.addRegions(2)
	r := s.c.GetRegion(1)
	op := NewOperator("test", OpAdmin, r, 5*time.Second, AddLearner{ToStore: 4, PeerID: 77}, PromoteLearner{ToStore: 4, PeerID: 77})
	require.NoError(t, s.oc.AddOperator(op))
	require.ErrorIs(t, s.oc.AddOperator(NewOperator("x", OpLeader, r, time.Second, TransferLeader{FromStore: 1, ToStore: 2})), ErrOperatorExists)
	resp := &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.Equal(t, pdpb.ConfChangeType_AddLearnerNode, resp.ChangePeer.GetChangeType())
	s.now = s.now.Add(6 * time.Second)
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.Nil(t, resp.ChangePeer)
	require.Equal(t, OpTimeout, op.Status())

	op = NewOperator("test", OpAdmin, r, time.Minute, TransferLeader{FromStore: 1, ToStore: 2})
	require.NoError(t, s.oc.AddOperator(op))
	split := proto.CloneOf(r.Meta)
	split.RegionEpoch.Version++
	s.oc.Dispatch(&RegionInfo{Meta: split, Leader: r.Leader}, &pdpb.RegionHeartbeatResponse{})
	require.Equal(t, OpCanceled, op.Status())
}

// An operator whose target store stops heartbeating (Disconnected) is
// cancelled at the next heartbeat instead of waiting for its timeout.
func TestOperatorCancelledWhenTargetDown(t *testing.T) {
	s := newSim(t, 4, Config{MaxStoreDownTime: Duration(30 * time.Second)})
	s.addRegions(1)
	r := s.c.GetRegion(1)
	op := NewOperator("test", OpAdmin, r, time.Hour, AddLearner{ToStore: 4, PeerID: 77}, PromoteLearner{ToStore: 4, PeerID: 77})
	require.NoError(t, s.oc.AddOperator(op))
	s.dead[4] = true
	s.advance(19 * time.Second) // still Up
	resp := &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.NotNil(t, resp.ChangePeer)
	s.advance(time.Second) // Disconnected
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.Nil(t, resp.ChangePeer)
	require.Equal(t, OpCanceled, op.Status())
}

// An operator whose next step lost its peer to a conf change it did not
// make (in CI a replaced balance operator's removal applied after the
// checker planned a leader transfer onto that peer, and a drain waited out
// the 3-minute timeout) is cancelled at the next heartbeat.
func TestOperatorCancelledWhenStepImpossible(t *testing.T) {
	s := newSim(t, 4, Config{})
	s.addRegions(1)
	r := s.c.GetRegion(1)
	require.Nil(t, r.PeerOnStore(4))

	op := NewOperator("test", OpAdmin, r, time.Hour, TransferLeader{FromStore: r.LeaderStore(), ToStore: 4})
	require.NoError(t, s.oc.AddOperator(op))
	resp := &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.Nil(t, resp.TransferLeader)
	require.Equal(t, OpCanceled, op.Status())

	op = NewOperator("test", OpAdmin, r, time.Hour, AddLearner{ToStore: 4, PeerID: 77}, PromoteLearner{ToStore: 4, PeerID: 77})
	require.NoError(t, s.oc.AddOperator(op))
	withLearner := proto.CloneOf(r.Meta)
	withLearner.Peers = append(withLearner.Peers, &metapb.Peer{Id: 77, StoreId: 4, Role: metapb.PeerRole_Learner})
	withLearner.RegionEpoch.ConfVer++
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(&RegionInfo{Meta: withLearner, Leader: r.Leader}, resp)
	require.Equal(t, pdpb.ConfChangeType_AddNode, resp.ChangePeer.GetChangeType(), "promote")
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp) // the learner is gone again
	require.Nil(t, resp.ChangePeer)
	require.Equal(t, OpCanceled, op.Status())

	// A learner of another operator landed on the store this one adds to.
	op = NewOperator("test", OpReplica, r, time.Hour, AddLearner{ToStore: 4, PeerID: 78}, PromoteLearner{ToStore: 4, PeerID: 78})
	require.NoError(t, s.oc.AddOperator(op))
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(&RegionInfo{Meta: withLearner, Leader: r.Leader}, resp)
	require.Nil(t, resp.ChangePeer)
	require.Equal(t, OpCanceled, op.Status())
}

// The hot-region scheduler moves the leadership of the hottest region away
// from a store that leads most of the write flow, and leaves a balanced
// flow alone.
func TestHotRegionScheduler(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rates []uint64 // bytes/s of regions 1..6 (leaders on stores 1,2,3,1,2,3)
		want  string
	}{
		{"cold cluster", []uint64{0, 0, 0, 0, 0, 0}, ""},
		{"balanced hot flow", []uint64{1 << 20, 1 << 20, 1 << 20, 0, 0, 0}, ""},
		{"store 1 hot", []uint64{4 << 20, 100 << 10, 100 << 10, 1 << 20, 0, 0}, "transfer leader from store 1 to store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3, Config{})
			s.addRegions(6)
			for i, rate := range tc.rates {
				r := *s.c.GetRegion(uint64(i + 1))
				r.BytesWritten, r.IntervalMs = rate, 1000
				s.c.PutRegion(&r)
			}
			ops := (&hotRegion{c: s.c}).schedule(map[uint64]*storeInfluence{}, func(uint64) bool { return false })
			if tc.want == "" {
				require.Empty(t, ops)
				return
			}
			require.Len(t, ops, 1)
			require.Equal(t, uint64(1), ops[0].RegionID, "the hottest region moves")
			require.Contains(t, ops[0].Steps[0].String(), tc.want)
		})
	}
}

// A store dies while balance operators are moving replicas (some regions
// have 4 voters, some a learner, some have their leadership re-elected onto
// the replica being moved away): every region still ends with 3 healthy
// voters on the live stores, and PD never asks a leader to remove itself.
func TestStoreDownDuringBalance(t *testing.T) {
	s := newSim(t, 3, Config{MaxStoreDownTime: Duration(30 * time.Second), StoreLimit: 60})
	s.addRegions(24)
	s.addStore(4)
	s.advance(time.Second)
	s.co.RunOnce(context.Background())
	s.heartbeatAll() // learners added; promotions, transfers and removals pending
	require.NotEmpty(t, s.oc.Operators())
	s.dead[1] = true
	for range 150 {
		s.round()
		done := true
		for _, r := range s.c.allRegions() {
			if r.PeerOnStore(1) != nil || len(r.Voters()) != 3 || len(r.Learners()) > 0 {
				done = false
			}
		}
		if done && len(s.oc.Operators()) == 0 {
			break
		}
	}
	s.requireHealthy()
}

// BenchmarkRunOnce: one coordinator round (patrol + all schedulers) over
// 10,000 balanced, healthy regions on 5 stores.
func BenchmarkRunOnce(b *testing.B) {
	s := &sim{now: time.Unix(1000, 0), nextID: 1 << 40, dead: map[uint64]bool{}}
	s.c = NewCluster(Config{}, func() time.Time { return s.now })
	quiet := slog.New(slog.DiscardHandler)
	s.oc = NewOperatorController(s.c, quiet)
	s.co = NewCoordinator(s.c, s.oc, func() (uint64, error) { s.nextID++; return s.nextID, nil }, quiet)
	for id := uint64(1); id <= 5; id++ {
		s.addStore(id)
	}
	const n = 10000
	for i := range n {
		id := uint64(i + 1)
		r := &metapb.Region{Id: id, StartKey: fmt.Appendf(nil, "r%05d", i), EndKey: fmt.Appendf(nil, "r%05d", i+1), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}}
		for j := range 3 {
			sid := uint64((i+j)%5 + 1)
			r.Peers = append(r.Peers, &metapb.Peer{Id: id*10 + uint64(j), StoreId: sid})
		}
		s.c.PutRegion(&RegionInfo{Meta: r, Leader: r.Peers[0], Term: 1})
	}
	b.ResetTimer()
	for range b.N {
		s.co.RunOnce(context.Background())
	}
	b.StopTimer()
	if ops := len(s.oc.Operators()); ops != 0 {
		b.Fatalf("a balanced cluster got %d operators", ops)
	}
}

// A split operator succeeds when the region's version moves (its own
// split) and other operators are cancelled by it.
func TestSplitOperator(t *testing.T) {
	s := newSim(t, 3, Config{})
	s.addRegions(1)
	r := s.c.GetRegion(1)
	op := NewOperator("split", OpAdmin, r, time.Minute, SplitRegion{Keys: [][]byte{[]byte("m")}})
	require.NoError(t, s.oc.AddOperator(op))
	resp := &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(r, resp)
	require.Equal(t, [][]byte{[]byte("m")}, resp.GetSplitRegion().GetKeys())
	split := *r
	split.Meta = proto.CloneOf(r.Meta)
	split.Meta.EndKey = []byte("m")
	split.Meta.RegionEpoch.Version++
	s.c.PutRegion(&split)
	resp = &pdpb.RegionHeartbeatResponse{}
	s.oc.Dispatch(s.c.GetRegion(1), resp)
	require.Nil(t, resp.GetSplitRegion())
	require.Equal(t, OpSuccess, op.Status())
}

// With location-labels zone,host, replicas end on three different zones
// (two on one zone, or one host, only when nothing better exists), and
// balancing keeps them there.
func TestLocationLabels(t *testing.T) {
	s := newSim(t, 0, Config{LocationLabels: []string{"zone", "host"}, StoreLimit: 60})
	for i := 1; i <= 6; i++ {
		s.c.PutStore(&metapb.Store{Id: uint64(i), Address: fmt.Sprintf("s%d", i), Labels: []*metapb.StoreLabel{
			{Key: "zone", Value: fmt.Sprintf("z%d", (i+1)/2)}, {Key: "host", Value: fmt.Sprintf("h%d", i)}}})
		s.c.StoreHeartbeat(&pdpb.StoreStats{StoreId: uint64(i)})
	}
	// Stores 1 and 2 share zone z1: every region starts with two replicas
	// there.
	s.addRegions(12)
	zones := func(r *RegionInfo) map[string]bool {
		out := map[string]bool{}
		for _, p := range r.Voters() {
			out[labelValue(s.c.GetStore(p.GetStoreId()).Meta, "zone")] = true
		}
		return out
	}
	spread := func() bool {
		for _, r := range s.c.allRegions() {
			if len(zones(r)) != 3 || len(r.Voters()) != 3 || len(r.Learners()) > 0 {
				return false
			}
		}
		return true
	}
	for range 100 {
		s.round()
		if spread() && len(s.oc.Operators()) == 0 {
			break
		}
	}
	require.True(t, spread(), "replicas not spread over 3 zones")
	for range 30 {
		s.round()
		require.True(t, spread(), "balancing undid the zone spread")
	}
	// Every store took part: balance by size within the constraint.
	for sid := uint64(1); sid <= 6; sid++ {
		n, _ := s.counts(sid)
		require.Positive(t, n, "store %d", sid)
	}
	s.requireHealthy()
}
