package txn

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/tso"
)

// fakeKV is a single in-process store on loopback serving Percolator
// commands over an in-memory MVCC map, with a fake PD and oracle, for
// testing the committer, resolver and reads until the real store side is
// available. Regions are fixed at creation (split keys); all live on
// store 1.
type fakeKV struct {
	t testing.TB
	storepb.UnimplementedStoreServer

	addr    string
	regions []*metapb.Region

	mu      sync.Mutex
	writes  map[string][]fakeWrite // newest first
	locks   map[string]*fakeLock
	maxTS   uint64
	noOnePC bool
	noAsync bool
	calls   map[string]int
	// hook runs before a command is served; a non-nil error is returned
	// as the RPC's error after the command is applied when after is set.
	hook func(method string, req any) (delay time.Duration)

	lastTS atomic.Uint64
	// pdAhead is how far the oracle's clock runs ahead of this process's.
	pdAhead time.Duration
}

type fakeWrite struct {
	startTS, commitTS uint64
	value             []byte
	del, rollback     bool
}

type fakeLock struct {
	info  *kvrpcpb.LockInfo
	op    kvrpcpb.Op
	value []byte
}

func newFakeKV(t testing.TB, splits ...string) *fakeKV {
	f := &fakeKV{t: t, writes: map[string][]fakeWrite{}, locks: map[string]*fakeLock{}, calls: map[string]int{}}
	start := []byte(nil)
	for i, s := range append(splits, "") {
		var end []byte
		if s != "" {
			end = []byte(s)
		}
		f.regions = append(f.regions, &metapb.Region{Id: uint64(i + 1), StartKey: start, EndKey: end,
			RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
			Peers:       []*metapb.Peer{{Id: uint64(100 + i), StoreId: 1}}})
		start = end
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	storepb.RegisterStoreServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	f.addr = lis.Addr().String()
	return f
}

// GetTS is the oracle: physical ms with a logical counter, increasing.
func (f *fakeKV) GetTS(context.Context) (uint64, error) {
	for {
		last := f.lastTS.Load()
		ts := max(tso.ComposeTS(time.Now().Add(f.pdAhead).UnixMilli(), 0), last+1)
		if f.lastTS.CompareAndSwap(last, ts) {
			return ts, nil
		}
	}
}

func (f *fakeKV) ts() uint64 { ts, _ := f.GetTS(context.Background()); return ts }

func (f *fakeKV) GetRegion(_ context.Context, key []byte) (*metapb.Region, *metapb.Peer, error) {
	r := f.regionOf(key)
	return r, r.Peers[0], nil
}

func (f *fakeKV) GetRegionByID(_ context.Context, id uint64) (*metapb.Region, *metapb.Peer, error) {
	r := f.regions[id-1]
	return r, r.Peers[0], nil
}

func (f *fakeKV) GetStore(context.Context, uint64) (*metapb.Store, error) {
	return &metapb.Store{Id: 1, Address: f.addr}, nil
}

func (f *fakeKV) regionOf(key []byte) *metapb.Region {
	for _, r := range f.regions {
		if bytes.Compare(r.StartKey, key) <= 0 && (len(r.EndKey) == 0 || bytes.Compare(key, r.EndKey) < 0) {
			return r
		}
	}
	panic("no region")
}

func (f *fakeKV) newClient(cfg Config) *Client {
	kv := kvclient.New(f, kvclient.Config{BackoffBudget: 5 * time.Second, RPCTimeout: 2 * time.Second})
	f.t.Cleanup(func() { _ = kv.Close() })
	return NewClient(kv, f, cfg)
}

func (f *fakeKV) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// enter counts the call, runs the hook and checks routing; it returns
// with f.mu held unless it returns a region error.
func (f *fakeKV) enter(method string, req any, rctx *kvrpcpb.Context, keys ...[]byte) *errorpb.Error {
	f.mu.Lock()
	f.calls[method]++
	h := f.hook
	f.mu.Unlock()
	if h != nil {
		if d := h(method, req); d > 0 {
			time.Sleep(d)
		}
	}
	f.mu.Lock()
	r := f.regions[rctx.GetRegionId()-1]
	if e := rctx.GetRegionEpoch(); e != nil && e.GetVersion() != r.RegionEpoch.GetVersion() {
		cur := []*metapb.Region{r}
		for _, o := range f.regions {
			if o.RegionEpoch.GetVersion() == r.RegionEpoch.GetVersion() && o != r {
				cur = append(cur, o) // split off r (the fake's regions share versions)
			}
		}
		f.mu.Unlock()
		return &errorpb.Error{EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: cur}}
	}
	for _, k := range keys {
		if bytes.Compare(r.StartKey, k) > 0 || (len(r.EndKey) != 0 && bytes.Compare(k, r.EndKey) >= 0) {
			f.mu.Unlock()
			return &errorpb.Error{KeyNotInRegion: &errorpb.KeyNotInRegion{Key: k, RegionId: r.Id}}
		}
	}
	return nil
}

