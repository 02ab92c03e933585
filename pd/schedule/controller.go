package schedule

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// OperatorController holds the running operators (at most one per region)
// and hands their steps to region leaders. Safe for concurrent use.
type OperatorController struct {
	c   *Cluster
	log *slog.Logger

	mu      sync.Mutex
	ops     map[uint64]*Operator
	running [len(opKindNames)]int // by kind
	// buckets are the store limits: tokens per store for adding and for
	// removing peers, refilled at StoreLimit per minute.
	addTokens, removeTokens map[uint64]*bucket
	// recent keeps the last finished operators for the API.
	recent []OperatorView
}

type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) refill(now time.Time, perMin float64) {
	b.tokens = min(b.tokens+now.Sub(b.last).Minutes()*perMin, max(perMin, 1))
	b.last = now
}

// NewOperatorController returns a controller over c.
func NewOperatorController(c *Cluster, log *slog.Logger) *OperatorController {
	if log == nil {
		log = slog.Default()
	}
	return &OperatorController{c: c, log: log, ops: map[uint64]*Operator{},
		addTokens: map[uint64]*bucket{}, removeTokens: map[uint64]*bucket{}}
}

// Errors of AddOperator.
var (
	ErrOperatorExists = fmt.Errorf("schedule: region already has an operator")
	ErrStoreLimit     = fmt.Errorf("schedule: store limit reached")
	ErrScheduleLimit  = fmt.Errorf("schedule: schedule limit reached")
)

func (oc *OperatorController) bucketOf(m map[uint64]*bucket, sid uint64, now time.Time, perMin float64) *bucket {
	b := m[sid]
	if b == nil {
		b = &bucket{tokens: max(perMin, 1), last: now}
		m[sid] = b
	}
	b.refill(now, perMin)
	return b
}

// AddOperator starts op unless its region has one (an operator of a kind
// that repairs replicas replaces a balance operator), a store limit or the
// kind's schedule limit is reached.
func (oc *OperatorController) AddOperator(op *Operator) error {
	cfg := oc.c.Config()
	now := oc.c.Now()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if old := oc.ops[op.RegionID]; old != nil {
		if !(op.Kind.repairs() && !old.Kind.repairs()) {
			return ErrOperatorExists
		}
	}
	limit := map[OpKind]int{OpLeader: cfg.LeaderScheduleLimit, OpRegion: cfg.RegionScheduleLimit, OpReplica: cfg.ReplicaScheduleLimit,
		OpAffinity: cfg.AffinityScheduleLimit}
	if l, ok := limit[op.Kind]; ok && oc.running[op.Kind] >= l {
		return ErrScheduleLimit
	}
	// Store limits: every peer the operator adds or removes takes a token.
	var takes []*bucket
	for _, s := range op.Steps {
		var b *bucket
		switch s := s.(type) {
		case AddLearner:
			b = oc.bucketOf(oc.addTokens, s.ToStore, now, cfg.StoreLimit)
		case RemovePeer:
			b = oc.bucketOf(oc.removeTokens, s.FromStore, now, cfg.StoreLimit)
		default:
			continue
		}
		if b.tokens < 1 && op.Kind != OpAdmin {
			return fmt.Errorf("%w: %s", ErrStoreLimit, s)
		}
		takes = append(takes, b)
	}
	for _, b := range takes {
		b.tokens--
	}
	if old := oc.ops[op.RegionID]; old != nil {
		oc.finishLocked(old, OpReplaced, now)
	}
	op.created, op.status = now, OpCreated
	oc.ops[op.RegionID] = op
	oc.running[op.Kind]++
	operatorsRunning.WithLabelValues(op.Kind.String()).Set(float64(oc.running[op.Kind]))
	operatorsCreated.WithLabelValues(op.Desc, op.Kind.String()).Inc()
	oc.log.Info("operator created", "op", op.String())
	return nil
}

