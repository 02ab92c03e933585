package executor

import (
	"context"
	"errors"
	"hash/maphash"

	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/expr"
)

// Partitioned spilling (hash join and hash aggregation) writes rows to
// spillFanout files by a hash of their key, with one seed per depth of
// re-partitioning.
const (
	spillFanout   = 32
	spillMaxDepth = 3
)

// spillSeeds are the partitioning hash seeds, one per depth.
var spillSeeds = func() (s [spillMaxDepth + 1]maphash.Seed) {
	for i := range s {
		s[i] = maphash.MakeSeed()
	}
	return s
}()

// Grace hash join: once the build side is over the statement's quota,
// the build rows held so far and every later one are written to
// spillFanout partition files by a hash of their join key, then the probe
// side is read to the end and partitioned the same way. Partitions are
// then joined one at a time: the build partition in a hash table, its
// probe partition streamed. A build partition still over the quota is
// partitioned again with another hash seed, up to spillMaxDepth times
// (beyond that the keys are too skewed to split: ERROR 8175).

// joinPart is one partition: its build and probe rows.
type joinPart struct {
	build, probe *spill.File
	depth        int
}

type joinSpill struct {
	build []*spill.File // the partitions being written, build side
	probe []*spill.File
	depth int
	// pending are the partitions to join, last first.
	pending []joinPart
	cur     joinPart // the partition being joined
}

// newPartFiles creates spillFanout files for operator op.
func newPartFiles(op string) ([]*spill.File, error) {
	fs := make([]*spill.File, spillFanout)
	for i := range fs {
		f, err := spill.Create(op)
		if err != nil {
			closeFiles(fs)
			return nil, err
		}
		fs[i] = f
	}
	return fs, nil
}

func closeFiles(fs []*spill.File) {
	for _, f := range fs {
		f.Close()
	}
}

// write appends row (join key k) to its partition among fs.
func (s *joinSpill) write(fs []*spill.File, depth int, k []byte, row []datum) error {
	return fs[maphash.Bytes(spillSeeds[depth], k)%spillFanout].Write(row)
}

// spillBuild moves the build rows held in memory to partition files.
func (o *hashJoinOp) spillBuild() error {
	fs, err := newPartFiles("hash_join")
	if err != nil {
		return err
	}
	o.spilled = &joinSpill{build: fs}
	spill.Spilled("hash_join")
	for k, rows := range o.table {
		for _, r := range rows {
			if err := o.spilled.write(fs, 0, []byte(k), r); err != nil {
				return err
			}
		}
	}
	clear(o.table)
	o.mem.Release()
	return nil
}

// spillProbe partitions the whole probe side and starts on the first
// partition. Probe rows with a NULL key match nothing: they are kept (in
// partition 0) only when the probe side is an outer side.
func (o *hashJoinOp) spillProbe(ctx context.Context) error {
	s := o.spilled
	fs, err := newPartFiles("hash_join")
	if err != nil {
		return err
	}
	s.probe = fs
	if err := collect(ctx, o.probe, func(r []datum) error {
		k, null, err := o.key(o.probeKeys, r)
		if err != nil {
			return err
		}
		if null {
			if !o.outerProbe {
				return nil
			}
			return fs[0].Write(r)
		}
		return s.write(fs, 0, k, r)
	}); err != nil {
		return err
	}
	s.queue(0)
	_, err = o.nextPartition()
	return err
}

// queue moves the partitions being written to pending.
func (s *joinSpill) queue(depth int) {
	for i := spillFanout - 1; i >= 0; i-- {
		b, p := s.build[i], s.probe[i]
		if p.Rows() == 0 { // nothing probes it
			b.Close()
			p.Close()
			continue
		}
		s.pending = append(s.pending, joinPart{build: b, probe: p, depth: depth})
	}
	s.build, s.probe = nil, nil
}

// nextPartition loads the next partition's build rows into the hash table
// and points the probe at its probe rows (more: false when none is left).
func (o *hashJoinOp) nextPartition() (more bool, err error) {
	s := o.spilled
	s.cur.build.Close()
	s.cur.probe.Close()
	s.cur = joinPart{}
	clear(o.table)
	o.mem.Release()
	for len(s.pending) > 0 {
		part := s.pending[len(s.pending)-1]
		s.pending = s.pending[:len(s.pending)-1]
		split, err := o.loadPartition(part)
		if err != nil {
			part.build.Close()
			part.probe.Close()
			return false, err
		}
		if split {
			continue
		}
		rd, err := part.probe.Reader(0, part.probe.Size(), o.probe.width())
		if err != nil {
			return false, err
		}
		s.cur = part
		o.probeSrc = &spillReaderOp{rd: rd, w: o.probe.width()}
		return true, nil
	}
	return false, nil
}