// read returns key's newest committed value at ts, or a lock error.
func (f *fakeKV) read(key []byte, ts uint64, rctx *kvrpcpb.Context) ([]byte, bool, *kvrpcpb.KeyError) {
	f.maxTS = max(f.maxTS, ts)
	if l := f.locks[string(key)]; l != nil && l.info.LockVersion <= ts && l.op != kvrpcpb.Op_PessimisticLock &&
		l.op != kvrpcpb.Op_Lock && !contains(rctx.GetResolvedLocks(), l.info.LockVersion) {
		return nil, false, &kvrpcpb.KeyError{Locked: l.info}
	}
	for _, w := range f.writes[string(key)] {
		if w.rollback || w.commitTS > ts {
			continue
		}
		if w.del {
			return nil, false, nil
		}
		return w.value, true, nil
	}
	return nil, false, nil
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (f *fakeKV) KvGet(_ context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	if re := f.enter("Get", req, req.Context, req.Key); re != nil {
		return &kvrpcpb.GetResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	v, ok, ke := f.read(req.Key, req.Version, req.Context)
	return &kvrpcpb.GetResponse{Value: v, NotFound: !ok, Error: ke}, nil
}

func (f *fakeKV) KvBatchGet(_ context.Context, req *kvrpcpb.BatchGetRequest) (*kvrpcpb.BatchGetResponse, error) {
	if re := f.enter("BatchGet", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.BatchGetResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	resp := &kvrpcpb.BatchGetResponse{}
	for _, k := range req.Keys {
		v, ok, ke := f.read(k, req.Version, req.Context)
		if ke != nil || ok {
			resp.Pairs = append(resp.Pairs, &kvrpcpb.KvPair{Key: k, Value: v, Error: ke})
		}
	}
	return resp, nil
}

func (f *fakeKV) KvScan(_ context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	if re := f.enter("Scan", req, req.Context); re != nil {
		return &kvrpcpb.ScanResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	r := f.regions[req.Context.RegionId-1]
	end := req.EndKey
	if len(end) == 0 {
		end = r.EndKey
	}
	var keys []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] && k >= string(req.StartKey) && (len(end) == 0 || k < string(end)) {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for k := range f.writes {
		add(k)
	}
	for k := range f.locks {
		add(k)
	}
	sort.Strings(keys)
	if req.Reverse {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	resp := &kvrpcpb.ScanResponse{}
	for _, k := range keys {
		if req.Limit > 0 && len(resp.Pairs) >= int(req.Limit) {
			break
		}
		v, ok, ke := f.read([]byte(k), req.Version, req.Context)
		if ke != nil {
			resp.Error = ke
			break
		}
		if ok {
			resp.Pairs = append(resp.Pairs, &kvrpcpb.KvPair{Key: []byte(k), Value: v})
		}
	}
	return resp, nil
}

func (f *fakeKV) newest(key []byte) *fakeWrite {
	for i, w := range f.writes[string(key)] {
		if !w.rollback {
			return &f.writes[string(key)][i]
		}
	}
	return nil
}

func (f *fakeKV) findWrite(key []byte, startTS uint64) *fakeWrite {
	for i, w := range f.writes[string(key)] {
		if w.startTS == startTS {
			return &f.writes[string(key)][i]
		}
	}
	return nil
}

func (f *fakeKV) addWrite(key []byte, w fakeWrite) {
	ws := append([]fakeWrite{w}, f.writes[string(key)]...)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].commitTS > ws[j].commitTS })
	f.writes[string(key)] = ws
}

func (f *fakeKV) KvPrewrite(_ context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	keys := make([][]byte, len(req.Mutations))
	for i, m := range req.Mutations {
		keys[i] = m.Key
	}
	if re := f.enter("Prewrite", req, req.Context, keys...); re != nil {
		return &kvrpcpb.PrewriteResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	resp := &kvrpcpb.PrewriteResponse{}
	for i, m := range req.Mutations {
		if l := f.locks[string(m.Key)]; l != nil && l.info.LockVersion != req.StartVersion {
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Locked: l.info})
			continue
		}
		if w := f.findWrite(m.Key, req.StartVersion); w != nil {
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Abort: "already committed or rolled back"})
			continue
		}
		pessimistic := len(req.PessimisticActions) > 0 && req.PessimisticActions[i] == kvrpcpb.PessimisticAction_DoPessimisticCheck
		if pessimistic {
			if l := f.locks[string(m.Key)]; l == nil || l.op != kvrpcpb.Op_PessimisticLock {
				resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{TxnLockNotFound: &kvrpcpb.TxnLockNotFound{Key: m.Key}})
				continue
			}
		} else if w := f.newest(m.Key); w != nil && w.commitTS > req.StartVersion {
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Conflict: &kvrpcpb.WriteConflict{
				StartTs: req.StartVersion, ConflictTs: w.startTS, ConflictCommitTs: w.commitTS, Key: m.Key,
				Reason: kvrpcpb.WriteConflict_Optimistic}})
			continue
		}
		if m.Op == kvrpcpb.Op_Insert || m.Op == kvrpcpb.Op_CheckNotExists {
			if w := f.newest(m.Key); w != nil && !w.del {
				resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{AlreadyExist: &kvrpcpb.AlreadyExist{Key: m.Key}})
				continue
			}
		}
	}
	if len(resp.Errors) > 0 {
		return resp, nil
	}
	minCommit := max(req.MinCommitTs, f.maxTS+1)
	if req.TryOnePc && !f.noOnePC {
		for _, m := range req.Mutations {
			delete(f.locks, string(m.Key))
			f.apply(m.Key, m.Op, m.Value, req.StartVersion, minCommit)
		}
		resp.OnePcCommitTs = minCommit
		return resp, nil
	}
	async := req.UseAsyncCommit && !f.noAsync
	for _, m := range req.Mutations {
		f.locks[string(m.Key)] = &fakeLock{op: m.Op, value: m.Value, info: &kvrpcpb.LockInfo{
			PrimaryLock: req.PrimaryLock, LockVersion: req.StartVersion, Key: m.Key, LockTtl: req.LockTtl,
			TxnSize: req.TxnSize, LockType: m.Op, LockForUpdateTs: req.ForUpdateTs, UseAsyncCommit: async,
			MinCommitTs: minCommit, Secondaries: req.Secondaries}}
	}
	if async {
		resp.MinCommitTs = minCommit
	}
	return resp, nil
}

