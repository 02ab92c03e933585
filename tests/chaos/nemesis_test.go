package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// nemesis injects faults on a seeded schedule until ctx ends, healing each
// before the next: quiet for 2-4 s, then a fault held for 2-6 s.
type nemesis struct {
	name string
	lab  bool // needs the cluster in network namespaces (netlab)
	// faults lists what the nemesis may do; inject starts one and returns
	// what it did and how to heal it.
	faults []func(r *run, rng *rand.Rand) (what string, heal func())
}

func (n nemesis) run(ctx context.Context, r *run, rng *rand.Rand) {
	for {
		if !sleepCtx(ctx, time.Duration(2000+rng.IntN(2000))*time.Millisecond) {
			return
		}
		what, heal := n.faults[rng.IntN(len(n.faults))](r, rng)
		i := r.faultStarted(what)
		// A fault always lasts its time and is always healed, even when
		// the load ends first.
		time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		heal()
		r.faultHealed(i)
	}
}

// sleepCtx sleeps d or until ctx ends; false if ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// kill -9 the processes, and restart them (in PD, stores, SQL order) to
// heal.
func kill(r *run, what string, procs ...*localcluster.Proc) (string, func()) {
	for _, p := range procs {
		require.NoError(r.t, p.Kill())
	}
	return "kill -9 " + what, func() {
		for _, p := range procs {
			require.NoError(r.t, p.Start())
		}
	}
}

// panicAt sets failpoint site of p to panic (through its status server),
// runs trigger, and waits up to 20 s for p to die there; restarting it
// heals. If p does not get there (mustReach false: trigger may not lead
// to site), the failpoint is cleared and the fault is a no-op. Binaries of
// chaos runs are built with the failpoints tag.
func panicAt(r *run, what string, p *localcluster.Proc, site string, mustReach bool, trigger func()) (string, func()) {
	require.NoError(r.t, p.SetFailpoint(site, "panic"))
	trigger()
	select {
	case <-p.Exited():
	case <-time.After(20 * time.Second):
		require.False(r.t, mustReach, "%s: %s did not reach failpoint %s in 20 s under load", what, p.Name, site)
		if err := p.SetFailpoint(site, ""); err != nil && p.Running() {
			require.NoError(r.t, err)
		}
		what += " (not reached)"
	}
	return what, func() {
		if !p.Running() { // a panic that raced with the clearing is healed too
			require.NoError(r.t, p.Start())
		}
	}
}

// pause SIGSTOPs the processes, SIGCONT to heal: past every lease (store
// leases are under a second with these ticks, the schema lease 1 s, PD's
// TSO lease 3 s), so the rest of the cluster must go on without them and
// they must notice on waking.
func pause(r *run, what string, procs ...*localcluster.Proc) (string, func()) {
	for _, p := range procs {
		require.NoError(r.t, p.Pause())
	}
	return "pause " + what, func() {
		for _, p := range procs {
			require.NoError(r.t, p.Resume())
		}
	}
}

func pick[T any](rng *rand.Rand, s []T) (int, T) {
	i := rng.IntN(len(s))
	return i, s[i]
}

