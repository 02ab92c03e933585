package server

import (
	"context"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

// rowLookup is the coprocessor.RowReader of one request: it reads the rows
// of an IndexLookUp that lie in regions this store leads, as a KvBatchGet
// on that region would read them. Per batch it checks each row key's region
// on this store (raftstore.LeasedRegion: the current region, led here
// with a valid lease, so the key is in the region's current epoch; a
// leader without a fresh lease confirms with ReadIndex), waits
// for the in-memory locks of writes committing at or below start_ts and
// raises max_ts (concurrency manager, as every read does), then takes one
// engine snapshot and reads every local key at start_ts with Percolator
// lock checks. Keys in regions led elsewhere, or whose lease is not fresh,
// are left to the SQL node, and so are those of a region whose peer
// stopped leading before the snapshot was taken (txn.ReadCheck).
type rowLookup struct {
	s    *Service
	ctx  context.Context
	rctx *kvrpcpb.Context
	ts   uint64
	// leased holds the regions found leased during the current batch.
	leased []leasedRegion
}

// leasedRegion is a region found readable here, with the check its
// leadership must still pass once the batch took its snapshot.
type leasedRegion struct {
	region *metapb.Region
	check  txn.ReadCheck
}

// region returns the region of key that this store may read now, or nil.
// A leader whose lease is not fresh confirms its leadership with a
// ReadIndex (which renews the lease), once per region and batch.
func (l *rowLookup) region(key []byte) (*metapb.Region, error) {
	for _, r := range l.leased {
		if regionkeys.KeyIn(key, r.region) {
			return r.region, nil
		}
	}
	led := l.s.store.LedRegionAt(key)
	if led == nil {
		return nil, nil
	}
	check := txn.NewReadCheck(l.s.eng, nil, led.GetId())
	r := l.s.store.LeasedRegion(key)
	if r == nil {
		region, rerr, err := l.s.store.ReadIndex(l.ctx, &kvrpcpb.Context{RegionId: led.GetId(), RegionEpoch: led.GetRegionEpoch()})
		if err != nil {
			return nil, err
		}
		if rerr != nil || !regionkeys.KeyIn(key, region) {
			return nil, nil
		}
		r = region
	}
	l.leased = append(l.leased, leasedRegion{region: r, check: check})
	return r, nil
}

// LookUp implements coprocessor.RowReader.
func (l *rowLookup) LookUp(keys, vals [][]byte, local []bool) error {
	clear(l.leased)
	l.leased = l.leased[:0]
	n := 0
	for i, k := range keys {
		r, err := l.region(k)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if err := l.s.cm.ReadKey(l.ctx, k, l.ts); err != nil {
			return err
		}
		local[i] = true
		n++
	}
	if n == 0 {
		return nil
	}
	// The snapshot is taken after every lease check of the batch: it holds
	// what each region acknowledged before the check.
	snap := readView(l.s.store.Engine())
	defer snap.Close()
	// A region whose peer stopped leading since its check (a wait for an
	// in-flight write may have ended because of it) is not read here.
	for _, r := range l.leased {
		if r.check.Gone() == nil {
			continue
		}
		for i, k := range keys {
			if local[i] && regionkeys.KeyIn(k, r.region) {
				local[i] = false
				n--
			}
		}
	}
	if n == 0 {
		return nil
	}
	return ReadLocalRows(snap, l.rctx, l.ts, keys, vals, local)
}

// ReadLocalRows reads the keys marked local from snap at ts, with the
// lock checks of rctx's read (a lock met is an *mvcc.KeyError), into vals
// (an empty slice for an empty value, nil for no row): the read of an
// IndexLookUp's rows in regions this store leads, shared with
// store/storetest.
func ReadLocalRows(snap txn.Snapshot, rctx *kvrpcpb.Context, ts uint64, keys, vals [][]byte, local []bool) error {
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(rctx, ts))
	defer sr.Close()
	for i, k := range keys {
		if !local[i] {
			continue
		}
		v, found, err := sr.Get(k)
		if err != nil {
			return err
		}
		if found {
			if v == nil {
				v = []byte{}
			}
			vals[i] = v
		}
	}
	return nil
}