func (f *fakeKV) apply(key []byte, op kvrpcpb.Op, value []byte, startTS, commitTS uint64) {
	switch op {
	case kvrpcpb.Op_Put, kvrpcpb.Op_Insert:
		f.addWrite(key, fakeWrite{startTS: startTS, commitTS: commitTS, value: value})
	case kvrpcpb.Op_Del:
		f.addWrite(key, fakeWrite{startTS: startTS, commitTS: commitTS, del: true})
	default: // Lock, CheckNotExists, PessimisticLock: nothing written
	}
}

// commitKey commits or rolls back key's lock of startTS.
func (f *fakeKV) finish(key []byte, startTS, commitTS uint64) *kvrpcpb.KeyError {
	l := f.locks[string(key)]
	if l == nil || l.info.LockVersion != startTS {
		w := f.findWrite(key, startTS)
		switch {
		case w != nil && !w.rollback && commitTS > 0:
			return nil
		case w != nil && w.rollback && commitTS == 0:
			return nil
		case commitTS == 0 && w == nil:
			f.addWrite(key, fakeWrite{startTS: startTS, commitTS: startTS, rollback: true})
			return nil
		case commitTS == 0:
			return &kvrpcpb.KeyError{Abort: "already committed"}
		}
		return &kvrpcpb.KeyError{TxnLockNotFound: &kvrpcpb.TxnLockNotFound{Key: key}}
	}
	if commitTS > 0 && commitTS < l.info.MinCommitTs {
		return &kvrpcpb.KeyError{CommitTsExpired: &kvrpcpb.CommitTsExpired{StartTs: startTS, AttemptedCommitTs: commitTS, Key: key, MinCommitTs: l.info.MinCommitTs}}
	}
	delete(f.locks, string(key))
	if commitTS == 0 {
		f.addWrite(key, fakeWrite{startTS: startTS, commitTS: startTS, rollback: true})
		return nil
	}
	f.apply(key, l.op, l.value, startTS, commitTS)
	return nil
}