var (
	killNemesis = nemesis{name: "kill", faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.Stores)
			return kill(r, fmt.Sprintf("store %d", i+1), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) { return kill(r, "the PD leader", pdLeader(r, rng)) },
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.SQL)
			return kill(r, fmt.Sprintf("SQL node %d", i+1), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A minority: one store and the PD leader.
			i, p := pick(rng, r.c.Stores)
			return kill(r, fmt.Sprintf("store %d and the PD leader", i+1), pdLeader(r, rng), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) { return kill(r, "every process", r.c.Procs()...) },
		func(r *run, rng *rand.Rand) (string, func()) {
			// A store dies at a step of raft persistence, as a crash at
			// that instruction would: before or after the log's fsync,
			// or inside an apply round.
			i, p := pick(rng, r.c.Stores)
			_, site := pick(rng, []string{"raft-before-fsync", "raft-after-fsync", "raft-apply"})
			return panicAt(r, fmt.Sprintf("store %d panics at failpoint %s", i+1, site), p, site, true, func() {})
		},
	}}
	pauseNemesis = nemesis{name: "pause", faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.Stores)
			return pause(r, fmt.Sprintf("store %d", i+1), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) { return pause(r, "the PD leader", pdLeader(r, rng)) },
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.SQL)
			return pause(r, fmt.Sprintf("SQL node %d", i+1), p)
		},
	}}
	partitionNemesis = nemesis{name: "partition", lab: true, faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			// One member cut from every other: a PD member, a store or a
			// SQL node.
			i := rng.IntN(len(r.c.Procs()))
			return partition(r, "isolate "+r.c.Procs()[i].Name, []int{i}, others(r, i))
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// The leader of the busiest region, cut from every other
			// member: its lease must end before another store serves.
			i := hotLeader(r)
			if i < 0 {
				i = storeMember(r, rng.IntN(len(r.c.Stores)))
			}
			return partition(r, "isolate "+r.c.Procs()[i].Name+" (the busiest region's leader)", []int{i}, others(r, i))
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// Halves: one store (with, at random, the PD leader) and
			// one SQL node against the other two stores, the PD
			// majority and the other SQL node.
			minority := []int{storeMember(r, rng.IntN(len(r.c.Stores))), sqlMember(r, rng.IntN(len(r.c.SQL)))}
			if rng.IntN(2) == 0 {
				minority = append(minority, slices.Index(r.c.Procs(), pdLeader(r, rng)))
			}
			return partition(r, "halves: minority "+names(r, minority), minority, complement(r, minority))
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A bridge (overlapping majorities): two stores cannot reach
			// each other, the third reaches both.
			s := rng.Perm(3)
			return partition(r, fmt.Sprintf("bridge: %s and %s cut, %s reaches both", r.c.Stores[s[0]].Name, r.c.Stores[s[1]].Name, r.c.Stores[s[2]].Name),
				[]int{storeMember(r, s[0])}, []int{storeMember(r, s[1])})
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// One way: a store hears nothing from another (its answers
			// still go out).
			s := rng.Perm(3)
			r.lab.drop(storeMember(r, s[0]), []int{storeMember(r, s[1])}, true)
			return fmt.Sprintf("one-way: %s drops what %s sends", r.c.Stores[s[0]].Name, r.c.Stores[s[1]].Name), r.lab.heal
		},
	}}
	netNemesis = nemesis{name: "net", lab: true, faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			i := storeMember(r, rng.IntN(len(r.c.Stores)))
			r.lab.lose(i, 20)
			return "20 % packet loss at " + r.c.Procs()[i].Name, r.lab.heal
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			i := storeMember(r, rng.IntN(len(r.c.Stores)))
			r.lab.slow(i, "1mbit")
			return "1 Mbit/s cap on " + r.c.Procs()[i].Name, r.lab.heal
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// This kernel has no netem: a store's raft sends wait in
			// the transport (failpoint raft-send) instead.
			i, d := rng.IntN(3), time.Duration(50+rng.IntN(250))*time.Millisecond
			require.NoError(r.t, os.WriteFile(r.raftDelay[i], []byte(d.String()), 0o644))
			return fmt.Sprintf("%s's raft messages delayed %v", r.c.Stores[i].Name, d), func() {
				require.NoError(r.t, os.Remove(r.raftDelay[i]))
			}
		},
	}}
	scheduleNemesis = nemesis{name: "schedule", faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			// Splits in the middle of the load (SPLIT TABLE, as a user
			// would); nothing to heal: the regions stay split.
			table, keys := r.cfg.workload.splitKeys(rng)
			var by []string
			for _, k := range keys {
				by = append(by, fmt.Sprintf("(%d)", k))
			}
			q := fmt.Sprintf("SPLIT TABLE %s BY %s", table, strings.Join(by, ", "))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := r.dbs[rng.IntN(len(r.dbs))].ExecContext(ctx, q)
			cancel()
			require.NoError(r.t, err, q)
			return q, func() {}
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A store dies applying a split (its replica re-applies it
			// from the log on restart); the split itself may fail if
			// that store led the region, and there is none if the key
			// is a region boundary already.
			table, keys := r.cfg.workload.splitKeys(rng)
			i, p := pick(rng, r.c.Stores)
			q := fmt.Sprintf("SPLIT TABLE %s BY (%d)", table, keys[0])
			return panicAt(r, fmt.Sprintf("store %d panics applying %s", i+1, q), p, "raft-split-apply", false, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, _ = r.dbs[rng.IntN(len(r.dbs))].ExecContext(ctx, q)
				cancel()
			})
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A storm of leader transfers: every 300 ms each region's
			// leader is moved to another store, until healed.
			stop, done := make(chan struct{}), make(chan struct{})
			storm := rand.New(rand.NewPCG(rng.Uint64(), 0)) // the nemesis's rng stays on its goroutine
			go func() {
				defer close(done)
				for {
					transferLeaders(r, storm.Uint64())
					select {
					case <-stop:
						return
					case <-time.After(300 * time.Millisecond):
					}
				}
			}()
			return "leader transfers every 300 ms", func() { close(stop); <-done }
		},
	}}
	clockNemesis = nemesis{name: "clock", faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			// Every PD member's wall clock (the TSO's physical part)
			// jumps, so whichever leads after the restart is off; it
			// comes back at heal. Timestamps must never go backwards.
			d := time.Duration(rng.IntN(7200)-3600) * time.Second
			return restartWith(r, fmt.Sprintf("every PD member restarted with the clock %v off", d), "STRATA_CLOCK_SKEW="+d.String(), r.c.PDs...)
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// Every PD member's clock strobes: it jumps forward by up
			// to 10 s and back again every 50-500 ms.
			jump, period := time.Duration(1+rng.IntN(10))*time.Second, time.Duration(50+rng.IntN(450))*time.Millisecond
			return restartWith(r, fmt.Sprintf("every PD member restarted with its clock jumping %v ahead and back every %v", jump, period),
				fmt.Sprintf("STRATA_CLOCK_STROBE=%v/%v", jump, period), r.c.PDs...)
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A SQL node's wall clock: schema-sync liveness must not
			// depend on it (it is on PD's clock).
			_, p := pick(rng, r.c.SQL)
			d := time.Duration(rng.IntN(7200)-3600) * time.Second
			return restartWith(r, fmt.Sprintf("%s restarted with the clock %v off", p.Name, d), "STRATA_CLOCK_SKEW="+d.String(), p)
		},
	}}
	// The families a full run crosses with every workload: processes
	// killed or paused, the network partitioned or degraded, the
	// schedule, the clocks.
	nemeses = []nemesis{
		{name: "process", faults: slices.Concat(killNemesis.faults, pauseNemesis.faults)},
		{name: "network", lab: true, faults: slices.Concat(partitionNemesis.faults, netNemesis.faults)},
		scheduleNemesis,
		clockNemesis,
	}
)

