package txn

import (
	"context"
	"errors"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/pdpb"
)

// PD is what Storage needs from the placement driver; *pdclient.Client
// satisfies it (and so does store/storetest's Store, in tests).
type PD interface {
	Oracle
	AllocID(ctx context.Context, count uint32) (uint64, error)
	SetGCConfig(ctx context.Context, lifeTime, runInterval time.Duration) (*pdpb.GCConfig, error)
	ScanRegions(ctx context.Context, start, end []byte, limit int) ([]*pdpb.RegionStat, error)
	SetAffinityTables(ctx context.Context, add, remove []int64) ([]int64, error)
	AffinityGroups(ctx context.Context, tableIDs []int64) ([]*pdpb.AffinityGroup, error)
}

var _ PD = (*pdclient.Client)(nil)

// Storage is the production kv.Storage of a SQL node: timestamps and ids
// from PD, data through the KV client and the transaction client. Its errors
// are the ones kv.Storage documents (mapErr).
type Storage struct {
	pd  PD
	kv  *kvclient.Client
	txn *Client
}

// NewStorage returns the Storage over pd, kv and the transaction client
// txn (built over the same kv).
func NewStorage(pd PD, kv *kvclient.Client, txn *Client) *Storage {
	return &Storage{pd: pd, kv: kv, txn: txn}
}

var _ kv.Storage = (*Storage)(nil)

func (s *Storage) GetTS(ctx context.Context) (uint64, error) {
	ts, err := s.pd.GetTS(ctx)
	return ts, mapErr(err)
}

func (s *Storage) AllocID(ctx context.Context, count uint32) (uint64, error) {
	id, err := s.pd.AllocID(ctx, count)
	return id, mapErr(err)
}

func (s *Storage) Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error) {
	// Locks met (e.g. secondaries of a transaction committing across
	// regions) are resolved as the transaction client's reads do, then the
	// request is sent again.
	bo := s.kv.NewBackoffer()
	var resolved []uint64
	for {
		resps, err := s.kv.CoprocessorResolved(ctx, dag, ranges, ts, resolved)
		var le *kvclient.LockedError
		if !errors.As(err, &le) {
			return resps, mapErr(err)
		}
		res, rerr := s.txn.Resolver().Resolve(ctx, bo, ts, []*kvrpcpb.LockInfo{le.Lock})
		if rerr != nil {
			return nil, mapErr(rerr)
		}
		resolved = append(resolved, res.Skip...)
		if res.Wait {
			if err := bo.Backoff(ctx, err); err != nil {
				return nil, mapErr(err)
			}
		}
	}
}

// Begin starts a transaction (its errors already are the sql package's).
func (s *Storage) Begin(ctx context.Context, opts kv.TxnOptions) (kv.Txn, error) {
	t, err := s.txn.Begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// GCConfig implements kv.GCSettings: the cluster's GC settings in PD.
func (s *Storage) GCConfig(ctx context.Context) (lifeTime, runInterval time.Duration, err error) {
	c, err := s.pd.SetGCConfig(ctx, 0, 0) // both zero: a read
	if err != nil {
		return 0, 0, mapErr(err)
	}
	return time.Duration(c.GetLifeTimeMs()) * time.Millisecond, time.Duration(c.GetRunIntervalMs()) * time.Millisecond, nil
}

// SetGCConfig implements kv.GCSettings.
func (s *Storage) SetGCConfig(ctx context.Context, lifeTime, runInterval time.Duration) error {
	_, err := s.pd.SetGCConfig(ctx, lifeTime, runInterval)
	return mapErr(err)
}

var _ kv.RegionAdmin = (*Storage)(nil)

func (s *Storage) SplitRegions(ctx context.Context, keys [][]byte) (int, error) {
	n, err := s.kv.SplitRegions(ctx, keys)
	return n, mapErr(err)
}

func (s *Storage) ScanRegions(ctx context.Context, start, end []byte) ([]kv.RegionInfo, error) {
	stats, err := s.pd.ScanRegions(ctx, start, end, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]kv.RegionInfo, 0, len(stats))
	for _, st := range stats {
		r := st.GetRegion()
		info := kv.RegionInfo{
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

var _ kv.AffinityAdmin = (*Storage)(nil)

func (s *Storage) SetAffinityTables(ctx context.Context, add, remove []int64) error {
	_, err := s.pd.SetAffinityTables(ctx, add, remove)
	return mapErr(err)
}

func (s *Storage) AffinityGroups(ctx context.Context, tableIDs []int64) ([]kv.AffinityGroup, error) {
	gs, err := s.pd.AffinityGroups(ctx, tableIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]kv.AffinityGroup, 0, len(gs))
	for _, g := range gs {
		out = append(out, kv.AffinityGroup{
			TableID: g.GetTableId(), Configured: g.GetConfigured(),
			LeaderStoreID: g.GetLeaderStoreId(), VoterStoreIDs: g.GetVoterStoreIds(), Phase: g.GetPhase(),
			RegionCount: int(g.GetRegionCount()), AffinityRegionCount: int(g.GetAffinityRegionCount()),
		})
	}
	return out, nil
}