// finishLocked ends op with status. Requires mu.
func (oc *OperatorController) finishLocked(op *Operator, status OpStatus, now time.Time) {
	if oc.ops[op.RegionID] == op {
		delete(oc.ops, op.RegionID)
		oc.running[op.Kind]--
		operatorsRunning.WithLabelValues(op.Kind.String()).Set(float64(oc.running[op.Kind]))
	}
	op.status, op.finished = status, now
	operatorsFinished.WithLabelValues(op.Desc, status.String()).Inc()
	if status == OpSuccess {
		operatorDuration.WithLabelValues(op.Desc).Observe(now.Sub(op.created).Seconds())
		oc.log.Info("operator finished", "op", op.String(), "took", now.Sub(op.created))
	} else {
		oc.log.Warn("operator ended", "op", op.String(), "status", status.String())
	}
	oc.recent = append(oc.recent, op.view())
	if len(oc.recent) > 256 {
		oc.recent = slices.Delete(oc.recent, 0, len(oc.recent)-256)
	}
}

// RemoveOperator cancels region id's operator; false if it has none.
func (oc *OperatorController) RemoveOperator(regionID uint64) bool {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	op := oc.ops[regionID]
	if op == nil {
		return false
	}
	oc.finishLocked(op, OpCanceled, oc.c.Now())
	return true
}

// Dispatch is called with every region heartbeat (after the model took r):
// it advances r's operator and fills the step the leader should run into
// resp. Finished, timed out and obsolete operators are removed here.
func (oc *OperatorController) Dispatch(r *RegionInfo, resp *pdpb.RegionHeartbeatResponse) {
	now := oc.c.Now()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	op := oc.ops[r.ID()]
	if op == nil {
		return
	}
	if r.Epoch().GetVersion() != op.Epoch.GetVersion() {
		status := OpCanceled // split or merged under it
		if _, ok := op.Steps[op.cur].(SplitRegion); ok && op.cur == len(op.Steps)-1 {
			status = OpSuccess // its own split
			op.cur++
		}
		oc.finishLocked(op, status, now)
		return
	}
	step := op.check(r)
	if step == nil {
		oc.finishLocked(op, OpSuccess, now)
		return
	}
	if now.Sub(op.created) > op.Timeout {
		oc.finishLocked(op, OpTimeout, now)
		return
	}
	if !stepPossible(step, r) {
		// A conf change this operator did not make took away the peer
		// its step needs (a replaced operator's removal still applied,
		// an election): it would wait for its timeout (3 minutes); the
		// checkers decide again from the region as it is.
		oc.finishLocked(op, OpCanceled, now)
		return
	}
	if to := stepTarget(step); to != 0 && !oc.c.StoreState(to).placeable() {
		// The store the step adds to or moves the leadership to stopped
		// heartbeating, is being removed or is gone: the operator would
		// wait for it; the checkers decide again from the region as it is.
		oc.finishLocked(op, OpCanceled, now)
		return
	}
	if op.status == OpCreated {
		op.status, op.started = OpStarted, now
	}
	resp.RegionId = r.ID()
	resp.RegionEpoch = r.Epoch()
	if rm, ok := step.(RemovePeer); ok && rm.FromStore == r.LeaderStore() {
		// The leadership moved onto the replica to remove since the
		// operator was planned (an election): a leader does not remove
		// itself, so move it to another voter first.
		if to := oc.transferTarget(r, rm.FromStore); to != 0 {
			TransferLeader{FromStore: rm.FromStore, ToStore: to}.fill(resp)
			return
		}
	}
	step.fill(resp)
}

// transferTarget picks a voter of r other than on store from, on an Up
// store and not pending, to take the leadership; 0 if none. Requires mu.
func (oc *OperatorController) transferTarget(r *RegionInfo, from uint64) uint64 {
	for _, p := range r.Voters() {
		if sid := p.GetStoreId(); sid != from && !r.IsPending(p.GetId()) && !r.IsDown(p.GetId()) && oc.c.StoreState(sid).placeable() {
			return sid
		}
	}
	return 0
}

