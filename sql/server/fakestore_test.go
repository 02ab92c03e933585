package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/coprocessor"
)

// memStore is an in-memory kv.Storage for tests only: MVCC versions per
// key, Insert/conflict checks like the real KV layer, and a coprocessor that
// splits its answer into "regions" of regionRows rows so cross-region
// merging is exercised.
type memStore struct {
	mu         sync.Mutex
	ts         uint64
	id         uint64
	data       map[string][]version // newest last
	regionRows int
	// failCommit is returned by the next commit of a transaction (memTxn)
	// that writes outside the catalog's 'm' keys: the catalog's and the DDL
	// owner's transactions, which run in the background, never take it.
	failCommit error
	// failCommitTimes makes failCommit stick for that many Commits (0: once).
	failCommitTimes int

	// failLock is returned by the next failLockTimes pessimistic LockKeys.
	failLock      error
	failLockTimes int

	locks    map[string]*memLock
	waitsFor map[*memTxn]*memTxn // wait-for graph of lock waiters
	// Counters tests read: transactions begun and committed with writes,
	// deadlocks detected.
	begun, commits, deadlocks int
}

type version struct {
	commitTS uint64
	value    []byte // nil: deleted
}

func newMemStore() *memStore { return &memStore{data: map[string][]version{}, regionRows: 3} }

var _ kv.Storage = (*memStore)(nil)

func (m *memStore) GetTS(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ts++
	return m.ts, nil
}

func (m *memStore) AllocID(_ context.Context, count uint32) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := m.id + 1
	m.id += uint64(count)
	return first, nil
}

func (m *memStore) readLocked(key string, ts uint64) ([]byte, bool) {
	vs := m.data[key]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].commitTS <= ts {
			return vs[i].value, vs[i].value != nil
		}
	}
	return nil, false
}

func (m *memStore) Get(_ context.Context, key []byte, ts uint64) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.readLocked(string(key), ts)
	return append([]byte(nil), v...), ok, nil
}

