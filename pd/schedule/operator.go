package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// OpKind says which limit an operator counts against.
type OpKind int

// Operator kinds.
const (
	OpLeader   OpKind = iota // leader transfers only
	OpRegion                 // moves a replica (balance)
	OpReplica                // repairs replicas (checker)
	OpAdmin                  // added through the API
	OpAffinity               // moves a region onto its affinity target
)

var opKindNames = [...]string{"leader", "region", "replica", "admin", "affinity"}

// repairs reports whether operators of kind k repair replicas or come
// from an operator: they replace a running balance or affinity operator.
func (k OpKind) repairs() bool { return k == OpReplica || k == OpAdmin }

func (k OpKind) String() string { return opKindNames[k] }

// OpStatus is an operator's lifecycle state.
type OpStatus int

// Operator statuses (PD's names).
const (
	OpCreated OpStatus = iota
	OpStarted
	OpSuccess
	OpCanceled
	OpTimeout
	OpReplaced
)

var opStatusNames = [...]string{"CREATED", "STARTED", "SUCCESS", "CANCELED", "TIMEOUT", "REPLACED"}

func (s OpStatus) String() string { return opStatusNames[s] }

func (s OpStatus) finished() bool { return s >= OpSuccess }

// OpStep is one step of an operator.
type OpStep interface {
	// done reports whether region r shows the step's effect.
	done(r *RegionInfo) bool
	// fill sets the step's command in a heartbeat response.
	fill(resp *pdpb.RegionHeartbeatResponse)
	// influence records the step's load change per store.
	influence(inf map[uint64]*storeInfluence, r *RegionInfo)
	String() string
}

// TransferLeader moves the leadership to the peer on ToStore.
type TransferLeader struct{ FromStore, ToStore uint64 }

func (s TransferLeader) done(r *RegionInfo) bool { return r.LeaderStore() == s.ToStore }
func (s TransferLeader) fill(resp *pdpb.RegionHeartbeatResponse) {
	resp.TransferLeader = &pdpb.TransferLeader{Peer: &metapb.Peer{StoreId: s.ToStore}}
}
func (s TransferLeader) influence(inf map[uint64]*storeInfluence, r *RegionInfo) {
	infOf(inf, s.FromStore).leaders--
	infOf(inf, s.ToStore).leaders++
}
func (s TransferLeader) String() string {
	return fmt.Sprintf("transfer leader from store %d to store %d", s.FromStore, s.ToStore)
}

// AddLearner adds peer PeerID on ToStore as a learner.
type AddLearner struct{ ToStore, PeerID uint64 }

func (s AddLearner) done(r *RegionInfo) bool {
	p := r.PeerOnStore(s.ToStore)
	return p != nil && p.GetId() == s.PeerID
}
func (s AddLearner) fill(resp *pdpb.RegionHeartbeatResponse) {
	resp.ChangePeer = &pdpb.ChangePeer{ChangeType: pdpb.ConfChangeType_AddLearnerNode,
		Peer: &metapb.Peer{Id: s.PeerID, StoreId: s.ToStore, Role: metapb.PeerRole_Learner}}
}
func (s AddLearner) influence(inf map[uint64]*storeInfluence, r *RegionInfo) {
	i := infOf(inf, s.ToStore)
	i.regions++
	i.size += int64(r.size())
}
func (s AddLearner) String() string {
	return fmt.Sprintf("add learner peer %d on store %d", s.PeerID, s.ToStore)
}

// PromoteLearner makes the learner PeerID on ToStore a voter.
type PromoteLearner struct{ ToStore, PeerID uint64 }

func (s PromoteLearner) done(r *RegionInfo) bool {
	p := r.PeerOnStore(s.ToStore)
	return p != nil && p.GetId() == s.PeerID && p.GetRole() == metapb.PeerRole_Voter
}
func (s PromoteLearner) fill(resp *pdpb.RegionHeartbeatResponse) {
	resp.ChangePeer = &pdpb.ChangePeer{ChangeType: pdpb.ConfChangeType_AddNode,
		Peer: &metapb.Peer{Id: s.PeerID, StoreId: s.ToStore, Role: metapb.PeerRole_Voter}}
}
func (s PromoteLearner) influence(map[uint64]*storeInfluence, *RegionInfo) {}
func (s PromoteLearner) String() string {
	return fmt.Sprintf("promote learner peer %d on store %d to voter", s.PeerID, s.ToStore)
}

// RemovePeer removes the region's peer on FromStore.
type RemovePeer struct{ FromStore, PeerID uint64 }

func (s RemovePeer) done(r *RegionInfo) bool { return r.PeerOnStore(s.FromStore) == nil }
func (s RemovePeer) fill(resp *pdpb.RegionHeartbeatResponse) {
	resp.ChangePeer = &pdpb.ChangePeer{ChangeType: pdpb.ConfChangeType_RemoveNode,
		Peer: &metapb.Peer{Id: s.PeerID, StoreId: s.FromStore}}
}
func (s RemovePeer) influence(inf map[uint64]*storeInfluence, r *RegionInfo) {
	i := infOf(inf, s.FromStore)
	i.regions--
	i.size -= int64(r.size())
}
func (s RemovePeer) String() string {
	return fmt.Sprintf("remove peer %d on store %d", s.PeerID, s.FromStore)
}

