package executor

import (
	"context"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
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
	work, err := drain(ctx, op, rc.mem)
	if err != nil {
		return nil, err
	}
	var seen map[string]struct{}
	var key []byte
	colls := outputCollations(p.Children[0])
	if p.Distinct {
		seen = make(map[string]struct{}, len(work))
		for _, r := range work {
			key = expr.AppendGroupKeyColl(key[:0], r, colls)
			seen[string(key)] = struct{}{}
		}
	}
	all := work
	defer func() { p.Storage.Rows = nil }()
	enough := func() bool { return p.HasLimit && uint64(len(all)) >= planner.SatAdd(p.Offset, p.Count) }
	for round := uint64(1); len(work) > 0 && !enough(); round++ {
		if round > p.MaxDepth {
			return nil, errno.New(3636, "Recursive query aborted after %d iterations. Try increasing @@cte_max_recursion_depth to a larger value.", round)
		}
		p.Storage.Rows = work
		op, err := rc.build(p.Children[1], stats)
		if err != nil {
			return nil, err
		}
		next, err := drain(ctx, op, rc.mem)
		if err != nil {
			return nil, err
		}
		if seen != nil {
			kept := next[:0]
			for _, r := range next {
				key = expr.AppendGroupKeyColl(key[:0], r, colls)
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
	if p.HasLimit {
		lo := min(p.Offset, uint64(len(all)))
		all = all[lo:min(planner.SatAdd(p.Offset, p.Count), uint64(len(all)))]
	}
	return all, nil
}

// setOpRows is INTERSECT / EXCEPT [ALL]: the right side's rows counted
// by value, then the left side's rows kept as the operator says (ALL:
// as multisets; DISTINCT: each value once), in the left side's order.
func setOpRows(ctx context.Context, p *planner.SetOp, l, r Operator) ([][]datum, error) {
	right, err := drain(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(right))
	var key []byte
	colls := outputCollations(p.Children[0])
	for _, row := range right {
		key = expr.AppendGroupKeyColl(key[:0], row, colls)
		counts[string(key)]++
	}
	left, err := drain(ctx, l, nil)
	if err != nil {
		return nil, err
	}
	out := left[:0]
	emitted := map[string]bool{}
	for _, row := range left {
		key = expr.AppendGroupKeyColl(key[:0], row, colls)
		n := counts[string(key)]
		keep := false
		switch {
		case p.All && !p.Except: // INTERSECT ALL: min of the counts
			keep = n > 0
			counts[string(key)] = n - 1
		case p.All: // EXCEPT ALL: left count minus right count
			keep = n <= 0
			counts[string(key)] = n - 1
		case !p.Except:
			keep = n > 0 && !emitted[string(key)]
		default:
			keep = n == 0 && !emitted[string(key)]
		}
		if keep {
			if !p.All {
				emitted[string(key)] = true
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// outputCollations is the collation of each column p outputs when it is
// a projection, or a set operation or DISTINCT over one (its first
// branch's; nil: all bytewise or unknown): DISTINCT, UNION, INTERSECT,
// EXCEPT and recursive CTEs compare rows under it.
func outputCollations(p planner.Plan) []*collate.Collation {
	switch x := p.(type) {
	case *planner.Projection:
		return expr.Collations(x.Exprs)
	case *planner.Union, *planner.SetOp, *planner.Distinct, *planner.Limit, *planner.Sort, *planner.TopN:
		if ch := p.Base().Children; len(ch) > 0 {
			return outputCollations(ch[0])
		}
	}
	return nil
}
