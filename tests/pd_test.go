package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

// PD scheduling against real binaries (issue 10): replicas rebuilt after a
// store is Down, a region moved by API operators, with a write load whose
// acknowledged rows must all survive.

// pdAPI calls PD's HTTP API; out (if not nil) receives the JSON answer.
func pdAPI(t *testing.T, c *localcluster.Cluster, method, path string, body, out any) error {
	t.Helper()
	return c.PDAPI(method, path, body, out)
}

type apiRegions struct {
	Count   int `json:"count"`
	Regions []struct {
		ID    uint64 `json:"id"`
		Peers []struct {
			ID       uint64 `json:"id"`
			StoreID  uint64 `json:"store_id"`
			RoleName string `json:"role_name"`
		} `json:"peers"`
		Leader *struct {
			StoreID uint64 `json:"store_id"`
		} `json:"leader"`
		DownPeers    []json.RawMessage `json:"down_peers"`
		PendingPeers []json.RawMessage `json:"pending_peers"`
	} `json:"regions"`
}

type apiStores struct {
	Stores []struct {
		Store struct {
			ID        uint64 `json:"id"`
			Address   string `json:"address"`
			StateName string `json:"state_name"`
		} `json:"store"`
		Status struct {
			RegionCount int `json:"region_count"`
			LeaderCount int `json:"leader_count"`
		} `json:"status"`
	} `json:"stores"`
}

// writer inserts rows with increasing ids until stopped and remembers the
// acknowledged ones and the longest gap between two acknowledgements.
type writer struct {
	db      *sql.DB
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	acked   []int
	lastAck time.Time
	maxGap  time.Duration
	errs    atomic.Int64
}

func startWriter(db *sql.DB) *writer {
	w := &writer{db: db, stop: make(chan struct{}), done: make(chan struct{}), lastAck: time.Now()}
	go func() {
		defer close(w.done)
		for i := 1; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			// Spread over [0, 1e6) (7919 is prime to 1e6: ids are unique),
			// so a table split by createTable gets writes in every region.
			id := i * 7919 % 1000000
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", id, fmt.Sprintf("v%d", id))
			cancel()
			if err != nil {
				w.errs.Add(1)
				continue // the id is skipped: it may or may not have committed
			}
			now := time.Now()
			w.mu.Lock()
			w.acked = append(w.acked, id)
			w.maxGap = max(w.maxGap, now.Sub(w.lastAck))
			w.lastAck = now
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) finish() ([]int, time.Duration) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.maxGap
}

