package schedule

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Coordinator runs the replica checker and the schedulers on the PD
// leader, off the heartbeat path, and turns drained Offline stores into
// Tombstones.
type Coordinator struct {
	c       *Cluster
	oc      *OperatorController
	checker *ReplicaChecker
	scheds  []scheduler
	aff     *Affinity
	log     *slog.Logger
	// Tombstone persists a drained Offline store's new state (package pd).
	Tombstone func(ctx context.Context, storeID uint64) error
}

// NewCoordinator wires the checkers and schedulers over c and oc.
func NewCoordinator(c *Cluster, oc *OperatorController, alloc IDAllocator, log *slog.Logger) *Coordinator {
	if log == nil {
		log = slog.Default()
	}
	aff := newAffinity(c)
	aff.running = oc.runningOf
	return &Coordinator{
		c: c, oc: oc, log: log, aff: aff,
		checker: &ReplicaChecker{c: c, alloc: alloc, aff: aff},
		// Affinity first: the balance schedulers skip its regions anyway.
		scheds: []scheduler{&affinityScheduler{a: aff, alloc: alloc, running: oc.runningOf}, &balanceLeader{c: c, aff: aff},
			&balanceRegion{c: c, alloc: alloc, aff: aff}, &hotRegion{c: c, aff: aff}},
	}
}

// Affinity returns the affinity groups' state (for the API).
func (co *Coordinator) Affinity() *Affinity { return co.aff }

// Run schedules every ScheduleInterval until ctx ends.
func (co *Coordinator) Run(ctx context.Context) {
	for {
		iv := co.c.Config().ScheduleInterval.D()
		select {
		case <-ctx.Done():
			return
		case <-time.After(iv):
		}
		co.RunOnce(ctx)
	}
}

// maxOpsPerRun bounds the operators one scheduler adds in one run (once a
// second); the kind's schedule limit bounds those in flight. At 8, 10,000
// leaders a split left on one store took 13 minutes to balance with
// leader-schedule-limit 256 (PD runs its schedulers every 10 ms when they
// find work).
const maxOpsPerRun = 64

// RunOnce runs one round: expire operators, patrol regions, run each
// enabled scheduler, update store gauges, tombstone drained stores.
func (co *Coordinator) RunOnce(ctx context.Context) {
	co.oc.Expire()
	co.aff.refresh()
	co.patrol()
	cfg := co.c.Config()
	for _, s := range co.scheds {
		if !cfg.schedulerEnabled(s.name()) {
			continue
		}
		start := time.Now()
		for range maxOpsPerRun {
			ops := s.schedule(co.oc.influence(), co.oc.HasOperator)
			added := 0
			for _, op := range ops {
				if co.oc.AddOperator(op) == nil {
					added++
				}
			}
			if added == 0 {
				break
			}
		}
		schedulerRunSeconds.WithLabelValues(s.name()).Observe(time.Since(start).Seconds())
	}
	co.storeStates(ctx)
}

// patrol runs the replica checker over every region without an operator.
func (co *Coordinator) patrol() {
	start := time.Now()
	inf := co.oc.influence()
	found := map[string]int{}
	for _, r := range co.c.allRegions() {
		kind, busy := co.oc.OperatorKind(r.ID())
		if busy && kind.repairs() {
			continue
		}
		op, problem, err := co.checker.Check(r, inf)
		if err != nil {
			co.log.Warn("replica checker", "region", r.ID(), "err", err)
			continue
		}
		if op == nil {
			continue
		}
		if busy && problem != "down-peer" && problem != "offline-peer" && problem != "miss-peer" {
			// A balance operator is moving the region (an extra replica or
			// a learner is its own doing); only a lost or leaving replica
			// preempts it.
			continue
		}
		found[problem]++
		if co.oc.AddOperator(op) == nil {
			for _, s := range op.Steps {
				s.influence(inf, r)
			}
		}
	}
	for _, p := range []string{"miss-peer", "down-peer", "offline-peer", "extra-peer", "learner-peer", "location"} {
		unhealthyRegionsGauge.WithLabelValues(p).Set(float64(found[p]))
	}
	schedulerRunSeconds.WithLabelValues("replica-checker").Observe(time.Since(start).Seconds())
}

// storeStates updates the store gauges and tombstones every Offline store
// that holds no replica any more.
func (co *Coordinator) storeStates(ctx context.Context) {
	counts := map[StoreState]int{}
	now := co.c.Now()
	cfg := co.c.Config()
	for _, s := range co.c.Stores() {
		st := s.State(now, &cfg)
		counts[st]++
		sid := s.Meta.GetId()
		n, l, _ := co.c.StoreCounts(sid)
		id := strconv.FormatUint(sid, 10)
		storeRegionsGauge.WithLabelValues(id, "region").Set(float64(n))
		storeRegionsGauge.WithLabelValues(id, "leader").Set(float64(l))
		if st == StoreOffline && n == 0 && co.Tombstone != nil {
			if err := co.Tombstone(ctx, sid); err != nil {
				co.log.Warn("tombstone store", "store", sid, "err", err)
			} else {
				co.log.Info("store drained: tombstone", "store", sid)
			}
		}
	}
	for st := StoreUp; st <= StoreTombstone; st++ {
		storeStateGauge.WithLabelValues(st.String()).Set(float64(counts[st]))
	}
}