// SplitRegion splits the region at Keys (region key space). It is the
// last step of its operator and is done once the region's version moved
// past the operator's (Dispatch checks that before the epoch cancel).
type SplitRegion struct{ Keys [][]byte }

func (s SplitRegion) done(r *RegionInfo) bool { return false }
func (s SplitRegion) fill(resp *pdpb.RegionHeartbeatResponse) {
	resp.SplitRegion = &pdpb.SplitRegion{Keys: s.Keys}
}
func (s SplitRegion) influence(map[uint64]*storeInfluence, *RegionInfo) {}
func (s SplitRegion) String() string {
	keys := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		keys[i] = fmt.Sprintf("%X", k)
	}
	return "split region at " + strings.Join(keys, ",")
}

// storeInfluence is the change running operators will make to a store.
type storeInfluence struct {
	regions, leaders int
	size             int64
}

func infOf(m map[uint64]*storeInfluence, sid uint64) *storeInfluence {
	i := m[sid]
	if i == nil {
		i = &storeInfluence{}
		m[sid] = i
	}
	return i
}

// Operator is a sequence of steps on one region. Its methods are called
// under OperatorController's lock (Snapshot gives a copy for readers).
type Operator struct {
	Desc     string
	Kind     OpKind
	RegionID uint64
	// Epoch is the region epoch when the operator was created; a region
	// whose version moved (split) cancels it.
	Epoch   *metapb.RegionEpoch
	Steps   []OpStep
	Timeout time.Duration

	cur      int
	status   OpStatus
	created  time.Time
	started  time.Time
	finished time.Time
}

// NewOperator builds an operator on region r.
func NewOperator(desc string, kind OpKind, r *RegionInfo, timeout time.Duration, steps ...OpStep) *Operator {
	return &Operator{Desc: desc, Kind: kind, RegionID: r.ID(), Epoch: r.Epoch(), Steps: steps, Timeout: timeout}
}

// Status is the operator's state.
func (op *Operator) Status() OpStatus { return op.status }

func (op *Operator) String() string {
	parts := make([]string, len(op.Steps))
	for i, s := range op.Steps {
		parts[i] = s.String()
	}
	return fmt.Sprintf("%s (kind:%s, region:%d, step:%d/%d, status:%s) [%s]", op.Desc, op.Kind, op.RegionID, op.cur, len(op.Steps), op.status, strings.Join(parts, ", "))
}

// check advances over the steps r shows done and returns the current one
// (nil when every step is done).
func (op *Operator) check(r *RegionInfo) OpStep {
	for op.cur < len(op.Steps) && op.Steps[op.cur].done(r) {
		op.cur++
	}
	if op.cur < len(op.Steps) {
		return op.Steps[op.cur]
	}
	return nil
}

func (op *Operator) touches(sid uint64) bool {
	for _, s := range op.Steps[op.cur:] {
		switch s := s.(type) {
		case TransferLeader:
			if s.ToStore == sid || s.FromStore == sid {
				return true
			}
		case AddLearner:
			if s.ToStore == sid {
				return true
			}
		case PromoteLearner:
			if s.ToStore == sid {
				return true
			}
		case RemovePeer:
			if s.FromStore == sid {
				return true
			}
		}
	}
	return false
}

// OperatorView is a read-only copy of an operator for the API.
type OperatorView struct {
	RegionID uint64    `json:"region_id"`
	Desc     string    `json:"desc"`
	Kind     string    `json:"kind"`
	Status   string    `json:"status"`
	Step     int       `json:"step"`
	Steps    []string  `json:"steps"`
	Created  time.Time `json:"create_time"`
	String   string    `json:"brief"`
}

func (op *Operator) view() OperatorView {
	v := OperatorView{RegionID: op.RegionID, Desc: op.Desc, Kind: op.Kind.String(), Status: op.status.String(),
		Step: op.cur, Created: op.created, String: op.String()}
	for _, s := range op.Steps {
		v.Steps = append(v.Steps, s.String())
	}
	return v
}

// MovePeerSteps are the steps to move the replica of r on store from to
// store to (peer id newPeer): add a learner, promote it, move the
// leadership away from the old replica when it leads, remove the old
// replica.
func MovePeerSteps(r *RegionInfo, from, to, newPeer uint64) []OpStep {
	steps := []OpStep{AddLearner{ToStore: to, PeerID: newPeer}, PromoteLearner{ToStore: to, PeerID: newPeer}}
	if r.LeaderStore() == from {
		steps = append(steps, TransferLeader{FromStore: from, ToStore: to})
	}
	old := r.PeerOnStore(from)
	return append(steps, RemovePeer{FromStore: from, PeerID: old.GetId()})
}
