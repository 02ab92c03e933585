package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Mop is one micro-operation of a list-append transaction: an append of
// Value to the list at Key, or a read of Key's list (List, filled in the
// completion of an OK transaction).
type Mop struct {
	Append bool
	Key    int
	Value  int   // the appended element (appends)
	List   []int // what the read returned (reads; nil in an invocation)
}

func (m Mop) String() string {
	if m.Append {
		return fmt.Sprintf("append(%d,%d)", m.Key, m.Value)
	}
	return fmt.Sprintf("r(%d,%v)", m.Key, m.List)
}

// Txn is the Value of a list-append operation (F "txn").
type Txn []Mop

// Dependency kinds between transactions (Adya's, as Elle infers them).
const (
	ww = 1 << iota // T1 wrote a version, T2 wrote the next
	wr             // T2 read the version T1 wrote
	rw             // T1 read a version, T2 wrote the next (anti-dependency)
)

func depName(d int) string {
	var parts []string
	for _, x := range []struct {
		bit  int
		name string
	}{{ww, "ww"}, {wr, "wr"}, {rw, "rw"}} {
		if d&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	return strings.Join(parts, "+")
}

// ListAppend checks a list-append history (Elle's list-append workload,
// Kingsbury and Alvaro, VLDB 2020) for snapshot isolation. Every append
// of a key must carry an element unique to that key. It infers each key's
// version order from the longest list any committed read returned (every
// other read must be a prefix of it), derives write-write, write-read and
// read-write dependencies between committed transactions (and
// indeterminate ones whose writes were read), and searches the dependency
// graph for cycles:
//
//   - G0 (write cycle: ww only), G1c (ww and wr), G-single (exactly one rw)
//     are anomalies snapshot isolation forbids;
//   - G2-item (two or more rw) is write skew, which snapshot isolation
//     allows: it is reported in Result.Allowed, not as a failure.
//
// Outside the graph it reports G1a (a read saw an element of a failed
// transaction), G1b (a read ended at an element its writer later
// overwrote in the same transaction), garbage (an element nobody
// appended), duplicates, incompatible-order (two reads of a key that are
// not prefixes of one list) and internal (a transaction's read disagrees
// with its own earlier reads and appends).
func ListAppend(h []Op) (*ListAppendResult, error) {
	pairs, err := Pairs(h)
	if err != nil {
		return nil, err
	}
	c := &appendCheck{res: &ListAppendResult{Result: Result{Valid: true}}, writer: map[elem]int{}}
	count(&c.res.Result, pairs)
	for _, p := range pairs {
		if p.Invoke.F != "txn" {
			continue
		}
		t := appendTxn{invoke: p.Invoke, complete: p.Complete, state: p.Complete.Type}
		v := p.Complete.Value
		if t.state != OK {
			v = p.Invoke.Value // no results: the appends are what it tried
		}
		mops, ok := v.(Txn)
		if !ok {
			return nil, fmt.Errorf("checker: txn value %T, want checker.Txn: %v", v, p.Complete)
		}
		t.mops = mops
		c.txns = append(c.txns, t)
	}
	if err := c.indexWrites(); err != nil {
		return nil, err
	}
	c.checkReads()
	c.versionOrders()
	c.checkInternal()
	c.buildGraph()
	c.cycles()
	return c.res, nil
}

// ListAppendResult adds to Result the cycles snapshot isolation allows.
type ListAppendResult struct {
	Result
	Allowed []Anomaly // G2-item cycles (write skew)
	Edges   int       // dependency edges inferred
}

type elem struct{ key, value int }

type appendTxn struct {
	invoke, complete Op
	state            Type
	mops             Txn
}

type appendCheck struct {
	res    *ListAppendResult
	txns   []appendTxn
	writer map[elem]int // element -> index of the transaction that appended it
	final  map[elem]bool
	order  map[int][]int // key -> version order (elements in list order)
	inG    []bool        // transactions that are nodes of the graph
	adj    []map[int]*edge
}

type edge struct {
	dep int
	why string // one witness per dependency kind, for the report
}

func (c *appendCheck) op(i int) Op {
	o := c.txns[i].complete
	if c.txns[i].state != OK {
		o = c.txns[i].invoke
		o.Type = c.txns[i].state
	}
	return o
}

// indexWrites records the writer of every element and whether it is the
// writer's final append to its key.
func (c *appendCheck) indexWrites() error {
	c.final = map[elem]bool{}
	for i, t := range c.txns {
		last := map[int]int{}
		for _, m := range t.mops {
			if !m.Append {
				continue
			}
			e := elem{m.Key, m.Value}
			if j, dup := c.writer[e]; dup {
				return fmt.Errorf("checker: element %d appended to key %d twice (%v and %v): the workload must make appends unique", m.Value, m.Key, c.op(j), c.op(i))
			}
			c.writer[e] = i
			last[m.Key] = m.Value
		}
		for k, v := range last {
			c.final[elem{k, v}] = true
		}
	}
	return nil
}

// checkReads looks at every element a committed read returned.
func (c *appendCheck) checkReads() {
	for i, t := range c.txns {
		if t.state != OK {
			continue
		}
		for _, m := range t.mops {
			if m.Append {
				continue
			}
			seen := map[int]bool{}
			for j, v := range m.List {
				if seen[v] {
					c.res.add(Anomaly{Kind: "duplicate", Message: fmt.Sprintf("read of key %d returned %d twice: %v", m.Key, v, m.List), Ops: []Op{c.op(i)}})
				}
				seen[v] = true
				e := elem{m.Key, v}
				w, ok := c.writer[e]
				switch {
				case !ok:
					c.res.add(Anomaly{Kind: "garbage", Message: fmt.Sprintf("read of key %d returned %d, which no transaction appended", m.Key, v), Ops: []Op{c.op(i)}})
				case c.txns[w].state == Fail:
					c.res.add(Anomaly{Kind: "G1a", Message: fmt.Sprintf("aborted read: key %d element %d was appended by a failed transaction", m.Key, v), Ops: []Op{c.op(w), c.op(i)}})
				case j == len(m.List)-1 && w != i && !c.final[e]:
					c.res.add(Anomaly{Kind: "G1b", Message: fmt.Sprintf("intermediate read: key %d ends at %d, which its writer overwrote in the same transaction", m.Key, v), Ops: []Op{c.op(w), c.op(i)}})
				}
			}
		}
	}
}

// versionOrders takes each key's longest committed read as its version
// order and checks that every other read is a prefix of it.
func (c *appendCheck) versionOrders() {
	c.order = map[int][]int{}
	from := map[int]int{} // key -> txn of the longest read
	for i, t := range c.txns {
		if t.state != OK {
			continue
		}
		for _, m := range t.mops {
			if !m.Append && len(m.List) > len(c.order[m.Key]) {
				c.order[m.Key], from[m.Key] = m.List, i
			}
		}
	}
	for i, t := range c.txns {
		if t.state != OK {
			continue
		}
		for _, m := range t.mops {
			if m.Append {
				continue
			}
			if o := c.order[m.Key]; !slices.Equal(o[:len(m.List)], m.List) {
				c.res.add(Anomaly{Kind: "incompatible-order", Message: fmt.Sprintf("key %d read as %v and as %v: neither is a prefix of the other", m.Key, m.List, o),
					Ops: []Op{c.op(i), c.op(from[m.Key])}})
			}
		}
	}
}

// checkInternal checks each committed transaction against itself: a read
// of a key it read or appended before must show those.
func (c *appendCheck) checkInternal() {
	for i, t := range c.txns {
		if t.state != OK {
			continue
		}
		known := map[int][]int{}    // key -> the whole list, once read
		appended := map[int][]int{} // key -> own appends not yet seen by a read
		for _, m := range t.mops {
			if m.Append {
				if l, ok := known[m.Key]; ok {
					known[m.Key] = append(slices.Clone(l), m.Value)
				} else {
					appended[m.Key] = append(appended[m.Key], m.Value)
				}
				continue
			}
			want, ok := known[m.Key]
			bad := ok && !slices.Equal(want, m.List)
			if a := appended[m.Key]; !ok && len(a) > 0 {
				bad = len(m.List) < len(a) || !slices.Equal(m.List[len(m.List)-len(a):], a)
				want = a
			}
			if bad {
				c.res.add(Anomaly{Kind: "internal", Message: fmt.Sprintf("key %d read as %v inside a transaction that expected %v", m.Key, m.List, want), Ops: []Op{c.op(i)}})
			}
			known[m.Key] = m.List
			delete(appended, m.Key)
		}
	}
}

// buildGraph adds the ww, wr and rw dependencies between graph nodes:
// committed transactions and indeterminate ones whose elements a read
// returned.
func (c *appendCheck) buildGraph() {
	n := len(c.txns)
	c.inG = make([]bool, n)
	c.adj = make([]map[int]*edge, n)
	for i, t := range c.txns {
		c.inG[i] = t.state == OK
	}
	for k, o := range c.order {
		for _, v := range o {
			if w, ok := c.writer[elem{k, v}]; ok && c.txns[w].state == Info {
				c.inG[w] = true
			}
		}
	}
	add := func(a, b, dep int, why string) {
		if a == b || !c.inG[a] || !c.inG[b] {
			return
		}
		if c.adj[a] == nil {
			c.adj[a] = map[int]*edge{}
		}
		e := c.adj[a][b]
		if e == nil {
			e = &edge{}
			c.adj[a][b] = e
			c.res.Edges++
		}
		if e.dep&dep == 0 {
			e.dep |= dep
			if e.why != "" {
				e.why += "; "
			}
			e.why += why
		}
	}
	keys := make([]int, 0, len(c.order))
	for k := range c.order {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		o := c.order[k]
		for j := 1; j < len(o); j++ {
			a, aok := c.writer[elem{k, o[j-1]}]
			b, bok := c.writer[elem{k, o[j]}]
			if aok && bok {
				add(a, b, ww, fmt.Sprintf("ww key %d: %d then %d", k, o[j-1], o[j]))
			}
		}
	}
	for i, t := range c.txns {
		if t.state != OK {
			continue
		}
		wrote := map[int]bool{}
		for _, m := range t.mops {
			if m.Append {
				wrote[m.Key] = true
				continue
			}
			if wrote[m.Key] {
				continue // not an external read
			}
			o := c.order[m.Key]
			if n := len(m.List); n > 0 {
				if w, ok := c.writer[elem{m.Key, m.List[n-1]}]; ok {
					add(w, i, wr, fmt.Sprintf("wr key %d: read up to %d", m.Key, m.List[n-1]))
				}
			}
			if n := len(m.List); n < len(o) && slices.Equal(o[:n], m.List) {
				if w, ok := c.writer[elem{m.Key, o[n]}]; ok {
					add(i, w, rw, fmt.Sprintf("rw key %d: read %v, next %d", m.Key, m.List, o[n]))
				}
			}
		}
	}
}

// cycles finds the strongly connected components of the dependency graph
// and, in each, the most severe cycle: G0, else G1c, else G-single, else
// G2-item.
func (c *appendCheck) cycles() {
	for _, scc := range c.sccs(ww | wr | rw) {
		in := map[int]bool{}
		for _, v := range scc {
			in[v] = true
		}
		if cyc := c.cycle(in, ww, ww); cyc != nil {
			c.report("G0", "write cycle", cyc, false)
			continue
		}
		if cyc := c.cycle(in, ww|wr, ww|wr); cyc != nil {
			c.report("G1c", "circular information flow", cyc, false)
			continue
		}
		if cyc := c.cycle(in, rw, ww|wr); cyc != nil {
			c.report("G-single", "read skew: a cycle with one anti-dependency", cyc, false)
			continue
		}
		if cyc := c.cycle(in, ww|wr|rw, ww|wr|rw); cyc != nil {
			c.report("G2-item", "write skew: a cycle with two or more anti-dependencies", cyc, true)
		}
	}
}

func (c *appendCheck) report(kind, what string, cyc []int, allowed bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s over %d transactions:", what, len(cyc))
	ops := make([]Op, 0, len(cyc))
	for j, v := range cyc {
		w := cyc[(j+1)%len(cyc)]
		fmt.Fprintf(&b, "\n    T%d -%s-> T%d (%s)", c.op(v).Index, depName(c.adj[v][w].dep), c.op(w).Index, c.adj[v][w].why)
		ops = append(ops, c.op(v))
	}
	a := Anomaly{Kind: kind, Message: b.String(), Ops: ops}
	if allowed {
		c.res.Allowed = append(c.res.Allowed, a)
		return
	}
	c.res.add(a)
}

// sccs returns the components of more than one node over edges of the
// given kinds (Tarjan's algorithm, iterative).
func (c *appendCheck) sccs(mask int) [][]int {
	n := len(c.txns)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	type frame struct {
		v     int
		succs []int
		i     int
	}
	succs := func(v int) []int {
		var s []int
		for w, e := range c.adj[v] {
			if e.dep&mask != 0 {
				s = append(s, w)
			}
		}
		sort.Ints(s)
		return s
	}
	for root := range n {
		if !c.inG[root] || index[root] >= 0 {
			continue
		}
		call := []frame{{v: root, succs: succs(root)}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(f.succs) {
				w := f.succs[f.i]
				f.i++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w, succs: succs(w)})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				if len(comp) > 1 {
					sort.Ints(comp)
					out = append(out, comp)
				}
			}
		}
	}
	return out
}