// partition cuts every member of a from every member of b, both ways.
func partition(r *run, what string, a, b []int) (string, func()) {
	for _, i := range a {
		r.lab.drop(i, b, false)
	}
	for _, i := range b {
		r.lab.drop(i, a, false)
	}
	return "partition " + what, r.lab.heal
}

// storeMember and sqlMember are the member (Procs) indexes of store i and
// SQL node i.
func storeMember(r *run, i int) int { return len(r.c.PDs) + i }
func sqlMember(r *run, i int) int   { return len(r.c.PDs) + len(r.c.Stores) + i }

// pdLeader is the PD member PD names as leader, or a random member when no
// member answers (all of them down or without a leader).
func pdLeader(r *run, rng *rand.Rand) *localcluster.Proc {
	if p, err := r.c.PDLeader(); err == nil {
		return p
	}
	_, p := pick(rng, r.c.PDs)
	return p
}

// others lists every member but i.
func others(r *run, i int) []int { return complement(r, []int{i}) }

func complement(r *run, a []int) []int {
	var out []int
	for i := range r.c.Procs() {
		if !slices.Contains(a, i) {
			out = append(out, i)
		}
	}
	return out
}

func names(r *run, members []int) string {
	var n []string
	for _, i := range members {
		n = append(n, r.c.Procs()[i].Name)
	}
	return strings.Join(n, ", ")
}

