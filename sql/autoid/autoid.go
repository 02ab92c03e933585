package autoid

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/tablecodec"
)

// AutoIncStep is how many AUTO_INCREMENT values one SQL node reserves for a
// table at a time (TiDB's autoid step, smaller).
const AutoIncStep = 1000

// AutoIncAllocator hands out AUTO_INCREMENT values per table, MySQL-style:
// a new table starts at 1 and values only grow. The largest value reserved
// for table t is a KV key ('m' + "AutoID" + t), advanced by AutoIncStep in a
// small optimistic transaction of its own (not the statement's: a rolled-back
// INSERT does not give its values back, as in InnoDB); each SQL node hands
// out its reserved range from memory, so values are unique cluster-wide but
// two nodes interleave ranges (1..1000 on one, 1001..2000 on the next).
// Explicit values rebase the allocator (Rebase) so later automatic values
// are larger. Safe for concurrent use.
type AutoIncAllocator struct {
	store  kv.Storage
	mu     sync.Mutex
	tables map[int64]*autoRange
}

type autoRange struct {
	mu        sync.Mutex
	next, end int64 // [next, end) reserved by this node; next == end: none
}

// NewAutoIncAllocator returns an allocator over store.
func NewAutoIncAllocator(store kv.Storage) *AutoIncAllocator {
	return &AutoIncAllocator{store: store, tables: map[int64]*autoRange{}}
}

// AutoIncKey is the KV key holding the largest AUTO_INCREMENT value
// reserved for tableID.
func AutoIncKey(tableID int64) []byte {
	return codec.EncodeInt(codec.EncodeBytes([]byte{tablecodec.MetaPrefix}, []byte("AutoID")), tableID)
}

func (a *AutoIncAllocator) rangeOf(tableID int64) *autoRange {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.tables[tableID]
	if r == nil {
		r = &autoRange{}
		a.tables[tableID] = r
	}
	return r
}

// Alloc fills out with consecutive values for tableID.
func (a *AutoIncAllocator) Alloc(ctx context.Context, tableID int64, out []int64) error {
	r := a.rangeOf(tableID)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int64(len(out))
	if r.end-r.next < n {
		first, err := a.reserve(ctx, tableID, 0, max(AutoIncStep, n))
		if err != nil {
			return err
		}
		r.next, r.end = first, first+max(AutoIncStep, n)
	}
	for i := range out {
		out[i] = r.next + int64(i)
	}
	r.next += n
	return nil
}

// Rebase makes every later value of tableID larger than v (an explicit
// value a statement wrote into the AUTO_INCREMENT column, or the
// AUTO_INCREMENT=N table option minus one).
func (a *AutoIncAllocator) Rebase(ctx context.Context, tableID, v int64) error {
	if v <= 0 {
		return nil
	}
	r := a.rangeOf(tableID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if v < r.next {
		return nil
	}
	if v < r.end {
		r.next = v + 1
		return nil
	}
	if _, err := a.reserve(ctx, tableID, v, 0); err != nil {
		return err
	}
	r.next, r.end = 0, 0
	return nil
}

// Peek returns the value the next automatic insert on this node would get
// (information_schema.TABLES.AUTO_INCREMENT): the next value of this node's
// reserved range, else the stored bound + 1.
func (a *AutoIncAllocator) Peek(ctx context.Context, tableID int64) (int64, error) {
	r := a.rangeOf(tableID)
	r.mu.Lock()
	next, end := r.next, r.end
	r.mu.Unlock()
	if next < end {
		return next, nil
	}
	ts, err := a.store.GetTS(ctx)
	if err != nil {
		return 0, err
	}
	v, found, err := kv.GetAt(ctx, a.store, AutoIncKey(tableID), ts)
	if err != nil || !found {
		return 1, err
	}
	cur, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("autoid: AUTO_INCREMENT bound of table %d: %w", tableID, err)
	}
	return cur + 1, nil
}

// reserve raises the stored bound to max(bound, floor) + count and returns
// the first value of the reserved range (old bound + 1). Concurrent
// reservations conflict on the key and are retried.
func (a *AutoIncAllocator) reserve(ctx context.Context, tableID, floor, count int64) (int64, error) {
	key := AutoIncKey(tableID)
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		txn, err := a.store.Begin(ctx, kv.TxnOptions{})
		if err != nil {
			return 0, fmt.Errorf("autoid: AUTO_INCREMENT of table %d: %w", tableID, err)
		}
		cur := int64(0)
		v, found, err := txn.Get(ctx, key)
		if err == nil && found {
			cur, err = strconv.ParseInt(string(v), 10, 64)
		}
		if err != nil {
			_ = txn.Rollback(ctx)
			return 0, fmt.Errorf("autoid: AUTO_INCREMENT of table %d: %w", tableID, err)
		}
		base := max(cur, floor)
		if err := txn.Set(key, []byte(strconv.FormatInt(base+count, 10))); err != nil {
			_ = txn.Rollback(ctx)
			return 0, err
		}
		err = txn.Commit(ctx)
		if err == nil {
			return base + 1, nil
		}
		var wc *kv.WriteConflictError
		if !errors.As(err, &wc) {
			return 0, fmt.Errorf("autoid: AUTO_INCREMENT of table %d: %w", tableID, err)
		}
		lastErr = err
	}
	return 0, fmt.Errorf("autoid: AUTO_INCREMENT of table %d: too many concurrent reservations: %w", tableID, lastErr)
}