// path returns a shortest path from a to b over edges of the kinds in mask
// between nodes of in (both ends included), or nil.
func (c *appendCheck) path(in map[int]bool, mask, a, b int) []int {
	prev := map[int]int{a: a}
	queue := []int{a}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		ws := make([]int, 0, len(c.adj[v]))
		for w := range c.adj[v] {
			ws = append(ws, w)
		}
		sort.Ints(ws)
		for _, w := range ws {
			if c.adj[v][w].dep&mask == 0 || !in[w] {
				continue
			}
			if _, seen := prev[w]; seen {
				continue
			}
			prev[w] = v
			if w == b {
				p := []int{b}
				for x := v; x != a; x = prev[x] {
					p = append(p, x)
				}
				p = append(p, a)
				slices.Reverse(p)
				return p
			}
			queue = append(queue, w)
		}
	}
	return nil
}

// cycle returns a cycle among the nodes of in that starts with an edge of
// a kind in first and closes over edges of the kinds in rest, or nil.
func (c *appendCheck) cycle(in map[int]bool, first, rest int) []int {
	nodes := make([]int, 0, len(in))
	for v := range in {
		nodes = append(nodes, v)
	}
	sort.Ints(nodes)
	for _, v := range nodes {
		for _, w := range nodes {
			e := c.adj[v][w]
			if e == nil || e.dep&first == 0 {
				continue
			}
			if p := c.path(in, rest, w, v); p != nil {
				return append([]int{v}, p[:len(p)-1]...)
			}
		}
	}
	return nil
}