// loadPartition reads part's build rows into the hash table; if they are
// over the quota it partitions part again (split: the new partitions are
// pending, part is closed).
func (o *hashJoinOp) loadPartition(part joinPart) (split bool, err error) {
	bw := o.build.width()
	rd, err := part.build.Reader(0, part.build.Size(), bw)
	if err != nil {
		return false, err
	}
	errSplit := errors.New("split")
	err = eachSpilled(rd, bw, func(r []datum) error {
		k, null, err := o.key(o.buildKeys, r)
		if err != nil || null {
			return err
		}
		o.table[string(k)] = append(o.table[string(k)], r)
		spillNow, err := o.mem.Grow(rowSize(r) + int64(len(k)) + mapEntrySize)
		if err != nil || !spillNow {
			return err
		}
		if part.depth >= spillMaxDepth {
			return o.mem.ErrQuota()
		}
		return errSplit
	})
	if err == errSplit {
		return true, o.splitPartition(part, rd)
	}
	return false, err
}

// splitPartition partitions part again (the build rows in the hash table,
// the rest of rd, and its probe rows) one level deeper.
func (o *hashJoinOp) splitPartition(part joinPart, rd *spill.Reader) error {
	s := o.spilled
	depth := part.depth + 1
	var err error
	if s.build, err = newPartFiles("hash_join"); err != nil {
		return err
	}
	if s.probe, err = newPartFiles("hash_join"); err != nil {
		closeFiles(s.build)
		s.build = nil
		return err
	}
	spill.Spilled("hash_join")
	for k, rows := range o.table {
		for _, r := range rows {
			if err := s.write(s.build, depth, []byte(k), r); err != nil {
				return err
			}
		}
	}
	clear(o.table)
	o.mem.Release()
	if err := o.repartition(rd, o.build.width(), o.buildKeys, s.build, depth); err != nil {
		return err
	}
	prd, err := part.probe.Reader(0, part.probe.Size(), o.probe.width())
	if err != nil {
		return err
	}
	if err := o.repartition(prd, o.probe.width(), o.probeKeys, s.probe, depth); err != nil {
		return err
	}
	part.build.Close()
	part.probe.Close()
	s.queue(depth)
	return nil
}

// repartition writes the rows of rd to fs by their key (NULL keys to
// fs[0]: only outer probe rows have them).
func (o *hashJoinOp) repartition(rd *spill.Reader, w int, keys []expr.Expr, fs []*spill.File, depth int) error {
	r := make([]datum, w)
	for {
		ok, err := rd.Next(r)
		if err != nil || !ok {
			return err
		}
		k, null, err := o.key(keys, r)
		if err != nil {
			return err
		}
		if null {
			err = fs[0].Write(r)
		} else {
			err = o.spilled.write(fs, depth, k, r)
		}
		if err != nil {
			return err
		}
	}
}

func (o *hashJoinOp) closeSpill() {
	s := o.spilled
	if s == nil {
		return
	}
	closeFiles(s.build)
	closeFiles(s.probe)
	for _, p := range s.pending {
		p.build.Close()
		p.probe.Close()
	}
	s.cur.build.Close()
	s.cur.probe.Close()
	o.spilled = nil
	o.probeSrc = o.probe
}

// spillReaderOp returns the rows of a spill file.
type spillReaderOp struct {
	rd *spill.Reader
	w  int
}

func (o *spillReaderOp) Open(context.Context) error { return nil }
func (o *spillReaderOp) Close() error               { return nil }
func (o *spillReaderOp) width() int                 { return o.w }

func (o *spillReaderOp) Next(_ context.Context, ck *Chunk) error {
	ck.reset()
	for !ck.full() {
		ok, err := o.rd.Next(ck.alloc())
		if err != nil {
			return err
		}
		if !ok {
			ck.rows = ck.rows[:len(ck.rows)-1]
			return nil
		}
	}
	return nil
}
