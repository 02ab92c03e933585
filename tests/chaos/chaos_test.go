package chaos

import (
	"context"
	"hash/fnv"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
)

// workloads builds each workload fresh for a run; r gives access to the
// cluster (the monotonic workload asks PD for timestamps directly).
var workloads = []struct {
	name  string
	build func(r *run) workload
	// quick is the nemesis family `make test` runs this workload with.
	quick string
}{
	{"bank", func(*run) workload { return bank{} }, "network"},
	{"register", func(*run) workload { return &register{} }, "process"},
	{"append-optimistic", func(*run) workload { return &appendWL{} }, "process"},
	{"append-pessimistic", func(*run) workload { return &appendWL{pessimistic: true} }, "network"},
	{"set", func(*run) workload { return &set{} }, "schedule"},
	{"monotonic", func(r *run) workload { return &monotonic{pd: pdFor(r)} }, "process"},
}

// pdFor returns a lazily made PD client of r's cluster, closed at the end
// of the test.
func pdFor(r *run) func() *pdclient.Client {
	var once sync.Once
	var c *pdclient.Client
	return func() *pdclient.Client {
		once.Do(func() {
			var err error
			c, err = pdclient.New(context.Background(), r.c.PDAddrs())
			require.NoError(r.t, err)
			r.t.Cleanup(func() { c.Close() })
		})
		return c
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestChaos runs every workload under faults and checks its history. By
// default each workload runs once, with its quick nemesis, for
// STRATA_CHAOS_SECONDS (20); STRATA_CHAOS_FULL=1 (`make chaos`) runs every
// workload with every nemesis family.
func TestChaos(t *testing.T) {
	full := os.Getenv("STRATA_CHAOS_FULL") == "1"
	seconds := envInt("STRATA_CHAOS_SECONDS", 20)
	base := uint64(envInt("STRATA_CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	for _, w := range workloads {
		for _, n := range nemeses {
			if !full && n.name != w.quick {
				continue
			}
			t.Run(w.name+"/"+n.name, func(t *testing.T) {
				h := fnv.New64a()
				h.Write([]byte(w.name + "/" + n.name))
				seed := base ^ h.Sum64()%1e6
				r := startRun(t, config{nemesis: n, clients: 8, duration: time.Duration(seconds) * time.Second, seed: seed, lab: n.lab})
				r.cfg.workload = w.build(r)
				rep := r.Run()
				rep.name = w.name
				writeReport(t, rep)
				require.True(t, rep.result.Valid, "anomalies found (seed %d): %v", seed, rep.result.Kinds())
				require.Positive(t, rep.byF[firstF(rep)][0], "no operation succeeded")
				for _, w := range rep.windows {
					require.True(t, w.firstOKAfterHeal >= 0 && w.firstOKAfterHeal <= maxRecovery,
						"after %q healed at %v, the first operation succeeded %v later (bound %v; -1: never)",
						w.fault.what, w.fault.heal, w.firstOKAfterHeal, maxRecovery)
				}
			})
		}
	}
}

// firstF is the operation name with the most successes, for the liveness
// check: a run where nothing succeeded proves nothing.
func firstF(rep *report) string {
	best, f := -1, ""
	for name, n := range rep.byF {
		if n[0] > best {
			best, f = n[0], name
		}
	}
	return f
}