// OperatorKind returns the kind of region id's operator.
func (oc *OperatorController) OperatorKind(regionID uint64) (OpKind, bool) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if op := oc.ops[regionID]; op != nil {
		return op.Kind, true
	}
	return 0, false
}

// Expire times out operators whose region has not reported for their
// timeout (a region without a leader never heartbeats).
func (oc *OperatorController) Expire() {
	now := oc.c.Now()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for _, op := range oc.ops {
		if now.Sub(op.created) > op.Timeout {
			oc.finishLocked(op, OpTimeout, now)
		}
	}
}

// GetOperator returns a view of region id's operator.
func (oc *OperatorController) GetOperator(regionID uint64) (OperatorView, bool) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	op := oc.ops[regionID]
	if op == nil {
		return OperatorView{}, false
	}
	return op.view(), true
}

// HasOperator reports whether region id has a running operator.
func (oc *OperatorController) HasOperator(regionID uint64) bool {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.ops[regionID] != nil
}

// RegionsWithOperator returns the ids of the regions with a running
// operator, ascending.
func (oc *OperatorController) RegionsWithOperator() []uint64 {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	out := make([]uint64, 0, len(oc.ops))
	for id := range oc.ops {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Operators returns views of the running operators by region id.
func (oc *OperatorController) Operators() []OperatorView {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	out := make([]OperatorView, 0, len(oc.ops))
	for _, op := range oc.ops {
		out = append(out, op.view())
	}
	slices.SortFunc(out, func(a, b OperatorView) int { return cmp.Compare(a.RegionID, b.RegionID) })
	return out
}

// History returns views of the last finished operators, oldest first.
func (oc *OperatorController) History() []OperatorView {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return slices.Clone(oc.recent)
}

// influence sums what the running operators will change per store.
func (oc *OperatorController) influence() map[uint64]*storeInfluence {
	inf := map[uint64]*storeInfluence{}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for _, op := range oc.ops {
		r := oc.c.GetRegion(op.RegionID)
		if r == nil {
			continue
		}
		for _, s := range op.Steps[op.cur:] {
			s.influence(inf, r)
		}
	}
	return inf
}

// running returns how many operators of kind run.
func (oc *OperatorController) runningOf(kind OpKind) int {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.running[kind]
}

// storeTokens returns the tokens left in store sid's add (or remove) limit.
func (oc *OperatorController) storeTokens(sid uint64, add bool) float64 {
	cfg := oc.c.Config()
	now := oc.c.Now()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if add {
		return oc.bucketOf(oc.addTokens, sid, now, cfg.StoreLimit).tokens
	}
	return oc.bucketOf(oc.removeTokens, sid, now, cfg.StoreLimit).tokens
}

// stepTarget is the store a step adds a replica or the leadership to (0
// for a removal).
func stepTarget(s OpStep) uint64 {
	switch s := s.(type) {
	case TransferLeader:
		return s.ToStore
	case AddLearner:
		return s.ToStore
	case PromoteLearner:
		return s.ToStore
	}
	return 0
}

// stepPossible reports whether region r still has what step acts on: a
// voter to take the leadership, the learner to promote, a store without
// another peer of the region to add a learner to.
func stepPossible(step OpStep, r *RegionInfo) bool {
	switch s := step.(type) {
	case AddLearner:
		// A replaced operator's learner may have landed on the store
		// after this operator was planned: the store refuses a second
		// peer of the region.
		p := r.PeerOnStore(s.ToStore)
		return p == nil || p.GetId() == s.PeerID
	case TransferLeader:
		p := r.PeerOnStore(s.ToStore)
		return p != nil && p.GetRole() == metapb.PeerRole_Voter
	case PromoteLearner:
		p := r.PeerOnStore(s.ToStore)
		return p != nil && p.GetId() == s.PeerID
	}
	return true
}
