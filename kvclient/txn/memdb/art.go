package memdb

import (
	"bytes"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// The buffer's index is an adaptive radix tree (Leis et al., ICDE 2013):
// inner nodes of 4, 16, 48 or 256 children keyed by one byte of the key,
// path compression (a node holds the bytes its children share) and lazy
// expansion (a key alone below a byte is a leaf there, whatever its
// length). A key that ends at an inner node (a prefix of other keys) is
// that node's inplace leaf.
//
// Nothing in the tree is a Go pointer: nodes and leaves live in slabs of
// pointer-free structs and name each other by ref (kind and slab index);
// key and prefix bytes live in one arena of byte chunks, values in
// another, named by addr. The garbage collector scans none of it. Arena
// bytes never move. Key bytes are never written twice, so iterated keys
// stay valid for the buffer's life and a prefix can name the bytes of any
// key that has it; a revert truncates the value arena to where it was
// before the first write it undoes (every value after that belongs to an
// undone write), so a long transaction's failed statements leave nothing
// behind but the keys they added.
//
// Keys are never unlinked: a key a revert removes keeps its leaf, marked
// dead (Get and the iterators skip it; writing the key again revives it).
// Children are therefore only ever added, which keeps every node's
// children dense and ordered.

// grow makes room for one more element, jumping from the small inline
// slabs straight to 16.
func grow[T any](s []T) []T {
	if len(s) == cap(s) && cap(s) < 16 {
		return append(make([]T, 0, 16), s...)
	}
	return s
}

// ref names a node or a leaf: its kind in the top bits, its slab index
// below. 0 is no node.
type ref uint32

const (
	kindLeaf = 1 + iota
	kind4
	kind16
	kind48
	kind256

	kindShift = 29
	idxMask   = 1<<kindShift - 1
)

func mkRef(kind int, idx int) ref { return ref(uint32(kind)<<kindShift | uint32(idx)) }
func (r ref) kind() int           { return int(r >> kindShift) }
func (r ref) idx() int            { return int(r & idxMask) }

// addr names arena bytes: chunk index in the high 32 bits, offset below.
type addr uint64

const (
	firstChunk = 256 // the inline value chunk
	minChunk   = 1 << 10
	maxChunk   = 1 << 20
)

// arena is byte storage, appended to and truncated at the end. A chunk is
// never reallocated: bytes handed out stay where they are. An arena always
// has a chunk (newArt gives it one inline).
type arena struct {
	chunks [][]byte
}

func (a *arena) alloc(b []byte) addr {
	n := len(a.chunks)
	if c := a.chunks[n-1]; cap(c)-len(c) >= len(b) {
		a.chunks[n-1] = append(c, b...)
		return addr(uint64(n-1)<<32 | uint64(len(c)))
	}
	// A chunk a truncate dropped is reused when b fits.
	if n < cap(a.chunks) {
		if c := a.chunks[:n+1][n]; cap(c) >= len(b) {
			a.chunks = append(a.chunks, append(c[:0], b...))
			return addr(uint64(n) << 32)
		}
	}
	size := min(max(2*cap(a.chunks[n-1]), minChunk), maxChunk)
	c := append(make([]byte, 0, max(size, len(b))), b...)
	a.chunks = append(a.chunks, c)
	return addr(uint64(n) << 32)
}

// pos is where the next byte goes.
func (a *arena) pos() addr {
	n := len(a.chunks)
	return addr(uint64(n-1)<<32 | uint64(len(a.chunks[n-1])))
}

// truncate drops every byte from p (a pos) on. The chunks after p's stay
// beyond len(chunks), for alloc to reuse.
func (a *arena) truncate(p addr) {
	i := int(p >> 32)
	a.chunks = a.chunks[:i+1]
	a.chunks[i] = a.chunks[i][:uint32(p)]
}

// get returns the n bytes at p, capped so that an append copies.
func (a *arena) get(p addr, n int) []byte {
	off := int(uint32(p))
	return a.chunks[p>>32][off : off+n : off+n]
}

// state is a key's buffered Entry, its value in the arena.
type state struct {
	val   addr
	vlen  int32 // -1: no value (nil)
	op    kvrpcpb.Op
	flags Flags
	live  bool // the buffer holds the key
}

type leaf struct {
	key  addr
	klen uint32
	st   state
}

type header struct {
	prefix  addr // the bytes every key below shares after the parent's byte
	plen    uint32
	n       uint16 // children
	inplace ref    // the leaf of the key that ends here
}

type node4 struct {
	header
	keys [4]byte // ascending
	kids [4]ref
}

type node16 struct {
	header
	keys [16]byte // ascending
	kids [16]ref
}

type node48 struct {
	header
	slot [256]uint8 // 1 + index into kids; 0: no child
	kids [48]ref
}

type node256 struct {
	header
	kids [256]ref
}

// art is the tree. It is made by a buffer's first write.
type art struct {
	root   ref
	keys   arena // keys (and so prefixes)
	vals   arena
	leaves []leaf
	n4     []node4
	n16    []node16
	n48    []node48
	n256   []node256
	live   int // live leaves

	// The first slabs, in the one allocation a small transaction makes.
	keyChunks0 [1][]byte
	keyChunk0  [64]byte
	valChunks0 [2][]byte
	valChunk0  [firstChunk]byte
	leaves0    [2]leaf
	undo0      [4]undoRec
}

func newArt() *art {
	t := &art{}
	t.keys.chunks = append(t.keyChunks0[:0], t.keyChunk0[:0])
	t.vals.chunks = append(t.valChunks0[:0], t.valChunk0[:0])
	t.leaves = t.leaves0[:0]
	return t
}

func (t *art) hdr(n ref) *header {
	switch n.kind() {
	case kind4:
		return &t.n4[n.idx()].header
	case kind16:
		return &t.n16[n.idx()].header
	case kind48:
		return &t.n48[n.idx()].header
	default:
		return &t.n256[n.idx()].header
	}
}

func (t *art) key(li int) []byte {
	l := &t.leaves[li]
	return t.keys.get(l.key, int(l.klen))
}

func (t *art) value(st state) []byte {
	if st.vlen < 0 {
		return nil
	}
	return t.vals.get(st.val, int(st.vlen))
}

func (t *art) newLeaf(key []byte) int {
	if len(t.leaves) == idxMask {
		// 2^29 keys: gigabytes beyond any transaction size limit.
		panic("memdb: too many keys for a ref")
	}
	t.leaves = grow(t.leaves)
	t.leaves = append(t.leaves, leaf{key: t.keys.alloc(key), klen: uint32(len(key)), st: state{vlen: -1}})
	return len(t.leaves) - 1
}

func (t *art) newNode4(prefix addr, plen int) ref {
	t.n4 = append(t.n4, node4{header: header{prefix: prefix, plen: uint32(plen)}})
	return mkRef(kind4, len(t.n4)-1)
}

// sorted returns a node4's or node16's children: their bytes, ascending,
// and refs (ok false for the other kinds).
func (t *art) sorted(n ref) (keys []byte, kids []ref, ok bool) {
	switch n.kind() {
	case kind4:
		x := &t.n4[n.idx()]
		return x.keys[:x.n], x.kids[:x.n], true
	case kind16:
		x := &t.n16[n.idx()]
		return x.keys[:x.n], x.kids[:x.n], true
	}
	return nil, nil, false
}

// child returns n's child under byte b, or 0.
func (t *art) child(n ref, b byte) ref {
	if keys, kids, ok := t.sorted(n); ok {
		if i := bytes.IndexByte(keys, b); i >= 0 {
			return kids[i]
		}
		return 0
	}
	return t.at(n, int(b))
}

// setChild replaces n's existing child under b.
func (t *art) setChild(n ref, b byte, c ref) {
	if keys, kids, ok := t.sorted(n); ok {
		kids[bytes.IndexByte(keys, b)] = c
		return
	}
	if n.kind() == kind48 {
		x := &t.n48[n.idx()]
		x.kids[x.slot[b]-1] = c
		return
	}
	t.n256[n.idx()].kids[b] = c
}

// insertSorted puts (b, c) into the first n places of keys and kids,
// which have room for it.
func insertSorted(keys []byte, kids []ref, n int, b byte, c ref) {
	i := n
	for i > 0 && keys[i-1] > b {
		keys[i], kids[i] = keys[i-1], kids[i-1]
		i--
	}
	keys[i], kids[i] = b, c
}

// addChild adds child c under byte b (which n does not have yet), growing
// n when it is full, and returns n's ref (a new one when it grew; the old
// slot is abandoned).
func (t *art) addChild(n ref, b byte, c ref) ref {
	switch n.kind() {
	case kind4:
		x := &t.n4[n.idx()]
		if x.n < 4 {
			insertSorted(x.keys[:], x.kids[:], int(x.n), b, c)
			x.n++
			return n
		}
		t.n16 = append(t.n16, node16{header: x.header})
		y := &t.n16[len(t.n16)-1]
		copy(y.keys[:], x.keys[:])
		copy(y.kids[:], x.kids[:])
		n = mkRef(kind16, len(t.n16)-1)
		fallthrough
	case kind16:
		x := &t.n16[n.idx()]
		if x.n < 16 {
			insertSorted(x.keys[:], x.kids[:], int(x.n), b, c)
			x.n++
			return n
		}
		t.n48 = append(t.n48, node48{header: x.header})
		y := &t.n48[len(t.n48)-1]
		for i := range 16 {
			y.slot[x.keys[i]] = uint8(i + 1)
			y.kids[i] = x.kids[i]
		}
		n = mkRef(kind48, len(t.n48)-1)
		fallthrough
	case kind48:
		x := &t.n48[n.idx()]
		if x.n < 48 {
			x.kids[x.n] = c
			x.n++
			x.slot[b] = uint8(x.n)
			return n
		}
		t.n256 = append(t.n256, node256{header: x.header})
		y := &t.n256[len(t.n256)-1]
		for k, s := range x.slot {
			if s != 0 {
				y.kids[k] = x.kids[s-1]
			}
		}
		n = mkRef(kind256, len(t.n256)-1)
		fallthrough
	default:
		x := &t.n256[n.idx()]
		x.kids[b] = c
		x.n++
		return n
	}
}

// Children are visited by position: the index into keys and kids for a
// node4 or node16, the byte for a node48 or node256.

// seek returns the position of n's first child with a byte >= b.
func (t *art) seek(n ref, b int) int {
	keys, _, ok := t.sorted(n)
	if !ok {
		return b
	}
	i := 0
	for i < len(keys) && int(keys[i]) < b {
		i++
	}
	return i
}

// end returns the position after n's last child.
func (t *art) end(n ref) int {
	if keys, _, ok := t.sorted(n); ok {
		return len(keys)
	}
	return 256
}

// next returns n's first child at position pos or after, its byte and the
// position after it; c == 0 when there is none.
func (t *art) next(n ref, pos int) (b int, c ref, after int) {
	if keys, kids, ok := t.sorted(n); ok {
		if pos < len(keys) {
			return int(keys[pos]), kids[pos], pos + 1
		}
		return 0, 0, pos
	}
	for ; pos < 256; pos++ {
		if c := t.at(n, pos); c != 0 {
			return pos, c, pos + 1
		}
	}
	return 0, 0, pos
}

// prev returns n's last child before position pos, its byte and its
// position; c == 0 when there is none.
func (t *art) prev(n ref, pos int) (b int, c ref, at int) {
	if keys, kids, ok := t.sorted(n); ok {
		if pos > 0 {
			return int(keys[pos-1]), kids[pos-1], pos - 1
		}
		return 0, 0, 0
	}
	for pos--; pos >= 0; pos-- {
		if c := t.at(n, pos); c != 0 {
			return pos, c, pos
		}
	}
	return 0, 0, 0
}

// at returns a node48's or node256's child under byte b, or 0.
func (t *art) at(n ref, b int) ref {
	if n.kind() == kind48 {
		x := &t.n48[n.idx()]
		if s := x.slot[b]; s != 0 {
			return x.kids[s-1]
		}
		return 0
	}
	return t.n256[n.idx()].kids[b]
}

// lookup returns the leaf of key (live or not), or -1. Prefixes are
// skipped, not compared: the leaf reached is compared whole.
func (t *art) lookup(key []byte) int {
	n, depth := t.root, 0
	for n != 0 {
		if n.kind() == kindLeaf {
			if li := n.idx(); bytes.Equal(t.key(li), key) {
				return li
			}
			return -1
		}
		h := t.hdr(n)
		depth += int(h.plen)
		switch {
		case depth > len(key):
			return -1
		case depth == len(key):
			n = h.inplace
			continue
		}
		n = t.child(n, key[depth])
		depth++
	}
	return -1
}

// insert returns key's leaf, adding a (dead) one when the tree has none.
func (t *art) insert(key []byte) int {
	if t.root == 0 {
		li := t.newLeaf(key)
		t.root = mkRef(kindLeaf, li)
		return li
	}
	// parent's child under pb is n (parent 0: n is the root).
	var parent ref
	var pb byte
	n, depth := t.root, 0
	replace := func(nn ref) {
		if parent == 0 {
			t.root = nn
		} else {
			t.setChild(parent, pb, nn)
		}
	}
	for {
		if n.kind() == kindLeaf {
			old := n.idx()
			ok := t.key(old)
			if bytes.Equal(ok, key) {
				return old
			}
			i := depth
			for i < len(ok) && i < len(key) && ok[i] == key[i] {
				i++
			}
			li := t.newLeaf(key)
			nn := t.newNode4(t.leaves[old].key+addr(depth), i-depth)
			nn = t.place(nn, ok, i, n)
			nn = t.place(nn, key, i, mkRef(kindLeaf, li))
			replace(nn)
			return li
		}
		h := t.hdr(n)
		p := t.keys.get(h.prefix, int(h.plen))
		m := 0
		for m < len(p) && depth+m < len(key) && p[m] == key[depth+m] {
			m++
		}
		if m < len(p) {
			// key leaves the prefix at m: a node holding p[:m] above n.
			li := t.newLeaf(key)
			prefix := h.prefix
			nn := t.newNode4(prefix, m)
			h = t.hdr(n) // newNode4 may have moved n's slab
			h.prefix += addr(m + 1)
			h.plen -= uint32(m + 1)
			nn = t.addChild(nn, p[m], n)
			nn = t.place(nn, key, depth+m, mkRef(kindLeaf, li))
			replace(nn)
			return li
		}
		depth += len(p)
		if depth == len(key) {
			if h.inplace != 0 {
				return h.inplace.idx()
			}
			li := t.newLeaf(key)
			t.hdr(n).inplace = mkRef(kindLeaf, li)
			return li
		}
		b := key[depth]
		c := t.child(n, b)
		if c == 0 {
			li := t.newLeaf(key)
			if nn := t.addChild(n, b, mkRef(kindLeaf, li)); nn != n {
				replace(nn)
			}
			return li
		}
		parent, pb, n, depth = n, b, c, depth+1
	}
}

// place hangs c, whose key is k, below the new node n at byte k[i], or as
// its inplace leaf when k ends at i.
func (t *art) place(n ref, k []byte, i int, c ref) ref {
	if i == len(k) {
		t.hdr(n).inplace = c
		return n
	}
	return t.addChild(n, k[i], c)
}

// versus places the keys below the inner node h (which agree with
// bound's first depth bytes) against bound: -1 every one is < bound, 1
// every one is >= bound, 0 bound goes on past h's prefix, which it shares.
func (t *art) versus(h *header, depth int, bound []byte) int {
	rest := bound[depth:]
	k := min(int(h.plen), len(rest))
	if c := bytes.Compare(t.keys.get(h.prefix, k), rest[:k]); c != 0 {
		return c
	}
	if len(rest) <= int(h.plen) {
		return 1
	}
	return 0
}

// ascend calls f with the leaves below n in key order, from the first key
// >= lo when bounded (n's keys agree with lo's first depth bytes), and
// stops when f returns false; it returns false when stopped.
func (t *art) ascend(n ref, depth int, lo []byte, bounded bool, f func(li int) bool) bool {
	if n == 0 {
		return true
	}
	if n.kind() == kindLeaf {
		if bounded && bytes.Compare(t.key(n.idx()), lo) < 0 {
			return true
		}
		return f(n.idx())
	}
	h := t.hdr(n)
	plen := int(h.plen)
	if bounded {
		switch t.versus(h, depth, lo) {
		case -1:
			return true
		case 1:
			bounded = false
		}
	}
	depth += plen
	pos := 0
	if bounded {
		// The inplace key is lo[:depth] < lo.
		pos = t.seek(n, int(lo[depth]))
	} else if h.inplace != 0 && !f(h.inplace.idx()) {
		return false
	}
	for {
		b, c, after := t.next(n, pos)
		if c == 0 {
			return true
		}
		if !t.ascend(c, depth+1, lo, bounded && b == int(lo[depth]), f) {
			return false
		}
		pos = after
	}
}

// descend calls f with the leaves below n in descending key order, from
// the last key < hi when bounded, and stops when f returns false; it
// returns false when stopped.
func (t *art) descend(n ref, depth int, hi []byte, bounded bool, f func(li int) bool) bool {
	if n == 0 {
		return true
	}
	if n.kind() == kindLeaf {
		if bounded && bytes.Compare(t.key(n.idx()), hi) >= 0 {
			return true
		}
		return f(n.idx())
	}
	h := t.hdr(n)
	plen := int(h.plen)
	if bounded {
		switch t.versus(h, depth, hi) {
		case 1:
			return true
		case -1:
			bounded = false
		}
	}
	depth += plen
	pos := t.end(n)
	if bounded {
		pos = t.seek(n, int(hi[depth])+1)
	}
	for {
		b, c, at := t.prev(n, pos)
		if c == 0 {
			break
		}
		if !t.descend(c, depth+1, hi, bounded && b == int(hi[depth]), f) {
			return false
		}
		pos = at
	}
	// The inplace key is the smallest below n, and < hi when bounded (a
	// proper prefix of it).
	if h = t.hdr(n); h.inplace != 0 {
		return f(h.inplace.idx())
	}
	return true
}
