package autoid

import (
	"context"
	"fmt"
	"sync"

	"github.com/stratadb/strata/kv"
)

// IDBatch is how many ids one AllocID call reserves.
const IDBatch = 1000

// IDAllocator hands out cluster-unique ids (row handles, AUTO_INCREMENT
// values) from batches reserved with Storage.AllocID. Safe for concurrent
// use; at most one AllocID call is in flight.
type IDAllocator struct {
	store kv.Storage
	mu    sync.Mutex
	next  uint64
	end   uint64 // exclusive
}

// NewIDAllocator returns an allocator over store.
func NewIDAllocator(store kv.Storage) *IDAllocator { return &IDAllocator{store: store} }

// Alloc returns n consecutive ids... not guaranteed consecutive across
// batches; it returns the ids in out (len n).
func (a *IDAllocator) Alloc(ctx context.Context, out []int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range out {
		if a.next >= a.end {
			batch := uint32(max(IDBatch, len(out)-i))
			first, err := a.store.AllocID(ctx, batch)
			if err != nil {
				return fmt.Errorf("autoid: allocate ids: %w", err)
			}
			a.next, a.end = first, first+uint64(batch)
		}
		out[i] = int64(a.next)
		a.next++
	}
	return nil
}
