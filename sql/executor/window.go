package executor

import (
	"context"
	"sort"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

// windowRows computes p's window functions over the rows of child, which
// come sorted by p's partition keys then order keys: per partition, the
// peer groups (rows with equal order keys) and each row's frame, then
// every function's value into its slot of a row p.Width wide.
func windowRows(ctx context.Context, p *planner.Window, child Operator) ([][]datum, error) {
	if err := child.Open(ctx); err != nil {
		child.Close()
		return nil, err
	}
	var rows [][]datum
	var pkeys, okeys [][]datum
	err := collect(ctx, child, func(in []datum) error {
		r := make([]datum, p.Width)
		copy(r, in)
		pk, err := evalKeys(p.Partition, r)
		if err != nil {
			return err
		}
		ok, err := evalKeys(p.Order, r)
		if err != nil {
			return err
		}
		rows, pkeys, okeys = append(rows, r), append(pkeys, pk), append(okeys, ok)
		return nil
	})
	if cerr := child.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	w := &windowPart{p: p}
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && keysEqual(p.Partition, pkeys[lo], pkeys[hi]) {
			hi++
		}
		if err := w.compute(rows[lo:hi], okeys[lo:hi]); err != nil {
			return nil, err
		}
		lo = hi
	}
	return rows, nil
}

