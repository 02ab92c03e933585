package executor

import (
	"container/heap"
	"slices"
	"unsafe"

	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/planner"
)

// datumSize is the in-memory size of one datum (bytes values apart).
const datumSize = int64(unsafe.Sizeof(datum{}))

// rowSize estimates the memory a kept row holds: its datums, its slice
// header and the bytes of its byte values.
func rowSize(r []datum) int64 {
	n := int64(len(r))*datumSize + 24
	for _, d := range r {
		if d.HasBytes() {
			n += int64(len(d.Bytes()))
		}
	}
	return n
}

func rowsSize(rows [][]datum) int64 {
	var n int64
	for _, r := range rows {
		n += rowSize(r)
	}
	return n
}

// mapEntrySize estimates a hash table entry's overhead (key string header,
// value, bucket share).
const mapEntrySize = 48

func keyedRowSize(k keyedRow) int64 { return rowSize(k.row) + rowSize(k.keys) }

// maxMergeFanIn bounds the runs merged at once: more are first merged
// into longer runs, so open readers (and their buffers) stay few.
const maxMergeFanIn = 64

// sortRun is a sorted run: bytes [off, end) of the sort's spill file.
type sortRun struct{ off, end int64 }

// spillRun sorts ks and appends it to the spill file as a run (for TopN,
// only the rows that can still be returned), then releases its memory.
func (o *sortOp) spillRun(ks []keyedRow) error {
	if len(ks) == 0 {
		return nil
	}
	slices.SortStableFunc(ks, o.cmp)
	if o.topN {
		ks = ks[:min(planner.SatAdd(o.offset, o.count), uint64(len(ks)))]
	}
	if o.file == nil {
		f, err := spill.Create("sort")
		if err != nil {
			return err
		}
		o.file = f
	}
	spill.Spilled("sort")
	off := o.file.Size()
	for _, k := range ks {
		if err := o.file.Write(k.row); err != nil {
			return err
		}
	}
	o.runs = append(o.runs, sortRun{off, o.file.Size()})
	o.mem.Release()
	return nil
}

// startMerge sets up the merge of the spilled runs and mem, the sorted
// rows still in memory (the last rows read, so last among equals).
func (o *sortOp) startMerge(mem []keyedRow) error {
	w := o.child.width()
	for len(o.runs) > maxMergeFanIn { // merge groups of runs into longer runs
		if err := o.mergePass(w); err != nil {
			return err
		}
	}
	m, err := o.newMerger(o.file, o.runs, mem, w)
	if err != nil {
		return err
	}
	o.merge = m
	return nil
}

// mergePass merges every maxMergeFanIn consecutive runs into one run of
// a new file.
func (o *sortOp) mergePass(w int) error {
	f, err := spill.Create("sort")
	if err != nil {
		return err
	}
	var runs []sortRun
	for i := 0; i < len(o.runs); i += maxMergeFanIn {
		m, err := o.newMerger(o.file, o.runs[i:min(i+maxMergeFanIn, len(o.runs))], nil, w)
		if err != nil {
			f.Close()
			return err
		}
		off := f.Size()
		for {
			row, ok, err := m.next()
			if err == nil && ok {
				err = f.Write(row)
			}
			if err != nil {
				f.Close()
				return err
			}
			if !ok {
				break
			}
		}
		runs = append(runs, sortRun{off, f.Size()})
	}
	o.file.Close()
	o.file, o.runs = f, runs
	return nil
}

// nextMerged fills ck from the merge (skipping TopN's offset).
func (o *sortOp) nextMerged(ck *Chunk) error {
	ck.reset()
	limit := uint64(1<<64 - 1)
	if o.topN {
		limit = planner.SatAdd(o.offset, o.count)
	}
	for !ck.full() && o.sent < limit {
		row, ok, err := o.merge.next()
		if err != nil || !ok {
			return err
		}
		o.sent++
		if o.topN && o.sent <= o.offset {
			continue
		}
		copy(ck.alloc(), row)
	}
	return nil
}

func (o *sortOp) closeSpill() {
	o.file.Close()
	o.file, o.runs, o.merge = nil, nil, nil
}

// sortMerger merges sorted sources; among equal keys the earlier source
// wins, so the merge is stable when sources are in input order.
type sortMerger struct {
	o    *sortOp
	srcs []*runSource
	h    []int // heap of sources with a current row
	last int   // source whose row next returned last (-1: none)
}

// runSource is a run on disk (rd) or in memory (mem).
type runSource struct {
	rd  *spill.Reader
	mem []keyedRow
	cur keyedRow
}

func (s *runSource) advance(o *sortOp) (bool, error) {
	if s.rd == nil {
		if len(s.mem) == 0 {
			return false, nil
		}
		s.cur, s.mem = s.mem[0], s.mem[1:]
		return true, nil
	}
	row := make([]datum, len(s.cur.row)) // the previous row may still be referenced
	ok, err := s.rd.Next(row)
	if err != nil || !ok {
		return false, err
	}
	s.cur.row = row
	return true, o.evalKeys(s.cur)
}

func (o *sortOp) newMerger(f *spill.File, runs []sortRun, mem []keyedRow, w int) (*sortMerger, error) {
	m := &sortMerger{o: o, last: -1}
	for _, r := range runs {
		rd, err := f.Reader(r.off, r.end, w)
		if err != nil {
			return nil, err
		}
		m.srcs = append(m.srcs, &runSource{rd: rd, cur: keyedRow{row: make([]datum, w), keys: make([]datum, len(o.keys))}})
	}
	if len(mem) > 0 {
		m.srcs = append(m.srcs, &runSource{mem: mem})
	}
	for i, s := range m.srcs {
		ok, err := s.advance(o)
		if err != nil {
			return nil, err
		}
		if ok {
			m.h = append(m.h, i)
		}
	}
	heap.Init(m)
	return m, nil
}

func (m *sortMerger) Len() int { return len(m.h) }
func (m *sortMerger) Less(i, j int) bool {
	a, b := m.h[i], m.h[j]
	c := m.o.cmp(m.srcs[a].cur, m.srcs[b].cur)
	return c < 0 || (c == 0 && a < b)
}
func (m *sortMerger) Swap(i, j int) { m.h[i], m.h[j] = m.h[j], m.h[i] }
func (m *sortMerger) Push(x any)    { m.h = append(m.h, x.(int)) }
func (m *sortMerger) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

// next returns the smallest current row (valid until the next call).
func (m *sortMerger) next() ([]datum, bool, error) {
	if m.last >= 0 {
		ok, err := m.srcs[m.last].advance(m.o)
		if err != nil {
			return nil, false, err
		}
		if ok {
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
		m.last = -1
	}
	if len(m.h) == 0 {
		return nil, false, nil
	}
	m.last = m.h[0]
	return m.srcs[m.last].cur.row, true, nil
}
