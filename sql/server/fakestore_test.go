package server_test

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql"
)

// memStore is an in-memory sql.Storage for tests only: MVCC versions per
// key, Insert/conflict checks like the real KV layer, and a coprocessor that
// splits its answer into "regions" of regionRows rows so cross-region
// merging is exercised.
type memStore struct {
	mu         sync.Mutex
	ts         uint64
	id         uint64
	data       map[string][]version // newest last
	regionRows int
	failCommit error // returned by the next Commit when set
	// failCommitTimes makes failCommit stick for that many Commits (0: once).
	failCommitTimes int
}

type version struct {
	commitTS uint64
	value    []byte // nil: deleted
}

func newMemStore() *memStore { return &memStore{data: map[string][]version{}, regionRows: 3} }

var _ sql.Storage = (*memStore)(nil)

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

func (m *memStore) Commit(_ context.Context, muts []*kvrpcpb.Mutation, startTS, commitTS uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failCommit; err != nil {
		if m.failCommitTimes--; m.failCommitTimes <= 0 {
			m.failCommit = nil
		}
		return err
	}
	for _, mu := range muts {
		vs := m.data[string(mu.Key)]
		if n := len(vs); n > 0 && vs[n-1].commitTS > startTS {
			return &sql.WriteConflictError{StartTS: startTS, ConflictCommitTS: vs[n-1].commitTS, Key: mu.Key}
		}
		if mu.Op == kvrpcpb.Op_Insert {
			if _, ok := m.readLocked(string(mu.Key), commitTS); ok {
				return &sql.KeyExistsError{Key: mu.Key}
			}
		}
	}
	for _, mu := range muts {
		v := version{commitTS: commitTS}
		if mu.Op != kvrpcpb.Op_Del {
			v.value = append([]byte{}, mu.Value...)
		}
		m.data[string(mu.Key)] = append(m.data[string(mu.Key)], v)
	}
	return nil
}

func (m *memStore) Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var pairs []*kvrpcpb.KvPair
	for _, r := range ranges {
		pairs = append(pairs, m.scanLocked(r.Start, r.End, ts, 0)...)
	}
	tid := dag.Executors[0].TblScan.TableId
	start, end := tablecodec.RecordRange(tid)
	var resps []*coprocessorpb.SelectResponse
	for i := 0; i == 0 || i < len(pairs); i += m.regionRows {
		chunk := pairs[i:min(i+m.regionRows, len(pairs))]
		resp := &coprocessorpb.SelectResponse{}
		for _, p := range chunk {
			if bytes.Compare(p.Key, start) >= 0 && bytes.Compare(p.Key, end) < 0 {
				resp.Rows = append(resp.Rows, &coprocessorpb.Row{Key: p.Key, Value: p.Value})
			}
		}
		for _, ex := range dag.Executors[1:] {
			switch ex.Tp {
			case coprocessorpb.ExecType_TypeLimit:
				if uint64(len(resp.Rows)) > ex.Limit.Limit {
					resp.Rows = resp.Rows[:ex.Limit.Limit]
				}
			case coprocessorpb.ExecType_TypeAggregation:
				resp.AggValues = []int64{int64(len(resp.Rows))}
				resp.Rows = nil
			}
		}
		resps = append(resps, resp)
	}
	return resps, nil
}

// Begin is not supported by the fake yet (the SQL session work replaces
// this fake).
func (m *memStore) Begin(context.Context, sql.TxnOptions) (sql.Txn, error) {
	return nil, errors.New("memStore: transactions not supported")
}
