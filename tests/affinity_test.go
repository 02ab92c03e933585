package tests

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// Data affinity against real binaries (issue 10's acceptance): a table
// whose index regions and row regions are led from different stores ends,
// once it is an affinity group, with every region led from one store
// (checked through PD's HTTP API), and the balance schedulers leave it
// there through a load of inserts and index lookups. `make test` runs
// 45 s of load; `make test-affinity` runs 5 minutes
// (STRATA_AFFINITY_LOAD=5m).

type apiAffinityGroup struct {
	TableID             int64    `json:"table_id"`
	LeaderStoreID       uint64   `json:"leader_store_id"`
	VoterStoreIDs       []uint64 `json:"voter_store_ids"`
	Phase               string   `json:"phase"`
	RegionCount         int      `json:"region_count"`
	AffinityRegionCount int      `json:"affinity_region_count"`
	CoLed               bool     `json:"co_led"`
	Regions             []struct {
		ID            uint64 `json:"id"`
		StartKey      string `json:"start_key"`
		Kind          string `json:"kind"`
		LeaderStoreID uint64 `json:"leader_store_id"`
		Satisfied     bool   `json:"satisfied"`
	} `json:"regions"`
}

type apiOperatorView struct {
	RegionID uint64    `json:"region_id"`
	Desc     string    `json:"desc"`
	Status   string    `json:"status"`
	Created  time.Time `json:"create_time"`
}

