package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// nemesis injects faults on a seeded schedule until ctx ends, healing each
// before the next: quiet for 2-4 s, then a fault held for 2-6 s.
type nemesis struct {
	name string
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
		func(r *run, rng *rand.Rand) (string, func()) { return kill(r, "PD", r.c.PD) },
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.SQL)
			return kill(r, fmt.Sprintf("SQL node %d", i+1), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) {
			// A minority: one store and the PD.
			i, p := pick(rng, r.c.Stores)
			return kill(r, fmt.Sprintf("store %d and PD", i+1), r.c.PD, p)
		},
		func(r *run, rng *rand.Rand) (string, func()) { return kill(r, "every process", r.c.Procs()...) },
	}}
	pauseNemesis = nemesis{name: "pause", faults: []func(*run, *rand.Rand) (string, func()){
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.Stores)
			return pause(r, fmt.Sprintf("store %d", i+1), p)
		},
		func(r *run, rng *rand.Rand) (string, func()) { return pause(r, "PD", r.c.PD) },
		func(r *run, rng *rand.Rand) (string, func()) {
			i, p := pick(rng, r.c.SQL)
			return pause(r, fmt.Sprintf("SQL node %d", i+1), p)
		},
	}}
	nemeses = []nemesis{killNemesis, pauseNemesis}
)
