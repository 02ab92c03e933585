package tests

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pauseFor is how long a paused process stays stopped: many election
// timeouts (the cluster ticks every 50 ms), the 1 s schema lease twice over
// and the 3 s lock TTL.
const pauseFor = 4 * time.Second

// TestPausedLeaderStoreNoStaleRead: the store leading a row's region is
// SIGSTOPped (a GC pause, a stalled VM: its connections stay open, its
// monotonic clock runs) for longer than its lease while one client writes
// increasing values to the row and others read it. The other two stores
// elect a leader (writes the SQL node sent to the paused store wait for
// their RPC timeout: failover from a paused store is the tail-latency
// work's); after SIGCONT the old leader must not answer from its lease: no
// read ever returns a value older than one acknowledged before the read
// began (per-key linearizability), and writes go on.
func TestPausedLeaderStoreNoStaleRead(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE pz")
	mustExec(t, db, "CREATE TABLE pz.t (id INT PRIMARY KEY, v INT NOT NULL)")
	mustExec(t, db, "INSERT INTO pz.t VALUES (1, 0)")
	var leader uint64
	require.Eventually(t, func() bool {
		id, err := leaderStoreOf(db, "pz.t")
		leader = id
		return err == nil && id != 0
	}, 30*time.Second, 50*time.Millisecond)
	paused := storeProc(t, c, leader)

	var acked atomic.Int64 // the largest value whose UPDATE was acknowledged
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ackedDuringPause atomic.Int64
	var pausing atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := int64(1); ctx.Err() == nil; n++ {
			if _, err := db.ExecContext(ctx, "UPDATE pz.t SET v = ? WHERE id = 1", n); err == nil {
				acked.Store(n)
				if pausing.Load() {
					ackedDuringPause.Add(1)
				}
			}
		}
	}()
	type stale struct{ got, acked int64 }
	var mu sync.Mutex
	var stales []stale
	var reads atomic.Int64
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				before := acked.Load()
				var v int64
				if err := db.QueryRowContext(ctx, "SELECT v FROM pz.t WHERE id = 1").Scan(&v); err != nil {
					continue
				}
				reads.Add(1)
				if v < before {
					mu.Lock()
					stales = append(stales, stale{v, before})
					mu.Unlock()
				}
			}
		}()
	}
	waitAcked := func(n int64, within time.Duration) {
		t.Helper()
		target := acked.Load() + n
		require.Eventually(t, func() bool { return acked.Load() >= target }, within, 10*time.Millisecond,
			"%d more writes acknowledged", n)
	}
	waitAcked(20, 30*time.Second)
	pausing.Store(true)
	require.NoError(t, paused.Pause())
	time.Sleep(pauseFor) // the fault's length, not a wait for an event
	require.NoError(t, paused.Resume())
	pausing.Store(false)
	waitAcked(50, 30*time.Second)
	stop()
	wg.Wait()
	t.Logf("%d writes acknowledged (%d while store %d was paused for %v), %d reads", acked.Load(), ackedDuringPause.Load(), leader, pauseFor, reads.Load())
	require.Empty(t, stales, "reads older than an acknowledged write (got, acked before the read)")
}

// TestPausedSQLNodeMidTransaction: SQL node 1 runs transfers between
// accounts and a long read-only transaction when it is SIGSTOPped past its
// schema lease and its locks' TTL; node 0 keeps transferring meanwhile and
// resolves node 1's locks. After SIGCONT node 1's read-only transaction
// still reads its snapshot (the same rows as before the pause), its
// in-flight transfers either commit or fail with an error (never both),
// and every account ends at its start balance plus exactly the
// acknowledged transfers (plus a subset of those whose outcome was
// unknown, 8110).
func TestPausedSQLNodeMidTransaction(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	db0, db1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	const accounts = 8
	mustExec(t, db0, "CREATE DATABASE pb")
	mustExec(t, db0, "CREATE TABLE pb.a (id INT PRIMARY KEY, bal INT NOT NULL)")
	for i := 0; i < accounts; i++ {
		mustExec(t, db0, fmt.Sprintf("INSERT INTO pb.a VALUES (%d, 100)", i))
	}
	reader, err := db1.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	require.NoError(t, err)
	before := balances(t, reader)

	var mu sync.Mutex
	var acked, unknown []bankTransfer
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var n0 atomic.Int64
	run := func(db *sql.DB, seed int, count *atomic.Int64) {
		defer wg.Done()
		for i := seed; ctx.Err() == nil; i++ {
			tr := bankTransfer{from: i % accounts, to: (i*7 + 3) % accounts, amount: 1}
			if tr.from == tr.to {
				continue
			}
			switch err := transfer(db, "pessimistic", "pb.a", tr.from, tr.to, tr.amount); mysqlErrCode(err) {
			case 0:
				mu.Lock()
				acked = append(acked, tr)
				mu.Unlock()
				if count != nil {
					count.Add(1)
				}
			case 8110: // the answer was lost: it may have committed
				mu.Lock()
				unknown = append(unknown, tr)
				mu.Unlock()
			}
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(2)
		go run(db0, w*11, &n0)
		go run(db1, w*13+5, nil)
	}
	waitCount := func(n int64) {
		t.Helper()
		target := n0.Load() + n
		require.Eventually(t, func() bool { return n0.Load() >= target }, 60*time.Second, 10*time.Millisecond,
			"node 0 commits %d more transfers", n)
	}
	waitCount(10)
	require.NoError(t, c.SQL[1].Pause())
	during := n0.Load()
	time.Sleep(pauseFor) // the fault's length, not a wait for an event
	during = n0.Load() - during
	require.NoError(t, c.SQL[1].Resume())
	waitCount(10)
	stop()
	wg.Wait()

	require.Equal(t, before, balances(t, reader), "the read-only transaction still reads its snapshot")
	require.NoError(t, reader.Commit())

	expect := make([]int64, accounts)
	for i := range expect {
		expect[i] = 100
	}
	for _, tr := range acked {
		expect[tr.from] -= tr.amount
		expect[tr.to] += tr.amount
	}
	t.Logf("%d transfers acknowledged (%d by node 0 while node 1 was paused for %v), %d undetermined", len(acked), during, pauseFor, len(unknown))
	got := balances(t, db0)
	require.True(t, explainedBy(expect, got, unknown), "balances %v are the start plus the acknowledged transfers %v (and some of %d undetermined)", got, expect, len(unknown))
}

type querier interface {
	Query(q string, args ...any) (*sql.Rows, error)
}

func balances(t *testing.T, q querier) []int64 {
	t.Helper()
	rows, err := q.Query("SELECT bal FROM pb.a ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var b int64
		require.NoError(t, rows.Scan(&b))
		out = append(out, b)
	}
	require.NoError(t, rows.Err())
	return out
}
