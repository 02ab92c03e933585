package kv

import (
	"context"
	"fmt"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// Reads and writes of code that runs outside a session's transaction
// (catalog, DDL, statistics, privileges, auto-id): each call opens a
// transaction of its own through Storage.Begin and ends it. Errors are
// the Txn's (see Txn and Storage).

// ReadAt runs fn in a read-only transaction reading the snapshot at ts,
// then ends it; fn must not keep t.
func ReadAt(ctx context.Context, s Storage, ts uint64, fn func(t Txn) error) error {
	t, err := s.Begin(ctx, TxnOptions{StartTS: ts, ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = t.Rollback(context.WithoutCancel(ctx)) }()
	return fn(t)
}

// GetAt reads the newest version of key committed at or before ts.
func GetAt(ctx context.Context, s Storage, key []byte, ts uint64) (value []byte, found bool, err error) {
	err = ReadAt(ctx, s, ts, func(t Txn) error {
		value, found, err = t.Get(ctx, key)
		return err
	})
	return value, found, err
}

// ScanAt reads up to limit (0: no limit) pairs of [start, end) at ts, in
// key order. An empty end means no upper bound.
func ScanAt(ctx context.Context, s Storage, start, end []byte, ts uint64, limit int) (pairs []KvPair, err error) {
	err = ReadAt(ctx, s, ts, func(t Txn) error {
		pairs, err = t.Scan(ctx, start, end, limit, false)
		return err
	})
	return pairs, err
}

// ScanPages calls fn with every pair of [start, end) that t reads, in key
// order, reading page pairs per Scan so a large range is never held at
// once; an error of fn stops the scan and is returned. fn must not keep
// the pair's slices past the page.
func ScanPages(ctx context.Context, t Txn, start, end []byte, page int, fn func(p KvPair) error) error {
	for {
		pairs, err := t.Scan(ctx, start, end, page, false)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(pairs) < page {
			return nil
		}
		last := pairs[len(pairs)-1].Key
		start = append(append(make([]byte, 0, len(last)+1), last...), 0)
	}
}

// Update runs build in a new optimistic transaction and commits what it
// buffered, 1PC when the writes lie in one region, else async commit or
// two-phase commit (atomic across regions). build reads through t (at
// t.StartTS()) or elsewhere at t.StartTS(): a key written after that by
// another transaction fails the commit with *WriteConflictError, an Insert
// of a live key with *KeyExistsError, and nothing is written. An error of
// build rolls the transaction back and is returned as is.
func Update(ctx context.Context, s Storage, build func(t Txn) error) error {
	t, err := s.Begin(ctx, TxnOptions{OnePC: true, AsyncCommit: true})
	if err != nil {
		return err
	}
	if err := build(t); err != nil {
		_ = t.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return t.Commit(ctx)
}

// Mutate buffers muts in t: Put as Set, Del as Delete, Insert as Insert.
func Mutate(t Txn, muts []*kvrpcpb.Mutation) error {
	for _, m := range muts {
		var err error
		switch m.GetOp() {
		case kvrpcpb.Op_Put:
			err = t.Set(m.GetKey(), m.GetValue())
		case kvrpcpb.Op_Del:
			err = t.Delete(m.GetKey())
		case kvrpcpb.Op_Insert:
			err = t.Insert(m.GetKey(), m.GetValue())
		default:
			err = fmt.Errorf("kv: unsupported mutation op %v", m.GetOp())
		}
		if err != nil {
			return err
		}
	}
	return nil
}
