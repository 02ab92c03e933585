package gc

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

// pebbleStore is a Store over a plain Pebble DB: one region led here,
// writes applied directly (no raft), the safe point raised before them as
// a replica's apply does.
type pebbleStore struct {
	db        *pebble.DB
	region    *metapb.Region
	mu        sync.Mutex
	writes    int // Write calls
	safePoint atomic.Uint64
}

func newPebbleStore(t testing.TB) *pebbleStore {
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem(), Logger: quietLogger{t}})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return &pebbleStore{db: db, region: &metapb.Region{Id: 1, Peers: []*metapb.Peer{{Id: 1, StoreId: 1}}}}
}

func (s *pebbleStore) Regions() []*metapb.Region { return []*metapb.Region{s.region} }
func (s *pebbleStore) IsLeader(uint64) bool      { return true }
func (s *pebbleStore) Snapshot() Snapshot        { return s.db.NewSnapshot() }
func (s *pebbleStore) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return s.region, nil, ctx.Err()
}

func (s *pebbleStore) Write(ctx context.Context, region *metapb.Region, reqs []*raft_cmdpb.Request, safePoint uint64) (*errorpb.Error, error) {
	s.mu.Lock()
	s.writes++
	s.mu.Unlock()
	s.RaiseSafePoint(safePoint)
	return nil, s.apply(reqs)
}

func (s *pebbleStore) SafePoint() uint64 { return s.safePoint.Load() }

func (s *pebbleStore) RaiseSafePoint(sp uint64) {
	for cur := s.safePoint.Load(); sp > cur && !s.safePoint.CompareAndSwap(cur, sp); cur = s.safePoint.Load() {
	}
}

func (s *pebbleStore) apply(reqs []*raft_cmdpb.Request) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := mvcc.ApplyWrites(b, reqs); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

type quietLogger struct{ t testing.TB }

func (quietLogger) Infof(string, ...any)           {}
func (l quietLogger) Errorf(f string, args ...any) { l.t.Logf(f, args...) }
func (l quietLogger) Fatalf(f string, args ...any) { l.t.Fatalf(f, args...) }

// record writes one committed record of key with mvcc.Txn, as commit and
// rollback do.
func (s *pebbleStore) record(t testing.TB, key string, kind mvcc.WriteKind, startTS, commitTS uint64, value string) {
	var tx mvcc.Txn
	w := &mvcc.Write{Kind: kind, StartTS: startTS}
	if kind == mvcc.WritePut {
		if mvcc.IsShortValue([]byte(value)) {
			w.ShortValue, w.HasShortValue = []byte(value), true
		} else {
			tx.PutValue([]byte(key), startTS, []byte(value))
		}
	}
	tx.PutWrite([]byte(key), commitTS, w)
	require.NoError(t, s.apply(tx.Writes()))
}

// read returns what a snapshot read of key at ts sees ("<none>" if
// nothing).
func (s *pebbleStore) read(t testing.TB, key string, ts uint64) string {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	r := mvcc.NewTxnReader(snap)
	defer r.Close()
	v, found, err := r.Get([]byte(key), ts)
	require.NoError(t, err)
	if !found {
		return "<none>"
	}
	return string(v)
}

// dump lists the WRITE and DEFAULT records.
func (s *pebbleStore) dump(t testing.TB) string {
	var b strings.Builder
	for _, cf := range []raft_cmdpb.CF{raft_cmdpb.CF_WRITE, raft_cmdpb.CF_DEFAULT} {
		lo, hi := keys.CFBounds(cf, nil, nil)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		require.NoError(t, err)
		for valid := it.First(); valid; valid = it.Next() {
			k, ts, err := keys.DecodeVersioned(it.Key()[1:], nil)
			require.NoError(t, err)
			if cf == raft_cmdpb.CF_DEFAULT {
				fmt.Fprintf(&b, "default %s@%d len=%d\n", k, ts, len(it.Value()))
				continue
			}
			w, err := mvcc.DecodeWrite(it.Value())
			require.NoError(t, err)
			fmt.Fprintf(&b, "write %s@%d %s start=%d", k, ts, w.Kind, w.StartTS)
			if w.HasShortValue {
				fmt.Fprintf(&b, " v=%s", w.ShortValue)
			}
			b.WriteByte('\n')
		}
		require.NoError(t, it.Close())
	}
	return b.String()
}

