package kvclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/storetest"
)

var bg = context.Background()

func key(i int) string { return fmt.Sprintf("k%02d", i) }

// commit1PC writes muts (all in the region of the first) as kvclient/txn
// sends a one-region write: one prewrite with try_one_pc, committed at
// commitTS, sent again only when SendRequest says so. Key errors come back
// as keyError maps them.
func commit1PC(ctx context.Context, c *Client, muts []*kvrpcpb.Mutation, startTS, commitTS uint64) error {
	bo := newBackoffer(c.cfg.BackoffBudget)
	req := &kvrpcpb.PrewriteRequest{Mutations: muts, PrimaryLock: muts[0].GetKey(), StartVersion: startTS,
		LockTtl: 3000, TxnSize: uint64(len(muts)), MinCommitTs: commitTS, TryOnePc: true}
	for {
		r, err := c.locate(ctx, &bo, muts[0].GetKey())
		if err != nil {
			return err
		}
		req.Context = nil
		resp, retry, err := c.sendToRegion(ctx, &bo, r, &Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: req}})
		if err != nil {
			return err
		}
		if retry {
			continue
		}
		if kes := resp.GetPrewrite().GetErrors(); len(kes) > 0 {
			return fmt.Errorf("commit region %d: %w", r.ID(), keyError(kes[0]))
		}
		return nil
	}
}

func requireGet(t *testing.T, c *Client, k string, ts uint64, want string) {
	t.Helper()
	v, found, err := c.Get(bg, []byte(k), ts)
	require.NoError(t, err)
	if want == "" {
		require.False(t, found, k)
		return
	}
	require.True(t, found, k)
	require.Equal(t, want, string(v))
}

func TestGet(t *testing.T) {
	cl := newStores(t, 1)
	cl.put("a", "a1", 10)
	cl.put("a", "a2", 20)
	c := cl.client(Config{})
	tests := []struct {
		key  string
		ts   uint64
		want string
	}{
		{"a", 5, ""}, {"a", 10, "a1"}, {"a", 15, "a1"}, {"a", 25, "a2"}, {"b", 25, ""},
	}
	for _, tt := range tests {
		requireGet(t, c, tt.key, tt.ts, tt.want)
	}
	require.Equal(t, 1, cl.PDCalls("GetRegion"), "region cached after first load")
}