func TestAffinityKeepsIndexAndRowsCoLed(t *testing.T) {
	load := 45 * time.Second
	if s := os.Getenv("STRATA_AFFINITY_LOAD"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		load = d
	}
	c := startPDCluster(t, 3, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	db := openDB(t, c, 0, "")
	_, err := db.Exec("CREATE DATABASE d")
	require.NoError(t, err)
	db = openDB(t, c, 0, "d")
	_, err = db.Exec("CREATE TABLE t (id INT PRIMARY KEY, k INT, v VARCHAR(40), INDEX ik (k))")
	require.NoError(t, err)
	_, err = db.Exec("SPLIT TABLE t BETWEEN (0) AND (1000000) REGIONS 4")
	require.NoError(t, err)
	_, err = db.Exec("SPLIT TABLE t INDEX ik BETWEEN (0) AND (1000000) REGIONS 4")
	require.NoError(t, err)
	tid := tableID(t, db, "t")

	// Only our operators move leaders until the group is configured.
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-leader-scheduler", nil, nil))
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-hot-region-scheduler", nil, nil))
	var g apiAffinityGroup
	require.Eventually(t, func() bool {
		var err error
		if g, err = affinityGroup(t, c, tid); err != nil {
			return false
		}
		kinds := map[string]int{}
		for _, r := range g.Regions {
			if r.LeaderStoreID == 0 {
				return false
			}
			kinds[r.Kind]++
		}
		return kinds["index"] >= 4 && kinds["row"] >= 4
	}, time.Minute, 100*time.Millisecond, "table %d's regions: %+v", tid, g)
	// Index regions led from one store, row regions from another (an
	// operator that timed out on the loaded machine is posted again).
	stores := storeIDs(t, c)
	rowStore, idxStore := stores[0], stores[1]
	require.Eventually(t, func() bool {
		var err error
		if g, err = affinityGroup(t, c, tid); err != nil {
			return false
		}
		placed := true
		for _, r := range g.Regions {
			to := rowStore
			if r.Kind == "index" {
				to = idxStore
			}
			if r.LeaderStoreID != to {
				placed = false
				_ = pdAPI(t, c, "POST", "operators", map[string]any{"name": "transfer-leader", "region_id": r.ID, "to_store_id": to}, nil)
			}
		}
		return placed
	}, 2*time.Minute, 200*time.Millisecond, "leaders not placed: %+v", g)
	require.False(t, g.CoLed)
	require.Equal(t, "pending", g.Phase)
	t.Logf("table %d: %d regions, index regions led from store %d, row regions from store %d", tid, g.RegionCount, idxStore, rowStore)

	// Balancing back on, then the table becomes an affinity group.
	require.NoError(t, pdAPI(t, c, "POST", "schedulers", map[string]string{"name": "balance-leader-scheduler"}, nil))
	require.NoError(t, pdAPI(t, c, "POST", "schedulers", map[string]string{"name": "balance-hot-region-scheduler"}, nil))
	start := time.Now()
	require.NoError(t, pdAPI(t, c, "POST", "affinity-groups", map[string]any{"table_ids": []int64{tid}}, nil))
	g = waitAffinityStable(t, c, tid, 2*time.Minute)
	stableAt := time.Now()
	t.Logf("group stable %v after it was configured: %d regions led from store %d, voters %v", time.Since(start).Round(time.Millisecond), g.RegionCount, g.LeaderStoreID, g.VoterStoreIDs)
	groupRegions := map[uint64]bool{}
	for _, r := range g.Regions {
		groupRegions[r.ID] = true
	}

	// Load: inserts (row + index entry) and index lookups; every poll of
	// the group counts whether it is co-led.
	var writes, reads, errs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var err error
				if i%2 == 0 {
					// Unique per worker and call, spread over the row regions.
					id := (i*4 + w) * 7919 % 1000000
					_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (?, ?, ?)", id, rng.IntN(1000000), "v")
					if err == nil {
						writes.Add(1)
					}
				} else {
					lo := rng.IntN(1000000)
					var n int
					err = db.QueryRowContext(ctx, "SELECT COUNT(v) FROM t USE INDEX (ik) WHERE k BETWEEN ? AND ?", lo, lo+5000).Scan(&n)
					if err == nil {
						reads.Add(1)
					}
				}
				cancel()
				if err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	polls, coLed := 0, 0
	var notCoLed []string
	deadline := time.Now().Add(load)
	for time.Now().Before(deadline) {
		if cur, err := affinityGroup(t, c, tid); err == nil {
			polls++
			if cur.CoLed {
				coLed++
			} else if len(notCoLed) < 10 {
				notCoLed = append(notCoLed, fmt.Sprintf("%v: %+v", time.Since(start).Round(time.Second), cur.Regions))
			}
			for _, r := range cur.Regions {
				groupRegions[r.ID] = true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	// No balance operator touched the group's regions once it was stable;
	// it ends stable.
	var hist []apiOperatorView
	require.NoError(t, pdAPI(t, c, "GET", "operators?history=1", nil, &hist))
	byDesc := map[string]int{}
	for _, op := range hist {
		byDesc[op.Desc+"/"+op.Status]++
		// Operators created before the group was pinned (balance-leader
		// ran while the cluster started) are not the filters' business.
		if groupRegions[op.RegionID] && op.Created.After(stableAt) {
			require.NotContains(t, []string{"balance-leader", "balance-region", "transfer-hot-write-leader"}, op.Desc,
				"a balance scheduler moved group region %d: %+v", op.RegionID, op)
		}
	}
	g = waitAffinityStable(t, c, tid, time.Minute)
	t.Logf("%v of load: %d inserts, %d index lookups, %d errors; group co-led in %d of %d polls (not: %v); operators: %v",
		load, writes.Load(), reads.Load(), errs.Load(), coLed, polls, notCoLed, byDesc)
	require.Positive(t, writes.Load())
	require.Positive(t, reads.Load())
	var cnt int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM t").Scan(&cnt))
	var idxCnt int
	require.NoError(t, db.QueryRow("SELECT COUNT(k) FROM t USE INDEX (ik) WHERE k >= 0").Scan(&idxCnt))
	require.Equal(t, cnt, idxCnt, "rows and index entries")
}

// affinityGroup reads table tid's affinity group from PD.
func affinityGroup(t *testing.T, c *localcluster.Cluster, tid int64) (apiAffinityGroup, error) {
	var g apiAffinityGroup
	err := pdAPI(t, c, "GET", fmt.Sprintf("affinity-groups/%d", tid), nil, &g)
	return g, err
}

// waitAffinityStable waits until table tid's group is stable and co-led.
func waitAffinityStable(t *testing.T, c *localcluster.Cluster, tid int64, d time.Duration) apiAffinityGroup {
	t.Helper()
	var g apiAffinityGroup
	require.Eventually(t, func() bool {
		var err error
		g, err = affinityGroup(t, c, tid)
		return err == nil && g.Phase == "stable" && g.CoLed && g.RegionCount > 0
	}, d, 200*time.Millisecond, "group of table %d: %+v", tid, g)
	return g
}

// tableID reads a table's id from the keys SHOW TABLE ... REGIONS shows
// (t_{id}_...).
func tableID(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	rows, err := db.Query("SHOW TABLE " + table + " REGIONS")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		var id int64
		if _, err := fmt.Sscanf(string(vals[1]), "t_%d_", &id); err == nil {
			return id
		}
	}
	require.FailNow(t, "no region key names table "+table)
	return 0
}

// storeIDs lists PD's store ids in order.
func storeIDs(t *testing.T, c *localcluster.Cluster) []uint64 {
	t.Helper()
	var st apiStores
	require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
	var ids []uint64
	for _, s := range st.Stores {
		ids = append(ids, s.Store.ID)
	}
	slices.Sort(ids)
	return ids
}