// history returns the user keys and every commit_ts in WRITE.
func (s *pebbleStore) history(t testing.TB) (userKeys []string, tss []uint64) {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, nil, nil)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(t, err)
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		k, ts, err := keys.DecodeVersioned(it.Key()[1:], nil)
		require.NoError(t, err)
		if len(userKeys) == 0 || userKeys[len(userKeys)-1] != string(k) {
			userKeys = append(userKeys, string(k))
		}
		tss = append(tss, ts)
	}
	slices.Sort(tss)
	return userKeys, slices.Compact(tss)
}

type probe struct {
	key string
	ts  uint64
}

// probesAtOrAbove lists every key at sp, at every commit_ts above it and
// at the latest.
func (s *pebbleStore) probesAtOrAbove(t testing.TB, sp uint64) []probe {
	userKeys, tss := s.history(t)
	at := []uint64{sp, math.MaxUint64}
	for _, ts := range tss {
		if ts >= sp {
			at = append(at, ts)
		}
	}
	var out []probe
	for _, k := range userKeys {
		for _, ts := range at {
			out = append(out, probe{k, ts})
		}
	}
	return out
}

// reads returns what each probe reads.
func (s *pebbleStore) reads(t testing.TB, ps []probe) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[fmt.Sprintf("%s@%d", p.key, p.ts)] = s.read(t, p.key, p.ts)
	}
	return out
}

// checkCollected asserts the GC postcondition: per key, at most one
// record at or below sp remains, and it is a Put.
func (s *pebbleStore) checkCollected(t testing.TB, sp uint64) {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, nil, nil)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(t, err)
	defer it.Close()
	below := map[string]int{}
	for valid := it.First(); valid; valid = it.Next() {
		k, ts, err := keys.DecodeVersioned(it.Key()[1:], nil)
		require.NoError(t, err)
		if ts > sp {
			continue
		}
		w, err := mvcc.DecodeWrite(it.Value())
		require.NoError(t, err)
		require.Equal(t, mvcc.WritePut, w.Kind, "%s@%d below the safe point is not a Put", k, ts)
		below[string(k)]++
		require.Equal(t, 1, below[string(k)], "%s keeps more than one version below the safe point", k)
	}
}

func newTestWorker(s *pebbleStore, cfg Config) *Worker {
	return NewWorker(s, 1, nil, txn.NewLatches(64), cfg)
}

func argUint(t *testing.T, d *datadriven.TestData, name string) uint64 {
	var s string
	d.ScanArgs(t, name, &s)
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return n
}

// TestGCDataDriven runs testdata/*: histories written with mvcc, GC at a
// safe point, and what is left. Every gc command also checks that each
// read at or above the safe point sees what it saw before.
func TestGCDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newPebbleStore(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "put", "delete", "lock", "rollback":
				var key string
				d.ScanArgs(t, "k", &key)
				start := argUint(t, d, "start")
				commit := start
				if d.HasArg("commit") {
					commit = argUint(t, d, "commit")
				}
				value := ""
				if d.HasArg("v") {
					d.ScanArgs(t, "v", &value)
				}
				if d.HasArg("long") {
					value = strings.Repeat("x", mvcc.ShortValueMaxLen+1)
				}
				kind := map[string]mvcc.WriteKind{"put": mvcc.WritePut, "delete": mvcc.WriteDelete, "lock": mvcc.WriteLock, "rollback": mvcc.WriteRollback}[d.Cmd]
				s.record(t, key, kind, start, commit, value)
				return ""
			case "gc":
				sp := argUint(t, d, "safe_point")
				cfg := Config{BatchPause: 1}
				if d.HasArg("batch_keys") {
					cfg.BatchKeys = int(argUint(t, d, "batch_keys"))
				}
				if d.HasArg("max_requests") {
					cfg.MaxBatchRequests = int(argUint(t, d, "max_requests"))
				}
				probes := s.probesAtOrAbove(t, sp)
				before := s.reads(t, probes)
				s.writes = 0
				n, err := newTestWorker(s, cfg).Region(context.Background(), s.region, sp)
				require.NoError(t, err)
				require.Equal(t, before, s.reads(t, probes), "a read at or above the safe point changed")
				s.checkCollected(t, sp)
				return fmt.Sprintf("deleted %d in %d writes\n%s", n, s.writes, s.dump(t))
			case "dump":
				return s.dump(t)
			case "read":
				var key string
				d.ScanArgs(t, "k", &key)
				return s.read(t, key, argUint(t, d, "ts")) + "\n"
			}
			return "unknown command " + d.Cmd
		})
	})
}