func TestNotLeaderRedirect(t *testing.T) {
	tests := []struct {
		name     string
		hideHint bool
		leader   uint64
		// wantCalls are KvGet calls per store 1..3
		wantCalls [3]int
	}{
		{"hint", false, 3, [3]int{1, 0, 1}},
		{"no hint round robin", true, 3, [3]int{1, 1, 1}},
		{"no hint next peer", true, 2, [3]int{1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newStores(t, 3)
			cl.put("a", "v", 10)
			cl.SetLeader(1, tt.leader, !tt.hideHint)
			cl.SetPDLeader(1, 1) // PD is behind
			c := cl.client(Config{})
			requireGet(t, c, "a", 20, "v")
			for i := range 3 {
				require.Equal(t, tt.wantCalls[i], cl.NodeCalls(uint64(i+1), "KvGet"), "store %d", i+1)
			}
			// The cache learnt the leader: the next Get goes straight there.
			requireGet(t, c, "a", 20, "v")
			require.Equal(t, tt.wantCalls[tt.leader-1]+1, cl.NodeCalls(tt.leader, "KvGet"))
			require.Equal(t, 1, cl.PDCalls("GetRegion"))
		})
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}

func TestNotLeaderHintSkipsBackoff(t *testing.T) {
	cl := newStores(t, 3)
	cl.put("a", "v", 10)
	cl.SetLeader(1, 2, true)
	cl.SetPDLeader(1, 1)
	c := cl.client(Config{})
	before := counterValue(t, boCount[boNotLeader])
	requireGet(t, c, "a", 20, "v")
	require.Equal(t, before, counterValue(t, boCount[boNotLeader]))
}

func TestEpochNotMatchRefreshesWithoutPD(t *testing.T) {
	cl := newStores(t, 1)
	for i := range 20 {
		cl.put(key(i), "v"+key(i), 10)
	}
	c := cl.client(Config{})
	requireGet(t, c, key(1), 20, "v"+key(1)) // caches the whole-space region
	require.Equal(t, 1, cl.PDCalls("GetRegion"))

	cl.split(key(10))
	requireGet(t, c, key(15), 20, "v"+key(15))
	requireGet(t, c, key(5), 20, "v"+key(5))
	require.Equal(t, 1, cl.PDCalls("GetRegion"), "current regions from EpochNotMatch, no PD call")
	require.Equal(t, 2, c.cache.Len())

	pairs, err := c.Scan(bg, nil, nil, 20, 0)
	require.NoError(t, err)
	require.Len(t, pairs, 20)
}

func TestRegionNotFoundReloads(t *testing.T) {
	cl := newStores(t, 2)
	cl.put("a", "v", 10)
	c := cl.client(Config{})
	requireGet(t, c, "a", 20, "v")
	// The region's peer on store 1 goes away (its leader moves to store 2);
	// store 1 no longer knows the region.
	cl.SetLeader(1, 2, true)
	cl.RemovePeer(1, 1)
	requireGet(t, c, "a", 20, "v")
	require.Equal(t, 2, cl.PDCalls("GetRegion"))
}

func TestStoreDown(t *testing.T) {
	cl := newStores(t, 3)
	cl.put("a", "v", 10)
	cl.StopNode(1)
	cl.SetLeader(1, 2, true)
	cl.SetPDLeader(1, 1) // PD still names the dead store

	c := cl.client(Config{})
	requireGet(t, c, "a", 20, "v")

	// A write refused before it was sent is retried on the next peer.
	c2 := cl.client(Config{})
	err := commit1PC(bg, c2, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("b"), Value: []byte("w")}}, 20, 21)
	require.NoError(t, err)
	require.Equal(t, 1, cl.versions("b"), "applied once")
	// The store commits a 1PC write above its max_ts, synced with PD's
	// clock: read it at a fresh timestamp.
	requireGet(t, c, "b", cl.ts(), "w")
}

func TestReadTimeoutTriesNextPeer(t *testing.T) {
	cl := newStores(t, 2)
	cl.put("a", "v", 10)
	cl.SetLeader(1, 2, true)
	cl.SetPDLeader(1, 1)
	// Store 1 hangs (e.g. paused process).
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the cluster stops
	cl.Inject(&storetest.Fault{Method: "KvGet", Store: 1, Do: wait(release)})
	c := cl.client(Config{RPCTimeout: 50 * time.Millisecond})
	requireGet(t, c, "a", 20, "v")
}