func (m *memStore) scanLocked(start, end []byte, ts uint64, limit int) []*kvrpcpb.KvPair {
	keys := make([]string, 0, len(m.data))
	for k := range m.data {
		if bytes.Compare([]byte(k), start) >= 0 && (len(end) == 0 || bytes.Compare([]byte(k), end) < 0) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []*kvrpcpb.KvPair
	for _, k := range keys {
		if v, ok := m.readLocked(k, ts); ok {
			out = append(out, &kvrpcpb.KvPair{Key: []byte(k), Value: append([]byte(nil), v...)})
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out
}

func (m *memStore) Scan(_ context.Context, start, end []byte, ts uint64, limit int) ([]*kvrpcpb.KvPair, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scanLocked(start, end, ts, limit), nil
}

// Coprocessor runs dag with the stores' own coprocessor (pushed
// selections, limits, aggregations) over the pairs in ranges, cut into
// "regions" of regionRows pairs so that the SQL node merges several
// responses.
func (m *memStore) Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var pairs []*kvrpcpb.KvPair
	for _, r := range ranges {
		limit := 0
		if dag.GetPagingSize() > 0 {
			// One page of the first "region" (and the key after it) is all
			// a paging request reads, as kvclient does.
			if limit = m.regionRows + 1 - len(pairs); limit <= 0 {
				break
			}
		}
		pairs = append(pairs, m.scanLocked(r.Start, r.End, ts, limit)...)
	}
	var resps []*coprocessorpb.SelectResponse
	for i := 0; i == 0 || i < len(pairs); i += m.regionRows {
		chunk := memPairs(pairs[i:min(i+m.regionRows, len(pairs))])
		if dag.GetPagingSize() == 0 && dag.GetPageMs() > 0 {
			// A page bounded in time may end anywhere: end each after a
			// few rows and resume, as kvclient does, so that the SQL
			// node merges several pages per region.
			paged := proto.Clone(dag).(*coprocessorpb.DAGRequest)
			paged.PageScanRows = 2
			for rest := chunk; ; {
				resp, err := coprocessor.ExecuteLookUp(rest, memRows{m: m, ts: ts}, paged, coprocessor.RangesFromProto(ranges))
				if err != nil {
					return nil, err
				}
				resps = append(resps, resp)
				resume := resp.ResumeKey
				if resume == nil {
					break
				}
				resp.ResumeKey = nil
				var next memPairs
				for _, p := range rest {
					if c := bytes.Compare(p.Key, resume); (c >= 0) != (dagDesc(dag)) {
						next = append(next, p)
					}
				}
				rest = next
			}
			continue
		}
		resp, err := coprocessor.ExecuteLookUp(chunk, memRows{m: m, ts: ts}, dag, coprocessor.RangesFromProto(ranges))
		if err != nil {
			return nil, err
		}
		resps = append(resps, resp)
		if dag.GetPagingSize() > 0 {
			if resp.ResumeKey == nil && i+m.regionRows < len(pairs) {
				resp.ResumeKey = pairs[i+m.regionRows].Key
			}
			break
		}
	}
	return resps, nil
}

func dagDesc(dag *coprocessorpb.DAGRequest) bool {
	e := dag.GetExecutors()[0]
	return e.GetTblScan().GetDesc() || e.GetIdxScan().GetDesc()
}

// memRows is the coprocessor.RowReader of an IndexLookUp: as if the store
// led the regions of even handles only, it reads those rows and leaves the
// others to the SQL node. m.mu is held.
type memRows struct {
	m  *memStore
	ts uint64
}

func (r memRows) LookUp(keys, vals [][]byte, local []bool) error {
	for i, k := range keys {
		if k[len(k)-1]%2 != 0 {
			continue
		}
		local[i] = true
		if v, ok := r.m.readLocked(string(k), r.ts); ok {
			vals[i] = v
		}
	}
	return nil
}

// memPairs is a coprocessor.Scanner over sorted pairs.
type memPairs []*kvrpcpb.KvPair

func (ps memPairs) Scan(start, end []byte, _, reverse bool, fn func(key, value []byte) bool) error {
	in := func(k []byte) bool {
		return bytes.Compare(k, start) >= 0 && (len(end) == 0 || bytes.Compare(k, end) < 0)
	}
	for i := range ps {
		p := ps[i]
		if reverse {
			p = ps[len(ps)-1-i]
		}
		if in(p.Key) && !fn(p.Key, p.Value) {
			return nil
		}
	}
	return nil
}

// memLock is a pessimistic row lock in memStore; released is closed when
// its owner ends.
type memLock struct {
	owner    *memTxn
	released chan struct{}
}

// fakeDefaultLockWait is the lock wait when LockOptions gives none.
const fakeDefaultLockWait = time.Second

// Begin implements kv.Storage with a test-only transaction: a snapshot at
// start_ts (a fresh one per statement in READ-COMMITTED), writes buffered
// until Commit, pessimistic row locks that block (with timeout, NOWAIT and
// deadlock detection over the wait-for graph), and at commit a conflict
// check of every written key not locked pessimistically.
func (m *memStore) Begin(ctx context.Context, opts kv.TxnOptions) (kv.Txn, error) {
	t := &memTxn{m: m, opts: opts, buf: map[string]bufEntry{}, locked: map[string]bool{}, marked: map[string]bool{},
		savepoints: map[string]map[string]bufEntry{}}
	if opts.StartTS != 0 {
		t.startTS = opts.StartTS
	} else {
		ts, err := m.GetTS(ctx)
		if err != nil {
			return nil, err
		}
		t.startTS = ts
	}
	t.readTS = t.startTS
	m.mu.Lock()
	m.begun++
	m.mu.Unlock()
	return t, nil
}

type bufEntry struct {
	value  []byte // nil: delete
	insert bool   // assert no live value at lock / commit time
}

type memTxn struct {
	m           *memStore
	opts        kv.TxnOptions
	startTS     uint64
	readTS      uint64
	forUpdateTS uint64
	buf         map[string]bufEntry
	stmtBuf     map[string]bufEntry // buf at StmtBegin
	savepoints  map[string]map[string]bufEntry
	locked      map[string]bool // pessimistic locks held (guarded by m.mu)
	marked      map[string]bool // optimistic FOR UPDATE keys: conflict-checked at commit
	done        bool
}

func cloneBuf(b map[string]bufEntry) map[string]bufEntry {
	c := make(map[string]bufEntry, len(b))
	for k, v := range b {
		c[k] = v
	}
	return c
}

func (t *memTxn) StartTS() uint64     { return t.startTS }
func (t *memTxn) ForUpdateTS() uint64 { return t.forUpdateTS }

// SetCommitGuard: the fake commits at once, never above a guard's bound.
func (t *memTxn) SetCommitGuard(kv.CommitGuard) {}

func (t *memTxn) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	if e, ok := t.buf[string(key)]; ok {
		return append([]byte(nil), e.value...), e.value != nil, nil
	}
	return t.m.Get(ctx, key, t.readTS)
}

func (t *memTxn) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, k := range keys {
		v, ok, err := t.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out[string(k)] = v
		}
	}
	return out, nil
}