func evalKeys(keys []planner.SortKey, row []datum) ([]datum, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([]datum, len(keys))
	for i, k := range keys {
		v, err := k.E.Eval(row)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// keysEqual compares as the Sort below ordered them (NULLs equal).
func keysEqual(keys []planner.SortKey, a, b []datum) bool {
	for i, k := range keys {
		switch x, y := a[i], b[i]; {
		case x.IsNull() || y.IsNull():
			if x.IsNull() != y.IsNull() {
				return false
			}
		case expr.CompareAs(x, y, k.E.Type()) != 0:
			return false
		}
	}
	return true
}

// windowPart computes one partition.
type windowPart struct {
	p         *planner.Window
	peerStart []int
	peerEnd   []int
	peerRank  []int
	// groupStart is the first row of each peer group (by rank - 1).
	groupStart []int
	keyBuf     []byte
	// nnLo..nnHi are the rows whose (first) order key is not NULL.
	nnLo, nnHi int
}

func (w *windowPart) compute(rows, okeys [][]datum) error {
	n := len(rows)
	w.peerStart, w.peerEnd, w.peerRank = w.peerStart[:0], w.peerEnd[:0], w.peerRank[:0]
	w.groupStart = w.groupStart[:0]
	rank := 0
	for i := 0; i < n; {
		j := i + 1
		for j < n && keysEqual(w.p.Order, okeys[i], okeys[j]) {
			j++
		}
		rank++
		w.groupStart = append(w.groupStart, i)
		for k := i; k < j; k++ {
			w.peerStart, w.peerEnd, w.peerRank = append(w.peerStart, i), append(w.peerEnd, j-1), append(w.peerRank, rank)
		}
		i = j
	}
	w.nnLo, w.nnHi = 0, n-1
	if len(w.p.Order) > 0 {
		for w.nnLo < n && okeys[w.nnLo][0].IsNull() {
			w.nnLo++
		}
		for w.nnHi >= 0 && okeys[w.nnHi][0].IsNull() {
			w.nnHi--
		}
	}
	for fi := range w.p.Funcs {
		f := &w.p.Funcs[fi]
		var st aggState
		curLo, curHi := 0, -1 // the rows st holds
		for i, r := range rows {
			var v datum
			switch f.Fn {
			case ast.WindowFuncRowNumber:
				v = types.NewInt(int64(i + 1))
			case ast.WindowFuncRank:
				v = types.NewInt(int64(w.peerStart[i] + 1))
			case ast.WindowFuncDenseRank:
				v = types.NewInt(int64(w.peerRank[i]))
			case ast.WindowFuncPercentRank:
				pr := 0.0
				if n > 1 {
					pr = float64(w.peerStart[i]) / float64(n-1)
				}
				v = types.NewFloat(pr)
			case ast.WindowFuncCumeDist:
				v = types.NewFloat(float64(w.peerEnd[i]+1) / float64(n))
			case ast.WindowFuncNtile:
				v = types.NewInt(ntile(i, n, f.N))
			case ast.WindowFuncLag, ast.WindowFuncLead:
				at := i - int(f.N)
				if f.Fn == ast.WindowFuncLead {
					at = i + int(f.N)
				}
				var err error
				switch {
				case f.N >= 0 && at >= 0 && at < n:
					v, err = f.Args[0].Eval(rows[at])
				case f.Default != nil:
					v, err = f.Default.Eval(r)
				default:
					v = types.NullDatum
				}
				if err != nil {
					return err
				}
			default:
				lo, hi := w.frame(i, n, okeys)
				var err error
				if v, err = w.framed(f, rows, lo, hi, &st, &curLo, &curHi); err != nil {
					return err
				}
			}
			r[f.Slot] = v
		}
	}
	return nil
}

// ntile is the bucket (1-based) of row i of n split into k buckets, the
// first n%k one row larger.
func ntile(i, n int, k int64) int64 {
	size, rem := int64(n)/k, int64(n)%k
	if size == 0 {
		return int64(i) + 1
	}
	big := rem * (size + 1)
	if int64(i) < big {
		return int64(i)/(size+1) + 1
	}
	return rem + (int64(i)-big)/size + 1
}

// frame returns row i's frame [lo, hi] (hi < lo: empty).
func (w *windowPart) frame(i, n int, okeys [][]datum) (int, int) {
	fr := w.p.Frame
	if fr.Whole {
		return 0, n - 1
	}
	if fr.Rows {
		pos := func(b planner.FrameBound, start bool) int {
			switch {
			case b.Unbounded && b.Preceding:
				return 0
			case b.Unbounded:
				return n - 1
			case b.Current:
				return i
			case b.Preceding:
				return i - int(min(b.N, int64(n)))
			}
			return i + int(min(b.N, int64(n)))
		}
		return max(pos(fr.Start, true), 0), min(pos(fr.End, false), n-1)
	}
	if fr.Groups {
		return w.groupFrame(i, n)
	}
	// RANGE: bounds by the (single, numeric or temporal) order key's value.
	pos := func(b planner.FrameBound, start bool) int {
		switch {
		case b.Unbounded && b.Preceding:
			return 0
		case b.Unbounded:
			return n - 1
		case b.Current:
			if start {
				return w.peerStart[i]
			}
			return w.peerEnd[i]
		}
		key := okeys[i][0]
		if key.IsNull() { // NULLs: their peer group
			if start {
				return w.peerStart[i]
			}
			return w.peerEnd[i]
		}
		desc := w.p.Order[0].Desc
		// The boundary value: preceding is before in the sort order. cmp
		// compares an order key with it.
		var cmp func(y datum) int
		if b.Interval != nil { // a temporal key moved by the interval
			x, err := b.Interval.Eval([]datum{key})
			if err != nil || x.IsNull() { // out of the type's range: no bound on that side
				if start {
					return 0
				}
				return n - 1
			}
			ft := w.p.Order[0].E.Type()
			cmp = func(y datum) int { return expr.CompareAs(y, x, ft) }
		} else {
			x, _ := types.ToFloat(key)
			off, _ := types.ToFloat(b.Val)
			if b.Preceding != desc {
				x -= off
			} else {
				x += off
			}
			cmp = func(y datum) int {
				f, _ := types.ToFloat(y)
				switch {
				case f < x:
					return -1
				case f > x:
					return 1
				}
				return 0
			}
		}
		// Within the partition's non-NULL keys (NULLs sort first ascending,
		// last descending) the rows at or after the start bound, and at
		// or before the end bound, are a suffix and a prefix.
		nnLo, nnHi := w.nnLo, w.nnHi
		beyond := func(j int) bool { // row j is past the bound in sort order
			c := cmp(okeys[j][0])
			if desc {
				if start {
					return c <= 0
				}
				return c < 0
			}
			if start {
				return c >= 0
			}
			return c > 0
		}
		k := sort.Search(nnHi-nnLo+1, func(k int) bool { return beyond(nnLo + k) })
		if start {
			return nnLo + k
		}
		return nnLo + k - 1
	}
	return pos(fr.Start, true), pos(fr.End, false)
}

// groupFrame is row i's GROUPS frame: its bounds count peer groups
// (rows with equal order keys) from row i's, clamped to the partition.
func (w *windowPart) groupFrame(i, n int) (int, int) {
	fr := w.p.Frame
	g, ng := w.peerRank[i]-1, len(w.groupStart)
	first := func(gi int) int { // first row of group gi (n past the last)
		switch {
		case gi <= 0:
			return 0
		case gi >= ng:
			return n
		}
		return w.groupStart[gi]
	}
	last := func(gi int) int { // last row of group gi (-1 before the first)
		switch {
		case gi < 0:
			return -1
		case gi >= ng-1:
			return n - 1
		}
		return w.groupStart[gi+1] - 1
	}
	pos := func(b planner.FrameBound, start bool) int {
		switch {
		case b.Unbounded && b.Preceding:
			return 0
		case b.Unbounded:
			return n - 1
		}
		gi := g
		if !b.Current {
			off := int(min(b.N, int64(ng)))
			if b.Preceding {
				off = -off
			}
			gi += off
		}
		if start {
			return first(gi)
		}
		return last(gi)
	}
	return pos(fr.Start, true), pos(fr.End, false)
}

// framed is a frame function's value over rows[lo..hi]; st holds the
// aggregate of rows[curLo..curHi] and is extended when the frame only
// grew at its end (running totals stay linear).
func (w *windowPart) framed(f *planner.WindowFunc, rows [][]datum, lo, hi int, st *aggState, curLo, curHi *int) (datum, error) {
	switch f.Fn {
	case ast.WindowFuncFirstValue, ast.WindowFuncLastValue, ast.WindowFuncNthValue:
		at := lo
		switch f.Fn {
		case ast.WindowFuncLastValue:
			at = hi
		case ast.WindowFuncNthValue:
			at = lo + int(f.N) - 1
		}
		if hi < lo || at > hi || at < lo {
			return types.NullDatum, nil
		}
		return f.Args[0].Eval(rows[at])
	}
	spec := f.Agg
	from := *curHi + 1
	if lo != *curLo || hi < *curHi {
		*st = aggState{}
		from = lo
	}
	var err error
	for j := from; j <= hi; j++ {
		if w.keyBuf, err = st.add(spec, rows[j], w.keyBuf); err != nil {
			return types.NullDatum, err
		}
	}
	*curLo, *curHi = lo, max(hi, lo-1)
	return st.result(spec), nil
}
