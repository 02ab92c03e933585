package pd

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// idStep is how many ids are persisted ahead at a time.
const idStep = 1000

// idAllocator hands out cluster-unique ids in [base, end). end is persisted
// before any id below it is handed out, and a new term starts at the
// persisted end, so ids are unique and increasing across restarts and leader
// changes (ids reserved but unused by a previous term are skipped).
type idAllocator struct {
	kv *fencedKV

	mu   sync.Mutex // held across the rare persisting write; AllocID is not a hot path
	base uint64
	end  uint64
}

func (a *idAllocator) load(ctx context.Context) error {
	end, err := a.kv.getUint(ctx, keyAllocID)
	if err != nil {
		return fmt.Errorf("load id allocator: %w", err)
	}
	if end == 0 {
		end = 1 // id 0 is never handed out
	}
	a.mu.Lock()
	a.base, a.end = end, end
	a.mu.Unlock()
	return nil
}

// alloc returns the first of count (>0) consecutive ids.
func (a *idAllocator) alloc(ctx context.Context, count uint64) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.base+count > a.end {
		newEnd := a.end + idStep
		if newEnd < a.base+count {
			newEnd = a.base + count + idStep
		}
		if err := a.kv.put(ctx, keyAllocID, strconv.FormatUint(newEnd, 10)); err != nil {
			return 0, fmt.Errorf("persist id allocator end %d: %w", newEnd, err)
		}
		a.end = newEnd
	}
	first := a.base
	a.base += count
	allocIDTotal.Add(float64(count))
	return first, nil
}