func TestScanAcrossRegions(t *testing.T) {
	cl := newStores(t, 2)
	for i := range 20 {
		cl.put(key(i), "v", 10)
	}
	cl.put(key(3), "later", 30)
	cl.split(key(10))
	c := cl.client(Config{})
	tests := []struct {
		name       string
		start, end string
		ts         uint64
		limit      int
		want       []int // key indexes
	}{
		{"all", "", "", 20, 0, seq(0, 20)},
		{"limit crosses regions", "", "", 20, 15, seq(0, 15)},
		{"limit within first region", "", "", 20, 5, seq(0, 5)},
		{"limit exactly first region", "", "", 20, 10, seq(0, 10)},
		{"range across", key(5), key(15), 20, 0, seq(5, 15)},
		{"range ends at split", key(5), key(10), 20, 0, seq(5, 10)},
		{"range starts at split", key(10), "", 20, 0, seq(10, 20)},
		{"second region with limit", key(12), "", 20, 3, seq(12, 15)},
		{"empty range", key(5), key(5), 20, 0, nil},
		{"before writes", "", "", 5, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pairs, err := c.Scan(bg, []byte(tt.start), []byte(tt.end), tt.ts, tt.limit)
			require.NoError(t, err)
			var got []int
			for _, p := range pairs {
				var i int
				_, err := fmt.Sscanf(string(p.Key), "k%02d", &i)
				require.NoError(t, err)
				got = append(got, i)
			}
			require.Equal(t, tt.want, got)
		})
	}
	pairs, err := c.Scan(bg, []byte(key(3)), []byte(key(4)), 40, 0)
	require.NoError(t, err)
	require.Equal(t, "later", string(pairs[0].Value))
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestOnePCKeyErrors(t *testing.T) {
	cl := newStores(t, 1)
	cl.put("exists", "v", 10)
	cl.put("hot", "v", 50)
	c := cl.client(Config{})
	tests := []struct {
		name  string
		mut   *kvrpcpb.Mutation
		start uint64
		check func(t *testing.T, err error)
	}{
		{"insert existing", &kvrpcpb.Mutation{Op: kvrpcpb.Op_Insert, Key: []byte("exists")}, 20,
			func(t *testing.T, err error) {
				var ae *AlreadyExistError
				require.ErrorAs(t, err, &ae)
				require.Equal(t, "exists", string(ae.Key))
				require.Contains(t, err.Error(), "exists")
			}},
		{"write conflict", &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: []byte("hot")}, 20,
			func(t *testing.T, err error) {
				var wc *WriteConflictError
				require.ErrorAs(t, err, &wc)
				require.Equal(t, WriteConflictError{StartTS: 20, ConflictTS: 50, Key: []byte("hot")}, *wc)
			}},
		{"insert new", &kvrpcpb.Mutation{Op: kvrpcpb.Op_Insert, Key: []byte("new")}, 60,
			func(t *testing.T, err error) { require.NoError(t, err) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, commit1PC(bg, c, []*kvrpcpb.Mutation{tt.mut}, tt.start, tt.start+100))
		})
	}
}