// requireRowsPresent reads every acknowledged row back.
func requireRowsPresent(t *testing.T, db *sql.DB, acked []int) {
	t.Helper()
	got := map[int]string{}
	rows, err := db.Query("SELECT id, v FROM t")
	require.NoError(t, err)
	for rows.Next() {
		var id int
		var v string
		require.NoError(t, rows.Scan(&id, &v))
		got[id] = v
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	for _, id := range acked {
		require.Equal(t, fmt.Sprintf("v%d", id), got[id], "acknowledged row %d", id)
	}
}

// healthy reports whether every region has exactly 3 voters, all on the
// given live stores, with no learner, down or pending peer.
func healthy(rs apiRegions, live map[uint64]bool) bool {
	if rs.Count == 0 {
		return false
	}
	for _, r := range rs.Regions {
		if len(r.Peers) != 3 || len(r.DownPeers) > 0 || len(r.PendingPeers) > 0 || r.Leader == nil {
			return false
		}
		for _, p := range r.Peers {
			if p.RoleName != "Voter" || !live[p.StoreID] {
				return false
			}
		}
	}
	return true
}

// createTable creates d.t (id INT PRIMARY KEY, v VARCHAR(20)), split into
// regions regions over ids [0, 1e6) when regions > 1, waits until PD knows
// at least that many regions and a leader of each, and returns a pool on
// database d.
func createTable(t *testing.T, c *localcluster.Cluster, regions int) *sql.DB {
	t.Helper()
	db := openDB(t, c, 0, "")
	_, err := db.Exec("CREATE DATABASE d")
	require.NoError(t, err)
	db = openDB(t, c, 0, "d")
	_, err = db.Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
	require.NoError(t, err)
	if regions > 1 {
		_, err = db.Exec(fmt.Sprintf("SPLIT TABLE t BETWEEN (0) AND (1000000) REGIONS %d", regions))
		require.NoError(t, err)
	}
	var rs apiRegions
	require.Eventually(t, func() bool {
		if pdAPI(t, c, "GET", "regions", nil, &rs) != nil || rs.Count < regions {
			return false
		}
		for _, r := range rs.Regions {
			if r.Leader == nil {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "regions: %d", rs.Count)
	return db
}

// regionsWithLeader waits until PD knows the first region's leader.
func regionsWithLeader(t *testing.T, c *localcluster.Cluster) apiRegions {
	t.Helper()
	var rs apiRegions
	require.Eventually(t, func() bool {
		return pdAPI(t, c, "GET", "regions", nil, &rs) == nil && rs.Count > 0 && rs.Regions[0].Leader != nil
	}, time.Minute, 100*time.Millisecond)
	return rs
}

// waitHealthy polls PD until every region is healthy on the live stores
// and returns the regions; it fails with the last answer after d.
func waitHealthy(t *testing.T, c *localcluster.Cluster, live map[uint64]bool, d time.Duration) apiRegions {
	t.Helper()
	var rs apiRegions
	deadline := time.Now().Add(d)
	for {
		rs = apiRegions{}
		if pdAPI(t, c, "GET", "regions", nil, &rs) == nil && healthy(rs, live) {
			return rs
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "regions not healthy", "live stores %v, unhealthy regions %s", live, regionsString(rs, live))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitStoresUp waits until PD lists n stores, all Up, and returns the list: a
// cluster test that moves replicas between its stores must not start while
// one of them is still registering.
func waitStoresUp(t *testing.T, c *localcluster.Cluster, n int) apiStores {
	t.Helper()
	var st apiStores
	deadline := time.Now().Add(time.Minute)
	for {
		up := 0
		if pdAPI(t, c, "GET", "stores", nil, &st) == nil {
			for _, s := range st.Stores {
				if s.Store.StateName == "Up" {
					up++
				}
			}
		}
		if up == n {
			return st
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "stores not up", "want %d stores Up, PD lists %+v", n, st.Stores)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// regionsString shows the regions that are not healthy on live (all of
// them when live is nil).
func regionsString(rs apiRegions, live ...map[uint64]bool) string {
	if len(live) > 0 {
		var bad apiRegions
		for _, r := range rs.Regions {
			one := apiRegions{Count: 1}
			one.Regions = append(one.Regions, r)
			if !healthy(one, live[0]) {
				bad.Regions = append(bad.Regions, r)
			}
		}
		bad.Count = len(bad.Regions)
		rs = bad
	}
	b, _ := json.Marshal(rs)
	return string(b)
}

// startPDCluster lays out a cluster with stores stores and one SQL node.
// pdArgs nil means a faster scheduler than PD's defaults (every 200 ms, 60
// peers per store and minute); empty means PD's defaults.
func startPDCluster(t *testing.T, stores int, pdArgs []string) *localcluster.Cluster {
	t.Helper()
	if pdArgs == nil {
		pdArgs = []string{"--schedule-interval", "200ms", "--store-limit", "60"}
	}
	c, err := localcluster.New(localcluster.Config{
		BinDir: binDir, DataDir: t.TempDir(), Stores: stores, SQLNodes: 1, FreePorts: true,
		StoreArgs: []string{"--raft-tick", "50ms", "--heartbeat-interval", "200ms"},
		PDArgs:    pdArgs,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(16<<10))
		}
	})
	return c
}

// A store killed for good is marked Down after max-store-down-time (set to
// 20 s through the API) and every region is back to 3 healthy replicas on
// the live stores; no acknowledged write is lost.
func TestStoreDownReplicasRebuilt(t *testing.T) {
	c := startPDCluster(t, 4, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	require.NoError(t, pdAPI(t, c, "POST", "config", map[string]any{"max-store-down-time": "20s"}, nil))
	var cfg struct {
		Schedule struct {
			MaxStoreDownTime string `json:"max-store-down-time"`
		} `json:"schedule"`
	}
	require.NoError(t, pdAPI(t, c, "GET", "config", nil, &cfg))
	require.Equal(t, "20s", cfg.Schedule.MaxStoreDownTime)

	db := createTable(t, c, 24)
	w := startWriter(db)

	// Kill the store leading the region (the worst case: an election
	// first, then the repair).
	rs := regionsWithLeader(t, c)
	victim := rs.Regions[0].Leader.StoreID
	var st apiStores
	require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
	live := map[uint64]bool{}
	victimIdx := -1
	for i, s := range st.Stores {
		if s.Store.ID == victim {
			victimIdx = i
		} else {
			live[s.Store.ID] = true
		}
	}
	require.Len(t, live, 3)
	// The API lists stores by id; the processes were registered in start
	// order, so find the process by address.
	var proc *localcluster.Proc
	for _, p := range c.Stores {
		for i, a := range p.Args {
			if a == "--addr" && p.Args[i+1] == st.Stores[victimIdx].Store.Address {
				proc = p
			}
		}
	}
	require.NotNil(t, proc)
	killed := time.Now()
	require.NoError(t, proc.Kill())
	t.Logf("killed store %d", victim)

	var downAt time.Time
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var s struct {
			Store struct {
				StateName string `json:"state_name"`
			} `json:"store"`
		}
		if downAt.IsZero() && pdAPI(t, c, "GET", fmt.Sprintf("store/%d", victim), nil, &s) == nil && s.Store.StateName == "Down" {
			downAt = time.Now()
			t.Logf("store %d Down %.1fs after the kill", victim, downAt.Sub(killed).Seconds())
		}
		var rs apiRegions
		if !downAt.IsZero() && pdAPI(t, c, "GET", "regions", nil, &rs) == nil && healthy(rs, live) {
			t.Logf("every region has 3 healthy replicas %.1fs after Down (%.1fs after the kill)",
				time.Since(downAt).Seconds(), time.Since(killed).Seconds())
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, pdAPI(t, c, "GET", "regions", nil, &rs))
	require.True(t, healthy(rs, live), "regions not repaired within 3 minutes: %s", regionsString(rs, live))
	// And it stays so (no flapping report, no operator undoing it).
	for range 10 {
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, pdAPI(t, c, "GET", "regions", nil, &rs))
		require.True(t, healthy(rs, live), "regions unhealthy again: %s", regionsString(rs, live))
	}

	acked, gap := w.finish()
	t.Logf("%d writes acknowledged, %d failed, longest gap between acknowledgements %v", len(acked), w.errs.Load(), gap)
	require.NotEmpty(t, acked)
	require.Less(t, gap, 15*time.Second, "writes stopped longer than a leader election")
	requireRowsPresent(t, db, acked)
}

// Operators posted to the API move a region's replica to a 4th store
// started later: transfer-peer (learner, snapshot, promotion, removal of
// the old replica), then transfer-leader; the moved replica leads and
// serves the data. (add-peer alone would leave 4 voters, which the
// replica checker trims, as PD's does.)
func TestAPIOperatorsMoveReplica(t *testing.T) {
	c := startPDCluster(t, 4, nil)
	late := c.Stores[3]
	for _, p := range c.Procs() {
		if p != late {
			require.NoError(t, p.Start())
		}
	}
	waitReady(t, c)
	db := createTable(t, c, 1)
	w := startWriter(db)
	// Only the posted operators move things in this test.
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-region-scheduler", nil, nil))
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-leader-scheduler", nil, nil))
	require.NoError(t, late.Start())

	st := waitStoresUp(t, c, 4)
	newStore := st.Stores[3].Store.ID
	var rs apiRegions
	require.NoError(t, pdAPI(t, c, "GET", "regions", nil, &rs))
	region := rs.Regions[0]
	op := func(body map[string]any) {
		t.Helper()
		start := time.Now()
		require.NoError(t, pdAPI(t, c, "POST", "operators", body, nil))
		require.Eventually(t, func() bool {
			return pdAPI(t, c, "GET", fmt.Sprintf("operators/%d", region.ID), nil, nil) != nil // finished
		}, 2*time.Minute, 100*time.Millisecond, "operator %v", body)
		var hist []struct {
			RegionID uint64 `json:"region_id"`
			Status   string `json:"status"`
			Desc     string `json:"desc"`
		}
		require.NoError(t, pdAPI(t, c, "GET", "operators?history=1", nil, &hist))
		status := ""
		for _, h := range hist {
			if h.RegionID == region.ID && h.Desc == "admin-"+body["name"].(string) {
				status = h.Status
			}
		}
		require.Equal(t, "SUCCESS", status, "operator %v: %+v", body, hist)
		t.Logf("%v done in %v", body["name"], time.Since(start))
	}
	old := region.Peers[0].StoreID
	op(map[string]any{"name": "transfer-peer", "region_id": region.ID, "from_store_id": old, "to_store_id": newStore})
	op(map[string]any{"name": "transfer-leader", "region_id": region.ID, "to_store_id": newStore})
	require.NoError(t, pdAPI(t, c, "GET", fmt.Sprintf("region/id/%d", region.ID), nil, &region))
	var stores []uint64
	for _, p := range region.Peers {
		stores = append(stores, p.StoreID)
		require.Equal(t, "Voter", p.RoleName)
	}
	require.Len(t, stores, 3)
	require.Contains(t, stores, newStore)
	require.NotContains(t, stores, old)
	require.Equal(t, newStore, region.Leader.StoreID)
	// The moved region splits on PD's request, its new leader running it.
	op(map[string]any{"name": "split-region", "region_id": region.ID, "keys": []string{"7480"}})
	// The operator ends when PD sees the parent's new version; the new
	// region reaches PD separately (the store's ReportBatchSplit after the
	// apply, or its leader's first heartbeat), a few milliseconds later.
	var after apiRegions
	require.Eventually(t, func() bool {
		return pdAPI(t, c, "GET", "regions", nil, &after) == nil && after.Count == rs.Count+1
	}, 10*time.Second, 10*time.Millisecond, "PD lists both halves of the split")

	acked, gap := w.finish()
	t.Logf("%d writes acknowledged, %d failed, longest gap %v", len(acked), w.errs.Load(), gap)
	requireRowsPresent(t, db, acked)
}

// DELETE /store on a live store holding the region (and its leadership)
// makes it Offline; its replica is rebuilt on the spare store, the
// leadership moves first, and the store ends Tombstone, with no failed
// statement in a concurrent write load.
func TestDeleteStoreDrainsToTombstone(t *testing.T) {
	c := startPDCluster(t, 4, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	db := createTable(t, c, 24)
	rs := regionsWithLeader(t, c)
	victim := rs.Regions[0].Leader.StoreID
	w := startWriter(db)
	start := time.Now()
	require.NoError(t, pdAPI(t, c, "DELETE", fmt.Sprintf("store/%d", victim), nil, nil))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var s struct {
			Store struct {
				StateName string `json:"state_name"`
			} `json:"store"`
		}
		err := pdAPI(t, c, "GET", fmt.Sprintf("store/%d", victim), nil, &s)
		if err == nil && s.Store.StateName == "Tombstone" {
			break
		}
		if time.Now().After(deadline) {
			var rs apiRegions
			_ = pdAPI(t, c, "GET", "regions", nil, &rs)
			require.FailNow(t, "store not drained", "store %d: %+v (err %v); regions %s", victim, s, err, regionsString(rs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("store %d Tombstone %.1fs after DELETE", victim, time.Since(start).Seconds())
	var st apiStores
	require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
	live := map[uint64]bool{}
	for _, s := range st.Stores {
		require.NotEqual(t, victim, s.Store.ID, "a Tombstone store is not listed")
		live[s.Store.ID] = true
	}
	waitHealthy(t, c, live, time.Minute)
	acked, gap := w.finish()
	t.Logf("%d writes acknowledged, %d failed, longest gap %v", len(acked), w.errs.Load(), gap)
	require.Zero(t, w.errs.Load(), "statements failed during the drain")
	requireRowsPresent(t, db, acked)
}

// A 4th store started by hand on a 3-store cluster whose table was split
// into 24 regions (SPLIT TABLE) gets at least half of its fair share of
// replicas within 3 minutes (PD's default schedule interval and store limit), and leaders end up on all 4 stores; writes
// keep succeeding throughout and none acknowledged is lost.
func TestScaleOutBalances(t *testing.T) {
	c := startPDCluster(t, 4, []string{}) // PD's defaults: every 1 s, 15 peers per store and minute
	late := c.Stores[3]
	for _, p := range c.Procs() {
		if p != late {
			require.NoError(t, p.Start())
		}
	}
	waitReady(t, c)
	db := createTable(t, c, 24)

	w := startWriter(db)
	start := time.Now()
	require.NoError(t, late.Start())
	st := waitStoresUp(t, c, 4)
	newStore := st.Stores[3].Store.ID
	var halfAt time.Time
	ok := false
	for time.Since(start) < 3*time.Minute {
		require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
		total, leadersOn := 0, 0
		var mine int
		for _, s := range st.Stores {
			total += s.Status.RegionCount
			if s.Status.LeaderCount > 0 {
				leadersOn++
			}
			if s.Store.ID == newStore {
				mine = s.Status.RegionCount
			}
		}
		fair := total / 4
		if halfAt.IsZero() && mine*2 >= fair && fair > 0 {
			halfAt = time.Now()
			t.Logf("store %d holds %d replicas (fair share %d) %.1fs after it started", newStore, mine, fair, time.Since(start).Seconds())
		}
		if !halfAt.IsZero() && leadersOn == 4 {
			t.Logf("leaders on all 4 stores %.1fs after it started", time.Since(start).Seconds())
			ok = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.True(t, ok, "the new store did not get half its share and leaders within 3 minutes")

	// Then it converges: replicas and leaders within a small spread, and no
	// more operators once there (no oscillation).
	spread := func() (replicas, leaders int) {
		require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
		minR, maxR, minL, maxL := 1<<30, 0, 1<<30, 0
		for _, s := range st.Stores {
			minR, maxR = min(minR, s.Status.RegionCount), max(maxR, s.Status.RegionCount)
			minL, maxL = min(minL, s.Status.LeaderCount), max(maxL, s.Status.LeaderCount)
		}
		return maxR - minR, maxL - minL
	}
	// Converged: no operator running and none created for 5 s.
	balanced := false
	lastHist, quietSince := -1, time.Now()
	for time.Since(start) < 4*time.Minute {
		var ops, hist []json.RawMessage
		if pdAPI(t, c, "GET", "operators", nil, &ops) == nil && pdAPI(t, c, "GET", "operators?history=1", nil, &hist) == nil {
			if len(ops) > 0 || len(hist) != lastHist {
				lastHist, quietSince = len(hist), time.Now()
			} else if time.Since(quietSince) >= 5*time.Second {
				balanced = true
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.True(t, balanced, "scheduling did not settle within 4 minutes")
	r, l := spread()
	t.Logf("settled %.1fs after the store started (replica spread %d, leader spread %d)", quietSince.Sub(start).Seconds(), r, l)
	for _, s := range st.Stores {
		t.Logf("store %d: %d replicas, %d leaders", s.Store.ID, s.Status.RegionCount, s.Status.LeaderCount)
	}
	require.LessOrEqual(t, r, 3, "replica spread")
	require.LessOrEqual(t, l, 2, "leader spread")
	acked, gap := w.finish()
	t.Logf("%d writes acknowledged, %d failed, longest gap %v", len(acked), w.errs.Load(), gap)
	requireRowsPresent(t, db, acked)
}

// metric returns the value of one series (`name` or `name{k="v",...}` as
// exposed, labels sorted by name) on a process's status port, read with
// expfmt (internal/promtext), or -1 if absent or unreachable.
func metric(t *testing.T, p *localcluster.Proc, name string) float64 {
	t.Helper()
	var addr string
	for i, a := range p.Args {
		if a == "--status-addr" {
			addr = p.Args[i+1]
		}
	}
	mfs, err := promtext.Fetch(context.Background(), addr)
	if err != nil {
		return -1
	}
	if v, ok := mfs.Series(false)[name]; ok {
		return v
	}
	return -1
}

// storeProc finds the process of store id (by its registered address).
func storeProc(t *testing.T, c *localcluster.Cluster, id uint64) *localcluster.Proc {
	t.Helper()
	var st apiStores
	require.NoError(t, pdAPI(t, c, "GET", "stores?state=all", nil, &st))
	for _, s := range st.Stores {
		if s.Store.ID != id {
			continue
		}
		for _, p := range c.Stores {
			for i, a := range p.Args {
				if a == "--addr" && p.Args[i+1] == s.Store.Address {
					return p
				}
			}
		}
	}
	require.FailNow(t, "no process for store", "%d", id)
	return nil
}

// A follower removed from its region while its store was down comes back
// with a stale peer: the peer is destroyed and never disrupts the region,
// and every acknowledged row is still there. With 3 stores PD rebuilds the
// third replica on that store under a new peer id (whose first message
// replaces the stale peer); with a spare 4th store, PD puts it there once
// the down store is Disconnected, and the stale peer learns it was removed
// from a tombstone message answering its vote requests.
func TestRemovedPeerDestroyedWhenBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stores int
	}{{"re-added", 3}, {"tombstone", 4}} {
		t.Run(tc.name, func(t *testing.T) { testRemovedPeer(t, tc.stores) })
	}
}

func testRemovedPeer(t *testing.T, stores int) {
	c := startPDCluster(t, stores, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	db := createTable(t, c, 1)
	w := startWriter(db)
	rs := regionsWithLeader(t, c)
	region := rs.Regions[0]
	var victim, oldPeer uint64
	for _, p := range region.Peers {
		if p.StoreID != region.Leader.StoreID {
			victim, oldPeer = p.StoreID, p.ID
		}
	}
	proc := storeProc(t, c, victim)
	require.NoError(t, proc.Kill())
	if stores == 4 {
		// Wait until PD no longer places replicas on the dead store.
		require.Eventually(t, func() bool {
			var s struct {
				Store struct {
					StateName string `json:"state_name"`
				} `json:"store"`
			}
			return pdAPI(t, c, "GET", fmt.Sprintf("store/%d", victim), nil, &s) == nil && s.Store.StateName == "Disconnected"
		}, time.Minute, 200*time.Millisecond)
	}
	require.NoError(t, pdAPI(t, c, "POST", "operators", map[string]any{"name": "remove-peer", "region_id": region.ID, "store_id": victim}, nil))
	require.Eventually(t, func() bool {
		var r struct {
			Peers []struct {
				StoreID uint64 `json:"store_id"`
			} `json:"peers"`
		}
		if pdAPI(t, c, "GET", fmt.Sprintf("region/id/%d", region.ID), nil, &r) != nil {
			return false
		}
		for _, p := range r.Peers {
			if p.StoreID == victim {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "peer on store %d not removed", victim)
	t.Logf("peer %d on store %d removed while the store was down", oldPeer, victim)
	live := map[uint64]bool{}
	var st apiStores
	require.NoError(t, pdAPI(t, c, "GET", "stores", nil, &st))
	for _, s := range st.Stores {
		live[s.Store.ID] = true
	}
	if stores == 4 {
		delete(live, victim)
		waitHealthy(t, c, live, 2*time.Minute)
	}
	require.NoError(t, proc.Start())
	require.Eventually(t, func() bool {
		return metric(t, proc, "strata_raftstore_peers_destroyed_total") >= 1
	}, 2*time.Minute, 200*time.Millisecond, "the stale peer was not destroyed")
	if data, err := os.ReadFile(proc.LogPath); err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, []byte("destroy")) {
				t.Logf("store %d: %s", victim, line)
			}
		}
	}
	rs = waitHealthy(t, c, live, 2*time.Minute)
	for _, p := range rs.Regions[0].Peers {
		if p.StoreID == victim {
			require.NotEqual(t, oldPeer, p.ID, "the replica on store %d is a new peer", victim)
		}
	}
	if stores == 4 {
		require.Eventually(t, func() bool {
			return metric(t, proc, `strata_raftstore_regions{type="peers"}`) == 0
		}, time.Minute, 200*time.Millisecond, "store %d keeps no peer", victim)
	}
	acked, gap := w.finish()
	t.Logf("%d writes acknowledged, %d failed, longest gap %v", len(acked), w.errs.Load(), gap)
	requireRowsPresent(t, db, acked)
}
