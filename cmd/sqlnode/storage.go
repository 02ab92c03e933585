package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	kvclient "github.com/stratadb/strata/kv/client"
	"github.com/stratadb/strata/kv/client/txn"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql"
)

// kvStorage is the production sql.Storage: timestamps and ids from PD, data
// through the KV client. It translates the KV client's errors into the ones
// sql.Storage documents.
type kvStorage struct {
	pd  *pdclient.Client
	kv  *kvclient.Client
	txn *txn.Client
}

var _ sql.Storage = (*kvStorage)(nil)

func (s *kvStorage) GetTS(ctx context.Context) (uint64, error) {
	ts, err := s.pd.GetTS(ctx)
	return ts, translate(err)
}

func (s *kvStorage) AllocID(ctx context.Context, count uint32) (uint64, error) {
	id, err := s.pd.AllocID(ctx, count)
	return id, translate(err)
}

// Get and Scan (catalog, schema version and privilege reads) read at ts
// through a read-only snapshot of the transaction client, so that a lock
// they meet is resolved as a transaction's read resolves it: a schema or
// privilege change committing, or left behind by a SQL node that died
// while committing it, must not fail every other node's reads.
func (s *kvStorage) Get(ctx context.Context, key []byte, ts uint64) ([]byte, bool, error) {
	t, err := s.txn.Begin(ctx, sql.TxnOptions{StartTS: ts, ReadOnly: true})
	if err != nil {
		return nil, false, translate(err)
	}
	defer func() { _ = t.Rollback(ctx) }()
	v, ok, err := t.Get(ctx, key)
	return v, ok, translate(err)
}

func (s *kvStorage) Scan(ctx context.Context, start, end []byte, ts uint64, limit int) ([]*kvrpcpb.KvPair, error) {
	t, err := s.txn.Begin(ctx, sql.TxnOptions{StartTS: ts, ReadOnly: true})
	if err != nil {
		return nil, translate(err)
	}
	defer func() { _ = t.Rollback(ctx) }()
	pairs, err := t.Scan(ctx, start, end, limit, false)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*kvrpcpb.KvPair, len(pairs))
	for i, p := range pairs {
		out[i] = &kvrpcpb.KvPair{Key: p.Key, Value: p.Value}
	}
	return out, nil
}

// Commit runs muts as one optimistic transaction that read at startTS
// (kv/client/txn: 1PC when they lie in one region, else async commit or
// 2PC, atomic across regions). The commit timestamp is the protocol's,
// not commitTS: it must be above every read the stores served.
func (s *kvStorage) Commit(ctx context.Context, muts []*kvrpcpb.Mutation, startTS, _ uint64) error {
	return s.txn.CommitMutations(ctx, muts, startTS, sql.TxnOptions{OnePC: true, AsyncCommit: true})
}

func (s *kvStorage) Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error) {
	// Locks met (e.g. secondaries of a transaction committing across
	// regions) are resolved as the transaction client's reads do, then the
	// request is sent again.
	bo := s.kv.NewBackoffer()
	var resolved []uint64
	for {
		resps, err := s.kv.CoprocessorResolved(ctx, dag, ranges, ts, resolved)
		var le *kvclient.LockedError
		if !errors.As(err, &le) {
			return resps, translate(err)
		}
		res, rerr := s.txn.Resolver().Resolve(ctx, bo, ts, []*kvrpcpb.LockInfo{le.Lock})
		if rerr != nil {
			return nil, translate(rerr)
		}
		resolved = append(resolved, res.Skip...)
		if res.Wait {
			if err := bo.Backoff(ctx, err); err != nil {
				return nil, translate(err)
			}
		}
	}
}

// Begin starts a transaction through kv/client/txn (its errors already
// are the sql package's).
func (s *kvStorage) Begin(ctx context.Context, opts sql.TxnOptions) (sql.Txn, error) {
	t, err := s.txn.Begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kvclient.ErrPartialCommit) {
		// Some regions committed: not a clean failure the statement could
		// be retried after, whatever the failing region said.
		return fmt.Errorf("%w: %v", sql.ErrUndetermined, err)
	}
	var ae *kvclient.AlreadyExistError
	if errors.As(err, &ae) {
		return &sql.KeyExistsError{Key: ae.Key}
	}
	var wc *kvclient.WriteConflictError
	if errors.As(err, &wc) {
		return &sql.WriteConflictError{StartTS: wc.StartTS, ConflictCommitTS: wc.ConflictTS, Key: wc.Key}
	}
	switch {
	case errors.Is(err, kvclient.ErrUndetermined):
		return fmt.Errorf("%w: %v", sql.ErrUndetermined, err)
	case errors.Is(err, kvclient.ErrRegionUnavailable):
		return fmt.Errorf("%w: %v", sql.ErrRegionUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return err
}

// GCConfig implements sql.GCSettings: the cluster's GC settings in PD.
func (s *kvStorage) GCConfig(ctx context.Context) (lifeTime, runInterval time.Duration, err error) {
	c, err := s.pd.SetGCConfig(ctx, 0, 0) // both zero: a read
	if err != nil {
		return 0, 0, translate(err)
	}
	return time.Duration(c.GetLifeTimeMs()) * time.Millisecond, time.Duration(c.GetRunIntervalMs()) * time.Millisecond, nil
}

// SetGCConfig implements sql.GCSettings.
func (s *kvStorage) SetGCConfig(ctx context.Context, lifeTime, runInterval time.Duration) error {
	_, err := s.pd.SetGCConfig(ctx, lifeTime, runInterval)
	return translate(err)
}

var _ sql.RegionAdmin = (*kvStorage)(nil)

func (s *kvStorage) SplitRegions(ctx context.Context, keys [][]byte) (int, error) {
	n, err := s.kv.SplitRegions(ctx, keys)
	return n, translate(err)
}

func (s *kvStorage) ScanRegions(ctx context.Context, start, end []byte) ([]sql.RegionInfo, error) {
	stats, err := s.pd.ScanRegions(ctx, start, end, 0)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]sql.RegionInfo, 0, len(stats))
	for _, st := range stats {
		r := st.GetRegion()
		info := sql.RegionInfo{
			ID: r.GetId(), StartKey: r.GetStartKey(), EndKey: r.GetEndKey(),
			LeaderID: st.GetLeader().GetId(), LeaderStoreID: st.GetLeader().GetStoreId(),
			WrittenBytes: st.GetBytesWritten(), ReadBytes: st.GetBytesRead(),
			ApproximateSize: st.GetApproximateSize(), ApproximateKeys: st.GetApproximateKeys(),
		}
		for _, p := range r.GetPeers() {
			info.PeerIDs = append(info.PeerIDs, p.GetId())
		}
		out = append(out, info)
	}
	return out, nil
}
