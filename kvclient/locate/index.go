package locate

import (
	"bytes"
	"sort"
)

// chunkSize is the most regions one indexChunk holds. An update copies the
// chunks it touches (merged and re-split) and the top level's chunk
// pointers: with 10,000 regions about 64 entries and 200 pointers,
// instead of 10,000 entries for a flat copy-on-write array.
const chunkSize = 64

// regionIndex is an immutable snapshot of the cached regions, sorted by
// start key and non-overlapping, in chunks of at most chunkSize. firsts[i]
// is chunks[i]'s first start key. A lookup is two binary searches over
// keys held in the index itself (not behind each Region's pointers, which
// with 10,000 regions are cache misses). Writers build a new snapshot with
// update and publish it; readers never lock.
type regionIndex struct {
	firsts [][]byte
	chunks []indexChunk
	n      int // regions
}

// indexChunk is a run of regions in start key order; never modified once
// in a published index.
type indexChunk []indexEntry

type indexEntry struct {
	start, end []byte // the region's range, end empty = +infinity
	r          *Region
}

func entryOf(r *Region) indexEntry {
	return indexEntry{start: r.meta.StartKey, end: r.meta.EndKey, r: r}
}

// lastStartLE returns the index of the last entry of es whose start key is
// <= key, or -1.
func lastStartLE(es []indexEntry, key []byte) int {
	return sort.Search(len(es), func(i int) bool {
		return bytes.Compare(es[i].start, key) > 0
	}) - 1
}

// chunkOf returns the index of the last chunk whose first start key is <=
// key, or -1.
func (ix *regionIndex) chunkOf(key []byte) int {
	f := ix.firsts
	return sort.Search(len(f), func(i int) bool {
		return bytes.Compare(f[i], key) > 0
	}) - 1
}

// get returns the region whose range holds key, or nil.
func (ix *regionIndex) get(key []byte) *Region {
	ci := ix.chunkOf(key)
	if ci < 0 {
		return nil
	}
	ch := ix.chunks[ci]
	e := &ch[lastStartLE(ch, key)] // >= 0: the chunk's first start is <= key
	if len(e.end) != 0 && bytes.Compare(key, e.end) >= 0 {
		return nil
	}
	return e.r
}

// update returns a new index in which the regions of the chunks that may
// hold a region starting in [from, to) (to empty = +infinity), or the
// region holding from, are replaced by edit's result. edit gets a fresh
// copy of those regions in order and returns them edited, still sorted
// and non-overlapping, all before the next chunk's first start.
func (ix *regionIndex) update(from, to []byte, edit func([]indexEntry) []indexEntry) *regionIndex {
	lo, hi := 0, len(ix.chunks) // chunks [lo, hi) are rebuilt
	if len(ix.chunks) > 0 {
		lo = max(ix.chunkOf(from), 0)
		if len(to) != 0 {
			hi = max(sort.Search(len(ix.firsts), func(i int) bool {
				return bytes.Compare(ix.firsts[i], to) >= 0
			}), lo+1)
		}
	}
	var flat []indexEntry
	for _, ch := range ix.chunks[lo:hi] {
		flat = append(flat, ch...)
	}
	flat = edit(flat)
	// Absorb the next chunk into a small result so that deletions do not
	// leave many tiny chunks.
	if len(flat) < chunkSize/2 && hi < len(ix.chunks) {
		flat = append(flat, ix.chunks[hi]...)
		hi++
	}
	out := &regionIndex{chunks: make([]indexChunk, 0, len(ix.chunks)-(hi-lo)+len(flat)/chunkSize+1)}
	out.chunks = append(out.chunks, ix.chunks[:lo]...)
	for pieces := (len(flat) + chunkSize - 1) / chunkSize; pieces > 0; pieces-- {
		k := (len(flat) + pieces - 1) / pieces // even pieces, each <= chunkSize
		out.chunks = append(out.chunks, indexChunk(flat[:k:k]))
		flat = flat[k:]
	}
	out.chunks = append(out.chunks, ix.chunks[hi:]...)
	out.firsts = make([][]byte, len(out.chunks))
	for i, ch := range out.chunks {
		out.firsts[i] = ch[0].start
		out.n += len(ch)
	}
	return out
}