func TestOnePCRetriesStaleCommand(t *testing.T) {
	cl := newStores(t, 1)
	// StaleCommand means the proposal was dropped or overwritten before it
	// applied: the write is sent again and lands exactly once.
	f := &storetest.Fault{Method: "KvPrewrite", Times: 1, Answer: func(proto.Message) (proto.Message, error) {
		return &kvrpcpb.PrewriteResponse{RegionError: &errorpb.Error{StaleCommand: &errorpb.StaleCommand{}}}, nil
	}}
	cl.Inject(f)
	c := cl.client(Config{})
	err := commit1PC(bg, c, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a"), Value: []byte("v")}}, 10, 11)
	require.NoError(t, err)
	require.Equal(t, 1, cl.Hits(f))
	require.Equal(t, 2, cl.NodeCalls(1, "KvPrewrite"))
	require.Equal(t, 1, cl.versions("a"))
}

func TestOnePCUndetermined(t *testing.T) {
	tests := []struct {
		name  string
		fault func(release <-chan struct{}) *storetest.Fault
	}{
		// Applied, but the answer never arrives in time.
		{"rpc timeout", func(release <-chan struct{}) *storetest.Fault {
			return &storetest.Fault{Method: "KvPrewrite", Applied: true, Do: wait(release)}
		}},
		{"unknown region error", func(<-chan struct{}) *storetest.Fault {
			return &storetest.Fault{Method: "KvPrewrite", Answer: func(proto.Message) (proto.Message, error) {
				return &kvrpcpb.PrewriteResponse{RegionError: &errorpb.Error{Message: "something"}}, nil
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newStores(t, 1)
			release := make(chan struct{})
			t.Cleanup(func() { close(release) }) // runs before the cluster stops
			cl.Inject(tt.fault(release))
			c := cl.client(Config{RPCTimeout: 100 * time.Millisecond})
			// Connect first: a dial slower than the RPC timeout (as under
			// -race on a loaded machine) fails before sending, which is
			// rightly retried and is not the case under test.
			_, _, err := c.Get(bg, []byte("warm-up"), 10)
			require.NoError(t, err)
			err = commit1PC(bg, c, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a")}}, 10, 11)
			require.ErrorIs(t, err, ErrUndetermined)
			require.Equal(t, 1, cl.NodeCalls(1, "KvPrewrite"), "an ambiguous write is not retried")
		})
	}
}

func TestBudgetExhausted(t *testing.T) {
	busy := func(proto.Message) (proto.Message, error) {
		return &kvrpcpb.GetResponse{RegionError: &errorpb.Error{ServerIsBusy: &errorpb.ServerIsBusy{Reason: "test"}}}, nil
	}
	tests := []struct {
		name    string
		setup   func(cl *cluster)
		wantMsg string
	}{
		{"server busy", func(cl *cluster) { cl.Inject(&storetest.Fault{Method: "KvGet", Store: 1, Answer: busy}) }, "region 1"},
		{"stores down", func(cl *cluster) { cl.StopNode(1); cl.StopNode(2) }, "region 1"},
		{"no leader", func(cl *cluster) { cl.SetLeader(1, 0, false) }, "region 1"},
		{"pd has no region", func(cl *cluster) { cl.SetPDError(errors.New("not bootstrapped")) }, "not bootstrapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newStores(t, 2)
			tt.setup(cl)
			c := cl.client(Config{BackoffBudget: 100 * time.Millisecond})
			start := time.Now()
			_, _, err := c.Get(bg, []byte("a"), 10)
			require.ErrorIs(t, err, ErrRegionUnavailable)
			require.Contains(t, err.Error(), tt.wantMsg)
			require.Less(t, time.Since(start), 2*time.Second)
		})
	}
}

func TestRidesThroughLeaderElection(t *testing.T) {
	cl := newStores(t, 3)
	cl.put("a", "v", 10)
	cl.SetLeader(1, 0, false) // election in progress
	c := cl.client(Config{})
	done := make(chan error, 1)
	go func() {
		v, _, err := c.Get(bg, []byte("a"), 20)
		if err == nil && string(v) != "v" {
			err = fmt.Errorf("got %q", v)
		}
		done <- err
	}()
	// Let the client see the missing leader a few times, then elect store 3.
	require.Eventually(t, func() bool { return cl.NodeCalls(1, "KvGet")+cl.NodeCalls(2, "KvGet") >= 4 }, 5*time.Second, time.Millisecond)
	cl.SetLeader(1, 3, false)
	require.NoError(t, <-done)
}

func TestContextCancelled(t *testing.T) {
	cl := newStores(t, 1)
	cl.SetPDError(errors.New("not bootstrapped"))
	c := cl.client(Config{BackoffBudget: time.Minute})
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.Get(ctx, []byte("a"), 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)
}

// twoLeaders is two stores holding keys 0..n-1 (committed at 10), split
// at key at, the region from there led by store 2, and a client.
func twoLeaders(t *testing.T, n, at int) (*cluster, *Client) {
	cl := newStores(t, 2)
	for i := range n {
		cl.put(key(i), "v", 10)
	}
	r2 := cl.split(key(at))
	cl.SetLeader(r2, 2, true)
	return cl, cl.client(Config{})
}

func TestCoprocessorAcrossRegions(t *testing.T) {
	cl, c := twoLeaders(t, 20, 10)
	ranges := []*kvrpcpb.KeyRange{
		{Start: []byte(key(18)), End: nil},
		{Start: []byte(key(0)), End: []byte(key(3))},
		{Start: []byte(key(8)), End: []byte(key(12))},
	}
	resps, err := c.Coprocessor(bg, scanDAG(), ranges, 20)
	require.NoError(t, err)
	require.Len(t, resps, 2)
	rowKeys := func(sr *coprocessorpb.SelectResponse) []string {
		var out []string
		for _, r := range sr.Rows {
			out = append(out, string(r.Key))
		}
		return out
	}
	require.Equal(t, []string{key(0), key(1), key(2), key(8), key(9)}, rowKeys(resps[0]))
	require.Equal(t, []string{key(10), key(11), key(18), key(19)}, rowKeys(resps[1]))
	require.Equal(t, []byte(key(12)), ranges[2].End, "caller's ranges untouched")
	require.Equal(t, 1, cl.NodeCalls(1, "Coprocessor"))
	require.Equal(t, 1, cl.NodeCalls(2, "Coprocessor"))

	resps, err = c.Coprocessor(bg, countDAG(), []*kvrpcpb.KeyRange{{Start: []byte(""), End: nil}}, 20)
	require.NoError(t, err)
	require.Len(t, resps, 2)
	require.Equal(t, []int64{10}, resps[0].AggValues)
	require.Equal(t, []int64{10}, resps[1].AggValues)
}

func TestClipRanges(t *testing.T) {
	kr := func(s, e string) *kvrpcpb.KeyRange {
		r := &kvrpcpb.KeyRange{Start: []byte(s)}
		if e != "" {
			r.End = []byte(e)
		}
		return r
	}
	str := func(rs []*kvrpcpb.KeyRange) string {
		var parts []string
		for _, r := range rs {
			parts = append(parts, string(r.Start)+"-"+string(r.End))
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		name     string
		end      string
		in       []*kvrpcpb.KeyRange
		wantIn   string
		wantRest string
	}{
		{"infinite region", "", []*kvrpcpb.KeyRange{kr("a", "c"), kr("x", "")}, "a-c,x-", ""},
		{"all inside", "m", []*kvrpcpb.KeyRange{kr("a", "c"), kr("d", "m")}, "a-c,d-m", ""},
		{"next starts at end", "m", []*kvrpcpb.KeyRange{kr("a", "c"), kr("m", "z")}, "a-c", "m-z"},
		{"straddles", "m", []*kvrpcpb.KeyRange{kr("a", "c"), kr("d", "z"), kr("za", "")}, "a-c,d-m", "m-z,za-"},
		{"unbounded straddles", "m", []*kvrpcpb.KeyRange{kr("d", "")}, "d-m", "m-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var end []byte
			if tt.end != "" {
				end = []byte(tt.end)
			}
			in, rest := clipRanges(end, tt.in)
			require.Equal(t, tt.wantIn, str(in))
			require.Equal(t, tt.wantRest, str(rest))
		})
	}
}

func TestClose(t *testing.T) {
	cl := newStores(t, 1)
	c := cl.client(Config{})
	requireGet(t, c, "a", 1, "")
	require.NoError(t, c.Close())
	_, _, err := c.Get(bg, []byte("a"), 1)
	require.ErrorIs(t, err, ErrClosed)
}

func TestConcurrentClients(t *testing.T) {
	cl := newStores(t, 3)
	cl.split(key(10))
	c := cl.client(Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				k := []byte(fmt.Sprintf("k%02d-%d", i, g))
				// PD timestamps: the store commits a 1PC write above the
				// reads it served (max_ts), and those of the other
				// goroutines are at any timestamp.
				ts, err := cl.GetTS(bg)
				if err != nil {
					errs <- err
					return
				}
				if err := commit1PC(bg, c, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k, Value: k}}, ts, ts+1); err != nil {
					errs <- err
					return
				}
				if ts, err = cl.GetTS(bg); err != nil {
					errs <- err
					return
				}
				if v, found, err := c.Get(bg, k, ts); err != nil || !found || string(v) != string(k) {
					errs <- fmt.Errorf("get %s: %q %v %v", k, v, found, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, cl.PDCalls("GetRegion"), 16*2, "single-flight bounds PD calls")
}

func TestCoprocessorManyRegionsWithSplit(t *testing.T) {
	cl := newStores(t, 3)
	for i := range 40 {
		cl.put(key(i), "v", 10)
	}
	for i := 4; i < 40; i += 4 {
		id := cl.split(key(i))
		cl.SetLeader(id, uint64(i%3+1), true)
	}
	c := cl.client(Config{})
	all := []*kvrpcpb.KeyRange{{Start: []byte("")}}
	resps, err := c.Coprocessor(bg, countDAG(), all, 20)
	require.NoError(t, err)
	require.Len(t, resps, 10)
	// Split two cached regions: their tasks meet EpochNotMatch and are
	// re-split; results stay in key order.
	cl.split(key(6))
	cl.split(key(33))
	resps, err = c.Coprocessor(bg, scanDAG(), all, 20)
	require.NoError(t, err)
	require.Len(t, resps, 12)
	require.Equal(t, seq(0, 40), rowInts(t, resps))
}

// TestCoprocessorPaging: with paging_size a call reads one page from one
// region and says where the next starts; following the resume keys reads
// every row once, asking each region only for the pages it serves.
func TestCoprocessorPaging(t *testing.T) {
	cl, c := twoLeaders(t, 25, 10)
	dag := scanDAG()
	dag.PagingSize = 4
	start, end := []byte(key(1)), []byte(key(23))
	var got []string
	var pages []int
	for start != nil {
		resps, err := c.Coprocessor(bg, dag, []*kvrpcpb.KeyRange{{Start: start, End: end}}, 20)
		require.NoError(t, err)
		require.Len(t, resps, 1)
		for _, r := range resps[0].Rows {
			got = append(got, string(r.Key))
		}
		pages = append(pages, len(resps[0].Rows))
		start = resps[0].ResumeKey
	}
	var want []string
	for i := 1; i < 23; i++ {
		want = append(want, key(i))
	}
	require.Equal(t, want, got)
	// Region 1 holds keys 1..9 (pages 4, 4, 1), region 2 keys 10..22
	// (4, 4, 4, 1): no call reads rows past its page.
	require.Equal(t, []int{4, 4, 1, 4, 4, 4, 1}, pages)
	require.Equal(t, 3, cl.NodeCalls(1, "Coprocessor"))
	require.Equal(t, 4, cl.NodeCalls(2, "Coprocessor"))
}

// TestCoprocessorPagingRanges: a paging call takes every range of the
// region it reads in one request, ascending from the first range's start
// or, with a descending scan, backwards from the last range's end; the
// resume keys (inside a range, or the next region's edge) lead over every
// row once, in scan order, with one call per region and page.
func TestCoprocessorPagingRanges(t *testing.T) {
	cl, c := twoLeaders(t, 30, 12)
	// k01..k03, k05, k07..k13 (over the split), nothing in k20..k20\0
	// (empty), k25..k26.
	ranges := []*kvrpcpb.KeyRange{
		{Start: []byte(key(1)), End: []byte(key(4))},
		{Start: []byte(key(5)), End: []byte(key(6))},
		{Start: []byte(key(7)), End: []byte(key(14))},
		{Start: []byte(key(20)), End: []byte(key(20))},
		{Start: []byte(key(25)), End: []byte(key(27))},
	}
	var want []string
	for _, i := range []int{1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 25, 26} {
		want = append(want, key(i))
	}
	for _, desc := range []bool{false, true} {
		dag := &coprocessorpb.DAGRequest{PagingSize: 4, Executors: []*coprocessorpb.Executor{
			{Tp: coprocessorpb.ExecType_TypeTableScan, TblScan: &coprocessorpb.TableScan{Desc: desc}}}}
		c1, c2 := cl.NodeCalls(1, "Coprocessor"), cl.NodeCalls(2, "Coprocessor")
		rs := ranges
		var got []string
		var pages []int
		for len(rs) > 0 {
			resps, err := c.Coprocessor(bg, dag, rs, 20)
			require.NoError(t, err)
			require.Len(t, resps, 1)
			for _, r := range resps[0].Rows {
				got = append(got, string(r.Key))
			}
			pages = append(pages, len(resps[0].Rows))
			if resps[0].ResumeKey == nil {
				break
			}
			rs = resumeRanges(rs, resps[0].ResumeKey, desc)
		}
		w := slices.Clone(want)
		if desc {
			slices.Reverse(w)
		}
		require.Equal(t, w, got, "desc=%v", desc)
		if desc {
			// Region 2 (k12..) answers k26 k25 k13 k12, its last rows
			// (the page resumes before k12, in region 1); region 1
			// k11..k08, k07..k02, k01.
			require.Equal(t, []int{4, 4, 4, 1}, pages)
			require.Equal(t, 3, cl.NodeCalls(1, "Coprocessor")-c1)
			require.Equal(t, 1, cl.NodeCalls(2, "Coprocessor")-c2)
		} else {
			// Region 1 answers k01..k07, k08..k10 (4 each), then k11 and
			// is done; region 2 k12 k13 k25 k26, a full page, then
			// nothing after it.
			require.Equal(t, []int{4, 4, 1, 4, 0}, pages)
			require.Equal(t, 3, cl.NodeCalls(1, "Coprocessor")-c1)
			require.Equal(t, 2, cl.NodeCalls(2, "Coprocessor")-c2)
		}
	}
}

func TestCoprocessorError(t *testing.T) {
	cl := newStores(t, 2)
	r2 := cl.split(key(10))
	cl.SetLeader(r2, 2, true)
	c := cl.client(Config{})
	_, err := c.Coprocessor(bg, scanDAG(), []*kvrpcpb.KeyRange{{Start: []byte(key(5)), End: []byte(key(15))}}, 20)
	require.NoError(t, err)
	// A range past its region's end (a store rejects it) can't happen via
	// the client; use a store failure instead.
	cl.Inject(&storetest.Fault{Method: "Coprocessor", Store: 2, Answer: func(proto.Message) (proto.Message, error) {
		return &kvrpcpb.CoprocessorResponse{RegionError: &errorpb.Error{ServerIsBusy: &errorpb.ServerIsBusy{}}}, nil
	}})
	c2 := cl.client(Config{BackoffBudget: 50 * time.Millisecond})
	_, err = c2.Coprocessor(bg, scanDAG(), []*kvrpcpb.KeyRange{{Start: []byte(key(5)), End: []byte(key(15))}}, 20)
	require.ErrorIs(t, err, ErrRegionUnavailable)
	require.Contains(t, err.Error(), fmt.Sprintf("region %d", r2))
}

func TestCallerDeadlineWithHungStore(t *testing.T) {
	cl := newStores(t, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the servers stop
	for _, m := range []string{"KvGet", "KvPrewrite"} {
		cl.Inject(&storetest.Fault{Method: m, Do: wait(release)})
	}
	c := cl.client(Config{RPCTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, _, err := c.Get(ctx, []byte("a"), 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrUndetermined)

	ctx2, cancel2 := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel2()
	err = commit1PC(ctx2, c, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a")}}, 10, 11)
	require.ErrorIs(t, err, ErrUndetermined, "the write was sent and may apply")
}

// A write in flight when the client closes may have been applied: it is
// undetermined, not a plain ErrClosed failure (issue 6).
func TestCloseDuringWriteIsUndetermined(t *testing.T) {
	cl := newStores(t, 1)
	release, applied := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	hold := wait(release)
	cl.Inject(&storetest.Fault{Method: "KvPrewrite", Applied: true, Times: 1, Do: func(ctx context.Context, req proto.Message) {
		close(applied) // applied; the answer is held back
		hold(ctx, req)
	}})
	c := cl.client(Config{})
	_, _, err := c.Get(bg, []byte("warm-up"), 10)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- commit1PC(bg, c, []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("a")}}, 10, 11)
	}()
	<-applied
	require.Equal(t, 1, cl.versions("a"))
	require.NoError(t, c.Close())
	err = <-done
	require.ErrorIs(t, err, ErrUndetermined)
	require.NotErrorIs(t, err, ErrClosed)
}

// TestSplitRegions: SplitRegions sends each region's keys to its leader in
// one request, skips keys already on a boundary, retries a region that
// split meanwhile with its keys regrouped, and learns the new regions from
// the answers (no PD lookups afterwards).
func TestSplitRegions(t *testing.T) {
	cl := newStores(t, 1)
	c := cl.client(Config{})
	requireGet(t, c, key(0), 1, "") // cache the whole-space region
	n, err := c.SplitRegions(bg, [][]byte{[]byte(key(20)), []byte(key(10)), []byte(key(10)), []byte(key(30))})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, 4, c.cache.Len(), "regions learnt from the answer")
	require.Equal(t, 1, cl.PDCalls("GetRegion"))

	// key(15) splits behind the client's back: the request for [10, 20)
	// meets EpochNotMatch and is regrouped; key(20) is a boundary already.
	cl.split(key(15))
	n, err = c.SplitRegions(bg, [][]byte{[]byte(key(12)), []byte(key(17)), []byte(key(20))})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, k := range []int{10, 12, 15, 17, 20, 30} {
		r, err := c.cache.Locate(bg, []byte(key(k)))
		require.NoError(t, err)
		require.Equal(t, key(k), string(r.StartKey()), "a region starts at %s", key(k))
	}
	require.Equal(t, 1, cl.PDCalls("GetRegion"), "no PD lookups")
}

func TestAttemptTimeoutCoversLockWait(t *testing.T) {
	c := &Client{cfg: Config{RPCTimeout: 5 * time.Second}}
	lock := func(waitMs int64) *Request {
		return &Request{Cmd: &storepb.BatchCommandsRequest_Request_PessimisticLock{PessimisticLock: &kvrpcpb.PessimisticLockRequest{WaitTimeout: waitMs}}}
	}
	get := &Request{Cmd: &storepb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{}}}
	require.Equal(t, 5*time.Second, c.attemptTimeout(get, 0))
	require.Equal(t, 5*time.Second, c.attemptTimeout(lock(-1), 0), "NOWAIT")
	require.Equal(t, 5*time.Second, c.attemptTimeout(lock(0), 0))
	require.Equal(t, 7500*time.Millisecond, c.attemptTimeout(lock(2500), 0))
	// A read that timed out gets twice the time per timeout, up to 16x;
	// a write never more (its timeouts are undetermined, not retried).
	cop := &Request{Cmd: &storepb.BatchCommandsRequest_Request_Coprocessor{Coprocessor: &kvrpcpb.CoprocessorRequest{}}}
	for _, tc := range []struct {
		req      *Request
		timeouts int
		want     time.Duration
	}{
		{cop, 0, 5 * time.Second},
		{cop, 1, 10 * time.Second},
		{get, 2, 20 * time.Second},
		{cop, 4, 80 * time.Second},
		{cop, 9, 80 * time.Second},
		{lock(0), 3, 5 * time.Second},
	} {
		require.Equal(t, tc.want, c.attemptTimeout(tc.req, tc.timeouts))
	}
}

// A read below the GC safe point is a *kv.GCTooEarlyError, which the SQL
// node reports as 9006, whatever path read it (a get or a coprocessor
// request).
func TestKeyErrorGCTooEarly(t *testing.T) {
	err := keyError(&kvrpcpb.KeyError{GcTooEarly: &kvrpcpb.GCTooEarly{StartTs: 5, SafePoint: 7}})
	var gc *kv.GCTooEarlyError
	require.ErrorAs(t, err, &gc)
	require.Equal(t, kv.GCTooEarlyError{StartTS: 5, SafePoint: 7}, *gc)
	require.ErrorIs(t, err, ErrAborted)
}