func inRange(k string, start, end []byte) bool {
	return bytes.Compare([]byte(k), start) >= 0 && (len(end) == 0 || bytes.Compare([]byte(k), end) < 0)
}

func (t *memTxn) Scan(ctx context.Context, start, end []byte, limit int, reverse bool) ([]kv.KvPair, error) {
	pairs, err := t.m.Scan(ctx, start, end, t.readTS, 0)
	if err != nil {
		return nil, err
	}
	merged := map[string][]byte{}
	for _, p := range pairs {
		merged[string(p.Key)] = p.Value
	}
	for k, e := range t.buf {
		if !inRange(k, start, end) {
			continue
		}
		if e.value == nil {
			delete(merged, k)
		} else {
			merged[k] = append([]byte(nil), e.value...)
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if reverse {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]kv.KvPair, len(keys))
	for i, k := range keys {
		out[i] = kv.KvPair{Key: []byte(k), Value: merged[k]}
	}
	return out, nil
}

func (t *memTxn) Set(key, value []byte) error {
	t.buf[string(key)] = bufEntry{value: append([]byte{}, value...)}
	return nil
}

func (t *memTxn) Delete(key []byte) error {
	t.buf[string(key)] = bufEntry{}
	return nil
}

func (t *memTxn) Insert(key, value []byte) error {
	e, ok := t.buf[string(key)]
	if ok && e.value != nil {
		return &kv.KeyExistsError{Key: append([]byte(nil), key...)}
	}
	// After our own delete the key is ours to write: no assertion.
	t.buf[string(key)] = bufEntry{value: append([]byte{}, value...), insert: !ok}
	return nil
}

func (t *memTxn) LockKeys(ctx context.Context, opts kv.LockOptions, keys ...[]byte) ([][]byte, error) {
	if !t.opts.Pessimistic {
		for _, k := range keys {
			t.marked[string(k)] = true
		}
		return nil, nil
	}
	t.m.mu.Lock()
	if err := t.m.failLock; err != nil {
		if t.m.failLockTimes--; t.m.failLockTimes <= 0 {
			t.m.failLock = nil
		}
		t.m.mu.Unlock()
		return nil, err
	}
	t.m.mu.Unlock()
	ts, err := t.m.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	t.forUpdateTS = ts
	wait := fakeDefaultLockWait
	if opts.WaitTimeoutMs > 0 {
		wait = time.Duration(opts.WaitTimeoutMs) * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	for _, k := range keys {
		if err := t.m.lock(ctx, t, string(k), opts.NoWait, deadline); err != nil {
			return nil, err
		}
	}
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, live := m.readLocked(string(k), math.MaxUint64)
		if e := t.buf[string(k)]; e.insert && live {
			return nil, &kv.KeyExistsError{Key: append([]byte(nil), k...)}
		}
		if live && opts.ReturnValues {
			vals[i] = append([]byte{}, v...)
		}
	}
	return vals, nil
}

// lock takes key's row lock for t, waiting for its owner until deadline.
func (m *memStore) lock(ctx context.Context, t *memTxn, key string, nowait bool, deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		l := m.locks[key]
		if l == nil {
			if m.locks == nil {
				m.locks = map[string]*memLock{}
			}
			m.locks[key] = &memLock{owner: t, released: make(chan struct{})}
			t.locked[key] = true
			return nil
		}
		if l.owner == t {
			return nil
		}
		if nowait {
			return &kv.LockConflictError{Key: []byte(key)}
		}
		// Waiting for l.owner closes a cycle when l.owner (transitively)
		// waits for t.
		o := l.owner
		for i := 0; o != nil && i <= len(m.waitsFor); i++ {
			if o == t {
				m.deadlocks++
				return &kv.DeadlockError{Key: []byte(key)}
			}
			o = m.waitsFor[o]
		}
		if m.waitsFor == nil {
			m.waitsFor = map[*memTxn]*memTxn{}
		}
		m.waitsFor[t] = l.owner
		timer := time.NewTimer(time.Until(deadline))
		m.mu.Unlock()
		var err error
		select {
		case <-l.released:
		case <-timer.C:
			err = kv.ErrLockWaitTimeout
		case <-ctx.Done():
			err = ctx.Err()
		}
		timer.Stop()
		m.mu.Lock()
		delete(m.waitsFor, t)
		if err != nil {
			return err
		}
	}
}