// hotLeader returns the member index of the store leading the region with
// the most keys read and written (PD's view), or -1 if PD cannot tell.
func hotLeader(r *run) int {
	var regions struct {
		Regions []struct {
			Leader *struct {
				StoreID uint64 `json:"store_id"`
			} `json:"leader"`
			WrittenKeys uint64 `json:"written_keys"`
			ReadKeys    uint64 `json:"read_keys"`
		} `json:"regions"`
	}
	var stores struct {
		Stores []struct {
			Store struct {
				ID      uint64 `json:"id"`
				Address string `json:"address"`
			} `json:"store"`
		} `json:"stores"`
	}
	if r.c.PDAPI("GET", "regions", nil, &regions) != nil || r.c.PDAPI("GET", "stores", nil, &stores) != nil {
		return -1
	}
	var leader, best uint64
	for _, rg := range regions.Regions {
		if rg.Leader != nil && rg.WrittenKeys+rg.ReadKeys >= best {
			leader, best = rg.Leader.StoreID, rg.WrittenKeys+rg.ReadKeys
		}
	}
	for _, st := range stores.Stores {
		if st.Store.ID != leader {
			continue
		}
		for i, p := range r.c.Stores {
			if slices.Contains(p.Args, st.Store.Address) {
				return storeMember(r, i)
			}
		}
	}
	return -1
}

// transferLeaders asks PD to move every region's leader to another of its
// voters (chosen by seed); refusals (an operator already running) are
// ignored: the storm only needs most of them.
func transferLeaders(r *run, seed uint64) {
	var regions struct {
		Regions []struct {
			ID    uint64 `json:"id"`
			Peers []struct {
				StoreID uint64 `json:"store_id"`
			} `json:"peers"`
			Leader *struct {
				StoreID uint64 `json:"store_id"`
			} `json:"leader"`
		} `json:"regions"`
	}
	if r.c.PDAPI("GET", "regions", nil, &regions) != nil {
		return
	}
	for i, rg := range regions.Regions {
		if rg.Leader == nil || len(rg.Peers) < 2 {
			continue
		}
		var to []uint64
		for _, p := range rg.Peers {
			if p.StoreID != rg.Leader.StoreID {
				to = append(to, p.StoreID)
			}
		}
		target := to[(seed+uint64(i))%uint64(len(to))]
		_ = r.c.PDAPI("POST", "operators", map[string]any{"name": "transfer-leader", "region_id": rg.ID, "to_store_id": target}, nil)
	}
}

// restartWith restarts procs (kill -9) with env added to their
// environment (a clock failpoint: STRATA_CLOCK_SKEW or
// STRATA_CLOCK_STROBE, failpoints builds), and restarts them without it to
// heal: clocks that jump away and back again.
func restartWith(r *run, what, env string, procs ...*localcluster.Proc) (string, func()) {
	base := make([][]string, len(procs))
	restart := func(faulty bool) {
		for i, p := range procs {
			require.NoError(r.t, p.Kill())
			p.Env = slices.Clone(base[i])
			if faulty {
				p.Env = append(p.Env, env)
			}
			require.NoError(r.t, p.Start())
		}
	}
	for i, p := range procs {
		base[i] = slices.Clone(p.Env)
	}
	restart(true)
	return what, func() { restart(false) }
}