// TestGCRandomHistories: random histories of puts (short and long),
// deletes, lock and rollback records over a few keys, collected at a random
// safe point in small batches: reads at or above the safe point are
// unchanged and nothing but one Put per key is left at or below it.
func TestGCRandomHistories(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 200 {
		s := newPebbleStore(t)
		ts := uint64(1)
		for range 1 + rng.IntN(60) {
			key := fmt.Sprintf("k%d", rng.IntN(6))
			start := ts
			ts += 1 + uint64(rng.IntN(3))
			commit := ts
			ts++
			switch rng.IntN(6) {
			case 0, 1:
				s.record(t, key, mvcc.WritePut, start, commit, fmt.Sprintf("v%d", start))
			case 2:
				s.record(t, key, mvcc.WritePut, start, commit, strings.Repeat("L", mvcc.ShortValueMaxLen+1+int(start%7)))
			case 3:
				s.record(t, key, mvcc.WriteDelete, start, commit, "")
			case 4:
				s.record(t, key, mvcc.WriteLock, start, commit, "")
			case 5:
				s.record(t, key, mvcc.WriteRollback, start, start, "")
			}
		}
		sp := uint64(rng.IntN(int(ts) + 2))
		probes := s.probesAtOrAbove(t, sp)
		before := s.reads(t, probes)
		w := newTestWorker(s, Config{BatchKeys: 1 + rng.IntN(3), MaxBatchRequests: 1 + rng.IntN(4), BatchPause: 1})
		deleted, err := w.Region(context.Background(), s.region, sp)
		require.NoError(t, err)
		require.Equal(t, before, s.reads(t, probes), "iteration %d sp %d:\n%s", iter, sp, s.dump(t))
		if deleted > 0 {
			require.Equal(t, sp, w.SafePoint(), "the deletes carry the safe point they collected under")
		}
		s.checkCollected(t, sp)
		// A second pass finds nothing.
		n, err := w.Region(context.Background(), s.region, sp)
		require.NoError(t, err)
		require.Zero(t, n)
	}
}

// TestCheckRead: reads below the store's known safe point get GCTooEarly.
func TestCheckRead(t *testing.T) {
	var nilWorker *Worker
	require.Nil(t, nilWorker.CheckRead(1))
	s := newPebbleStore(t)
	w := newTestWorker(s, Config{})
	require.Nil(t, w.CheckRead(5))
	s.RaiseSafePoint(10)
	s.RaiseSafePoint(7) // never lowered
	require.Nil(t, w.CheckRead(10))
	require.Nil(t, w.CheckRead(math.MaxUint64))
	ke := w.CheckRead(9)
	require.NotNil(t, ke)
	require.Equal(t, uint64(9), ke.GcTooEarly.StartTs)
	require.Equal(t, uint64(10), ke.GcTooEarly.SafePoint)
	require.True(t, bytes.Contains([]byte(ke.Abort), []byte("GC life time is shorter than transaction duration")))
}
