package planner

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Estimates from ANALYZE's statistics (package statistics) where a table
// has them, TiDB's pseudo estimates otherwise.

// tableRows is the estimated row count of a table (or derived table).
func tableRows(src *Source) float64 {
	switch {
	case src.Sub != nil:
		return math.Max(1, src.Sub.Root.Base().EstRows)
	case src.Stats != nil && src.RealtimeCount > 0:
		return float64(src.RealtimeCount)
	case src.Stats != nil:
		return math.Max(1, float64(src.Stats.Count))
	}
	return pseudoRowCount
}

// increaseFactor scales counts from src's statistics (rows ANALYZE saw) to
// the table's rows now (TiDB's GetIncreaseFactor).
func increaseFactor(src *Source) float64 {
	if src.RealtimeCount <= 0 || src.Stats.Count <= 0 {
		return 1
	}
	return float64(src.RealtimeCount) / float64(src.Stats.Count)
}

func hasStats(src *Source) bool { return src != nil && src.Stats != nil && src.Stats.Count > 0 }

// statsColumn is the statistics of source column off (nil: none).
func statsColumn(src *Source, off int) *statistics.Column {
	if !hasStats(src) || off >= len(src.Table.Columns) {
		return nil
	}
	c := src.Stats.Column(off)
	if c == nil || c.ID != src.Table.Columns[off].ID {
		return nil
	}
	return c
}

func encodeDatum(d types.Datum) []byte { return tablecodec.AppendMemComparable(nil, d) }

// rangeRows estimates the rows in ranges over the columns cols (source
// offsets, index order; ix the index, nil for handle ranges). unique: a
// full point is at most one row.
func rangeRows(src *Source, cols []int, ix *model.IndexInfo, rs []Range, unique bool) float64 {
	total := 0.0
	count := tableRows(src)
	analyzed := count // what selectivities from the statistics are of
	if hasStats(src) {
		analyzed = float64(src.Stats.Count)
	}
	for _, r := range rs {
		if unique && r.IsPoint(len(cols)) && !hasNull(r.Low) {
			total++
			continue
		}
		n := min(len(r.Low), len(r.High))
		eq := 0
		for eq < n && cmpVal(r.Low[eq], r.High[eq]) == 0 {
			if eq == len(r.Low)-1 && eq == len(r.High)-1 && (r.LowExcl || r.HighExcl) {
				break
			}
			eq++
		}
		if ix != nil && eq == len(cols) && hasStats(src) {
			if is := src.Stats.Index(ix.ID); is != nil && !hasNull(r.Low) {
				var k []byte
				for _, v := range r.Low {
					k = tablecodec.AppendMemComparable(k, v)
				}
				total += is.EqualRows(k, false, src.Stats.Count) * increaseFactor(src)
				continue
			}
		}
		sel := 1.0
		for i := range eq {
			if cs := statsColumn(src, cols[i]); cs != nil {
				sel *= cs.EqualRows(encodeDatum(r.Low[i]), r.Low[i].IsNull(), src.Stats.Count) / analyzed
			} else {
				sel /= pseudoEqualRate
			}
		}
		lowBounded := len(r.Low) > eq && !r.Low[eq].IsNull()
		highBounded := len(r.High) > eq
		if (lowBounded || highBounded) && eq < len(cols) {
			if cs := statsColumn(src, cols[eq]); cs != nil {
				var lo, hi []byte
				if lowBounded {
					lo = encodeDatum(r.Low[eq])
				}
				if highBounded {
					hi = encodeDatum(r.High[eq])
				}
				sel *= cs.RangeRows(lo, hi, r.LowExcl, r.HighExcl, src.Stats.Count) / analyzed
			} else {
				switch {
				case lowBounded && highBounded:
					sel /= pseudoBetweenRate
				default:
					sel /= pseudoLessRate
				}
			}
		}
		total += sel * count
	}
	return math.Min(total, count)
}

// condSel is the selectivity of condition c on src: from the statistics of
// the one column it bounds when the ranger can turn it into ranges,
// TiDB's pseudo selectivity otherwise.
func condSel(src *Source, c ast.ExprNode, env expr.Env) float64 {
	if !hasStats(src) || src.Join != nil {
		return condRate(c)
	}
	rg := &ranger{src: src, env: env}
	for off := range src.Table.Columns {
		if statsColumn(src, off) == nil || !sortable(src.Cols[off].Type) {
			continue
		}
		d := rg.detach([]ast.ExprNode{c}, []int{off})
		if d.usedCols == 0 || !d.access[0] {
			continue
		}
		return math.Min(1, rangeRows(src, []int{off}, nil, d.ranges, false)/tableRows(src))
	}
	return condRate(c)
}
