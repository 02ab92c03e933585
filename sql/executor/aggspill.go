package executor

import (
	"unsafe"

	"github.com/stratadb/strata/sql/executor/spill"
)

// aggPart is a partition of rows whose groups a hashAggOp had no memory
// for: they are aggregated after the groups in memory are returned, and
// may spill again one level deeper.
type aggPart struct {
	f     *spill.File
	depth int
}

// groupSize estimates a group's memory apart from its first row.
func groupSize(aggs int) int64 {
	return int64(unsafe.Sizeof(group{})) + int64(aggs)*int64(unsafe.Sizeof(aggState{}))
}

// nextPartition aggregates the next spilled partition into o.out.
func (o *hashAggOp) nextPartition() error {
	part := o.pending[len(o.pending)-1]
	o.pending = o.pending[:len(o.pending)-1]
	defer part.f.Close()
	w := o.child.width()
	rd, err := part.f.Reader(0, part.f.Size(), w)
	if err != nil {
		return err
	}
	order, err := o.aggregate(func(each func([]datum) error) error { return eachSpilled(rd, w, each) }, part.depth)
	if err != nil {
		return err
	}
	o.out = emitter{rows: o.results(order)}
	return nil
}

// eachSpilled passes each row of rd (width w) to each; the rows may be
// kept.
func eachSpilled(rd *spill.Reader, w int, each func([]datum) error) error {
	var slab []datum
	for {
		if len(slab) < w {
			slab = make([]datum, w*chunkRows)
		}
		r := slab[:w:w]
		ok, err := rd.Next(r)
		if err != nil || !ok {
			return err
		}
		slab = slab[w:]
		if err := each(r); err != nil {
			return err
		}
	}
}

func (o *hashAggOp) closeSpill() {
	for _, p := range o.pending {
		p.f.Close()
	}
	o.pending = nil
}

// growGroups counts a new group (first row r, key) and, when the
// statement is over its quota, starts writing the rows of groups not in
// memory to partition files (*parts). WITH ROLLUP cannot spill: its
// super-aggregates need every row (8175 past the quota).
func (o *hashAggOp) growGroups(r []datum, key []byte, depth int, parts *[]*spill.File) error {
	n := rowSize(r) + int64(len(key)) + mapEntrySize + groupSize(len(o.p.Aggs))
	if len(o.p.Rollup) > 0 {
		return o.mem.Consume(n)
	}
	spillNow, err := o.mem.Grow(n)
	if err != nil || !spillNow {
		return err
	}
	if depth >= spillMaxDepth {
		return o.mem.ErrQuota()
	}
	fs, err := newPartFiles("hash_agg")
	if err != nil {
		return err
	}
	*parts = fs
	spill.Spilled("hash_agg")
	return nil
}