// release frees t's locks and wakes their waiters. Called with m.mu held.
func (m *memStore) releaseLocked(t *memTxn) {
	for k := range t.locked {
		if l := m.locks[k]; l != nil && l.owner == t {
			close(l.released)
			delete(m.locks, k)
		}
	}
	t.locked = map[string]bool{}
}

func (t *memTxn) Dirty(start, end []byte) bool {
	for k := range t.buf {
		if inRange(k, start, end) {
			return true
		}
	}
	return false
}

func (t *memTxn) StmtBegin() {
	t.stmtBuf = cloneBuf(t.buf)
	if t.opts.Isolation == kv.ReadCommitted {
		t.readTS, _ = t.m.GetTS(context.Background())
	}
}

func (t *memTxn) StmtCommit() { t.stmtBuf = nil }

func (t *memTxn) StmtRollback() {
	if t.stmtBuf != nil {
		t.buf, t.stmtBuf = t.stmtBuf, nil
	}
}

func (t *memTxn) Savepoint(name string) { t.savepoints[name] = cloneBuf(t.buf) }

func (t *memTxn) RollbackToSavepoint(name string) error {
	sp, ok := t.savepoints[name]
	if !ok {
		return fmt.Errorf("memtxn: no savepoint %q", name)
	}
	t.buf = cloneBuf(sp)
	return nil
}

func (t *memTxn) ReleaseSavepoint(name string) error {
	if _, ok := t.savepoints[name]; !ok {
		return fmt.Errorf("memtxn: no savepoint %q", name)
	}
	delete(t.savepoints, name)
	return nil
}

func (t *memTxn) Commit(ctx context.Context) error {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.done {
		return errors.New("memtxn: transaction already ended")
	}
	t.done = true
	defer m.releaseLocked(t)
	if err := m.failCommit; err != nil && writesData(t.buf) {
		if m.failCommitTimes--; m.failCommitTimes <= 0 {
			m.failCommit = nil
		}
		return err
	}
	check := func(k string) error {
		if t.locked[k] {
			return nil
		}
		if l := m.locks[k]; l != nil && l.owner != t {
			return &kv.WriteConflictError{StartTS: t.startTS, ConflictStartTS: l.owner.startTS, Key: []byte(k)}
		}
		vs := m.data[k]
		if n := len(vs); n > 0 && vs[n-1].commitTS > t.startTS {
			return &kv.WriteConflictError{StartTS: t.startTS, ConflictCommitTS: vs[n-1].commitTS, Key: []byte(k)}
		}
		return nil
	}
	for k, e := range t.buf {
		if err := check(k); err != nil {
			return err
		}
		if _, live := m.readLocked(k, math.MaxUint64); e.insert && live {
			return &kv.KeyExistsError{Key: []byte(k)}
		}
	}
	for k := range t.marked {
		if err := check(k); err != nil {
			return err
		}
	}
	if len(t.buf) == 0 {
		return nil
	}
	m.ts++
	for k, e := range t.buf {
		m.data[k] = append(m.data[k], version{commitTS: m.ts, value: e.value})
	}
	m.commits++
	return nil
}

// writesData reports whether buf writes a key outside the catalog's 'm'
// key space.
func writesData(buf map[string]bufEntry) bool {
	for k := range buf {
		if !strings.HasPrefix(k, "m") {
			return true
		}
	}
	return false
}

func (t *memTxn) Rollback(context.Context) error {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	t.done = true
	m.releaseLocked(t)
	return nil
}
