package checker

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// RegisterOp is the Value of a register operation (F "read", "write" or
// "cas") on one key. A register that was never written reads as 0; the
// workload writes values of 1 and above.
type RegisterOp struct {
	Key   int
	Value int // write: the value; read: the value read (OK completions)
	From  int // cas: expected
	To    int // cas: new value
	// Swapped is a cas completion's outcome: whether it found From. A
	// cas that did not find From completes OK with Swapped false.
	Swapped bool
}

type regIn struct {
	f               string
	value, from, to int
}

type regOut struct {
	value   int
	swapped bool
	unknown bool // indeterminate: any outcome
}

// registerModel is one register; porcupine partitions the history by key.
var registerModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		var keys []int
		for _, o := range h {
			k := o.Metadata.(int)
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], o)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{0} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(int), input.(regIn), output.(regOut)
		switch in.f {
		case "read":
			if out.unknown || out.value == s {
				return []any{s}
			}
		case "write":
			return []any{in.value}
		case "cas":
			switch {
			case out.unknown && s == in.from:
				return []any{in.to, s} // it swapped, or never ran
			case out.unknown:
				return []any{s}
			case out.swapped && s == in.from:
				return []any{in.to}
			case !out.swapped && s != in.from:
				return []any{s}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regIn), output.(regOut)
		switch {
		case out.unknown:
			return fmt.Sprintf("%s(%d,%d,%d) -> ?", in.f, in.value, in.from, in.to)
		case in.f == "read":
			return fmt.Sprintf("read -> %d", out.value)
		case in.f == "write":
			return fmt.Sprintf("write(%d)", in.value)
		}
		return fmt.Sprintf("cas(%d->%d) -> %v", in.from, in.to, out.swapped)
	},
}).ToModel()

// Register checks that reads, writes and compare-and-sets of each key are
// linearizable. A failed operation took no effect and is left out; an
// indeterminate write or cas may take effect at any time after its
// invocation, or never (its return is open-ended); an indeterminate read
// constrains nothing and is left out. The search is NP-hard in general:
// past timeout the result is invalid with an "unknown" anomaly, never
// silently valid, so a workload must keep each key's history short.
func Register(h []Op, timeout time.Duration) (*Result, error) {
	pairs, err := Pairs(h)
	if err != nil {
		return nil, err
	}
	res := &Result{Valid: true}
	count(res, pairs)
	var ops []porcupine.Operation
	var src []Pair
	for _, p := range pairs {
		c := p.Complete
		if c.Type == Fail || (c.Type != OK && p.Invoke.F == "read") {
			continue
		}
		inv, ok := p.Invoke.Value.(RegisterOp)
		if !ok {
			return nil, fmt.Errorf("checker: register value %T, want checker.RegisterOp: %v", p.Invoke.Value, p.Invoke)
		}
		in := regIn{f: p.Invoke.F, value: inv.Value, from: inv.From, to: inv.To}
		out := regOut{unknown: c.Type != OK}
		ret := c.Time
		if c.Type == OK {
			done, ok := c.Value.(RegisterOp)
			if !ok {
				return nil, fmt.Errorf("checker: register result %T, want checker.RegisterOp: %v", c.Value, c)
			}
			out.value, out.swapped = done.Value, done.Swapped
		} else {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: p.Invoke.Process, Input: in, Call: p.Invoke.Time, Output: out, Return: ret, Metadata: inv.Key})
		src = append(src, p)
	}
	r, info := porcupine.CheckOperationsVerbose(registerModel, ops, timeout)
	switch r {
	case porcupine.Ok:
		return res, nil
	case porcupine.Unknown:
		res.add(Anomaly{Kind: "unknown", Message: fmt.Sprintf("linearizability search of %d operations gave up after %v", len(ops), timeout)})
		return res, nil
	}
	// Name the key whose partition failed: the longest partial
	// linearization of each partition shows how far it got.
	byKey := map[int][]Op{}
	for _, p := range src {
		k := p.Invoke.Value.(RegisterOp).Key
		byKey[k] = append(byKey[k], p.Complete)
	}
	for _, part := range info.PartialLinearizationsOperations() {
		if len(part) == 0 || len(part[0]) == 0 {
			continue
		}
		k := part[0][0].Metadata.(int)
		longest := 0
		for _, l := range part {
			longest = max(longest, len(l))
		}
		if longest < len(byKey[k]) {
			ops := byKey[k]
			if len(ops) > 20 {
				ops = ops[:20]
			}
			res.add(Anomaly{Kind: "nonlinearizable", Message: fmt.Sprintf("key %d: no order of its %d operations explains every result (at most %d linearize)", k, len(byKey[k]), longest), Ops: ops})
		}
	}
	if res.Valid {
		res.add(Anomaly{Kind: "nonlinearizable", Message: "porcupine found the history not linearizable"})
	}
	return res, nil
}
