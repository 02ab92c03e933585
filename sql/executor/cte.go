package executor

import (
	"context"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/planner"
)

// recursiveCTE runs a recursive CTE to its fixpoint: the seed's rows,
// then rounds of the recursive blocks over the previous round's rows
// (p.Storage) until a round adds none; UNION DISTINCT drops rows seen
// before. Round cte_max_recursion_depth + 1 is ERROR 3636, as in MySQL.
func (rc *runCtx) recursiveCTE(ctx context.Context, p *planner.RecursiveCTE, stats map[planner.Plan]*opStats) ([][]datum, error) {
	op, err := rc.build(p.Children[0], stats)
	if err != nil {
		return nil, err
	}
	work, err := drain(ctx, op)
	if err != nil {
		return nil, err
	}
	var seen map[string]struct{}
	var key []byte
	if p.Distinct {
		seen = make(map[string]struct{}, len(work))
		for _, r := range work {
			key = rowKey(key[:0], r)
			seen[string(key)] = struct{}{}
		}
	}
	all := work
	defer func() { p.Storage.Rows = nil }()
	for round := uint64(1); len(work) > 0; round++ {
		if round > p.MaxDepth {
			return nil, errno.New(3636, "Recursive query aborted after %d iterations. Try increasing @@cte_max_recursion_depth to a larger value.", round)
		}
		p.Storage.Rows = work
		op, err := rc.build(p.Children[1], stats)
		if err != nil {
			return nil, err
		}
		next, err := drain(ctx, op)
		if err != nil {
			return nil, err
		}
		if seen != nil {
			kept := next[:0]
			for _, r := range next {
				key = rowKey(key[:0], r)
				if _, dup := seen[string(key)]; !dup {
					seen[string(key)] = struct{}{}
					kept = append(kept, r)
				}
			}
			next = kept
		}
		all = append(all, next...)
		work = next
	}
	return all, nil
}