func (f *fakeKV) KvCommit(_ context.Context, req *kvrpcpb.CommitRequest) (*kvrpcpb.CommitResponse, error) {
	if re := f.enter("Commit", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.CommitResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	for _, k := range req.Keys {
		if ke := f.finish(k, req.StartVersion, req.CommitVersion); ke != nil {
			return &kvrpcpb.CommitResponse{Error: ke}, nil
		}
	}
	return &kvrpcpb.CommitResponse{CommitVersion: req.CommitVersion}, nil
}

func (f *fakeKV) KvBatchRollback(_ context.Context, req *kvrpcpb.BatchRollbackRequest) (*kvrpcpb.BatchRollbackResponse, error) {
	if re := f.enter("BatchRollback", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.BatchRollbackResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	for _, k := range req.Keys {
		if ke := f.finish(k, req.StartVersion, 0); ke != nil {
			return &kvrpcpb.BatchRollbackResponse{Error: ke}, nil
		}
	}
	return &kvrpcpb.BatchRollbackResponse{}, nil
}

func (f *fakeKV) KvCheckTxnStatus(_ context.Context, req *kvrpcpb.CheckTxnStatusRequest) (*kvrpcpb.CheckTxnStatusResponse, error) {
	if re := f.enter("CheckTxnStatus", req, req.Context, req.PrimaryKey); re != nil {
		return &kvrpcpb.CheckTxnStatusResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	if l := f.locks[string(req.PrimaryKey)]; l != nil && l.info.LockVersion == req.LockTs {
		if tso.Physical(req.CurrentTs) >= tso.Physical(l.info.LockVersion)+int64(l.info.LockTtl) && !l.info.UseAsyncCommit {
			delete(f.locks, string(req.PrimaryKey))
			f.addWrite(req.PrimaryKey, fakeWrite{startTS: req.LockTs, commitTS: req.LockTs, rollback: true})
			return &kvrpcpb.CheckTxnStatusResponse{Action: kvrpcpb.Action_TTLExpireRollback}, nil
		}
		resp := &kvrpcpb.CheckTxnStatusResponse{LockTtl: l.info.LockTtl, LockInfo: l.info}
		if !l.info.UseAsyncCommit && l.op != kvrpcpb.Op_PessimisticLock && req.CallerStartTs >= l.info.MinCommitTs {
			l.info.MinCommitTs = req.CallerStartTs + 1
			resp.Action = kvrpcpb.Action_MinCommitTSPushed
		}
		return resp, nil
	}
	if w := f.findWrite(req.PrimaryKey, req.LockTs); w != nil {
		if w.rollback {
			return &kvrpcpb.CheckTxnStatusResponse{}, nil
		}
		return &kvrpcpb.CheckTxnStatusResponse{CommitVersion: w.commitTS}, nil
	}
	if req.RollbackIfNotExist {
		f.addWrite(req.PrimaryKey, fakeWrite{startTS: req.LockTs, commitTS: req.LockTs, rollback: true})
		return &kvrpcpb.CheckTxnStatusResponse{Action: kvrpcpb.Action_LockNotExistRollback}, nil
	}
	return &kvrpcpb.CheckTxnStatusResponse{Error: &kvrpcpb.KeyError{TxnNotFound: &kvrpcpb.TxnNotFound{StartTs: req.LockTs, PrimaryKey: req.PrimaryKey}}}, nil
}

func (f *fakeKV) KvCheckSecondaryLocks(_ context.Context, req *kvrpcpb.CheckSecondaryLocksRequest) (*kvrpcpb.CheckSecondaryLocksResponse, error) {
	if re := f.enter("CheckSecondaryLocks", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.CheckSecondaryLocksResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	resp := &kvrpcpb.CheckSecondaryLocksResponse{}
	for _, k := range req.Keys {
		if l := f.locks[string(k)]; l != nil && l.info.LockVersion == req.StartVersion {
			resp.Locks = append(resp.Locks, l.info)
			continue
		}
		if w := f.findWrite(k, req.StartVersion); w != nil {
			if !w.rollback {
				resp.CommitTs = w.commitTS
			}
			continue
		}
		f.addWrite(k, fakeWrite{startTS: req.StartVersion, commitTS: req.StartVersion, rollback: true})
	}
	return resp, nil
}

func (f *fakeKV) KvResolveLock(_ context.Context, req *kvrpcpb.ResolveLockRequest) (*kvrpcpb.ResolveLockResponse, error) {
	if re := f.enter("ResolveLock", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.ResolveLockResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	keys := req.Keys
	if len(keys) == 0 {
		r := f.regions[req.Context.RegionId-1]
		for k, l := range f.locks {
			if l.info.LockVersion == req.StartVersion && k >= string(r.StartKey) && (len(r.EndKey) == 0 || k < string(r.EndKey)) {
				keys = append(keys, []byte(k))
			}
		}
	}
	for _, k := range keys {
		if l := f.locks[string(k)]; l == nil || l.info.LockVersion != req.StartVersion {
			continue
		}
		if ke := f.finish(k, req.StartVersion, req.CommitVersion); ke != nil {
			return &kvrpcpb.ResolveLockResponse{Error: ke}, nil
		}
	}
	return &kvrpcpb.ResolveLockResponse{}, nil
}

func (f *fakeKV) KvTxnHeartBeat(_ context.Context, req *kvrpcpb.TxnHeartBeatRequest) (*kvrpcpb.TxnHeartBeatResponse, error) {
	if re := f.enter("TxnHeartBeat", req, req.Context, req.PrimaryLock); re != nil {
		return &kvrpcpb.TxnHeartBeatResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	l := f.locks[string(req.PrimaryLock)]
	if l == nil || l.info.LockVersion != req.StartVersion {
		return &kvrpcpb.TxnHeartBeatResponse{Error: &kvrpcpb.KeyError{TxnNotFound: &kvrpcpb.TxnNotFound{StartTs: req.StartVersion}}}, nil
	}
	l.info.LockTtl = max(l.info.LockTtl, req.AdviseLockTtl)
	return &kvrpcpb.TxnHeartBeatResponse{LockTtl: l.info.LockTtl}, nil
}

func (f *fakeKV) KvPessimisticLock(_ context.Context, req *kvrpcpb.PessimisticLockRequest) (*kvrpcpb.PessimisticLockResponse, error) {
	keys := make([][]byte, len(req.Mutations))
	for i, m := range req.Mutations {
		keys[i] = m.Key
	}
	if re := f.enter("PessimisticLock", req, req.Context, keys...); re != nil {
		return &kvrpcpb.PessimisticLockResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	resp := &kvrpcpb.PessimisticLockResponse{}
	for _, k := range keys {
		if l := f.locks[string(k)]; l != nil && l.info.LockVersion != req.StartVersion {
			// No waiting in the fake: report the lock (a real store waits
			// up to wait_timeout first).
			if req.WaitTimeout < 0 {
				resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{LockWaitTimeout: &kvrpcpb.LockWaitTimeout{Key: k, LockTs: l.info.LockVersion}})
			} else {
				resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Locked: l.info})
			}
			return resp, nil
		}
		if w := f.newest(k); w != nil && w.commitTS > req.ForUpdateTs {
			resp.Errors = append(resp.Errors, &kvrpcpb.KeyError{Conflict: &kvrpcpb.WriteConflict{StartTs: req.StartVersion,
				ConflictTs: w.startTS, ConflictCommitTs: w.commitTS, Key: k, Reason: kvrpcpb.WriteConflict_PessimisticRetry}})
			return resp, nil
		}
	}
	f.maxTS = max(f.maxTS, req.ForUpdateTs)
	for _, k := range keys {
		if l := f.locks[string(k)]; l == nil {
			f.locks[string(k)] = &fakeLock{op: kvrpcpb.Op_PessimisticLock, info: &kvrpcpb.LockInfo{
				PrimaryLock: req.PrimaryLock, LockVersion: req.StartVersion, Key: k, LockTtl: req.LockTtl,
				LockType: kvrpcpb.Op_PessimisticLock, LockForUpdateTs: req.ForUpdateTs}}
		}
		if req.ReturnValues {
			w := f.newest(k)
			if w != nil && !w.del {
				resp.Values = append(resp.Values, w.value)
			} else {
				resp.Values = append(resp.Values, nil)
			}
			resp.NotFounds = append(resp.NotFounds, w == nil || w.del)
		}
	}
	return resp, nil
}

func (f *fakeKV) KvPessimisticRollback(_ context.Context, req *kvrpcpb.PessimisticRollbackRequest) (*kvrpcpb.PessimisticRollbackResponse, error) {
	if re := f.enter("PessimisticRollback", req, req.Context, req.Keys...); re != nil {
		return &kvrpcpb.PessimisticRollbackResponse{RegionError: re}, nil
	}
	defer f.mu.Unlock()
	for _, k := range req.Keys {
		if l := f.locks[string(k)]; l != nil && l.info.LockVersion == req.StartVersion && l.op == kvrpcpb.Op_PessimisticLock {
			delete(f.locks, string(k))
		}
	}
	return &kvrpcpb.PessimisticRollbackResponse{}, nil
}

// --- test helpers ---

// put commits key=value directly at a fresh ts and returns it.
func (f *fakeKV) put(key, value string) uint64 {
	ts := f.ts()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addWrite([]byte(key), fakeWrite{startTS: ts, commitTS: ts, value: []byte(value)})
	return ts
}

// lock leaves a prewrite lock of txn startTS on key.
func (f *fakeKV) lock(key, primary string, startTS uint64, ttl uint64, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks[key] = &fakeLock{op: kvrpcpb.Op_Put, value: []byte(value), info: &kvrpcpb.LockInfo{
		PrimaryLock: []byte(primary), LockVersion: startTS, Key: []byte(key), LockTtl: ttl,
		TxnSize: 2, LockType: kvrpcpb.Op_Put, MinCommitTs: startTS + 1}}
}

func (f *fakeKV) lockCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.locks)
}

// commitTSOf returns the commit ts of key's version written by startTS.
func (f *fakeKV) commitTSOf(key string, startTS uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.findWrite([]byte(key), startTS); w != nil && !w.rollback {
		return w.commitTS
	}
	return 0
}

// split splits the region holding key at key, as a store's split does:
// the region keeps the left part, a new region the right, both with the
// version bumped (requests with the old epoch get EpochNotMatch).
func (f *fakeKV) split(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.regionOf([]byte(key))
	left := &metapb.Region{Id: r.Id, StartKey: r.StartKey, EndKey: []byte(key), Peers: r.Peers,
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: r.RegionEpoch.GetVersion() + 1}}
	right := &metapb.Region{Id: uint64(len(f.regions) + 1), StartKey: []byte(key), EndKey: r.EndKey,
		Peers: []*metapb.Peer{{Id: uint64(100 + len(f.regions)), StoreId: 1}}, RegionEpoch: left.RegionEpoch}
	f.regions[r.Id-1] = left
	f.regions = append(f.regions, right)
}

func (f *fakeKV) setHook(h func(method string, req any) time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

var errFake = errors.New("fake")
