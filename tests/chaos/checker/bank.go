package checker

import (
	"fmt"
	"sort"
)

// Bank checks a bank history: every OK "read" (Value map[int]int64,
// account -> balance, all read in one snapshot) holds each of the accounts
// exactly and sums to total; with nonNegative, no balance is below zero
// (the workload never transfers more than the source holds). Transfers
// ("transfer") are only counted.
func Bank(h []Op, accounts int, total int64, nonNegative bool) (*Result, error) {
	pairs, err := Pairs(h)
	if err != nil {
		return nil, err
	}
	res := &Result{Valid: true}
	count(res, pairs)
	for _, p := range pairs {
		c := p.Complete
		if p.Invoke.F != "read" || c.Type != OK {
			continue
		}
		bal, ok := c.Value.(map[int]int64)
		if !ok {
			return nil, fmt.Errorf("checker: bank read value %T, want map[int]int64: %v", c.Value, c)
		}
		var sum int64
		var missing, negative []int
		for a := range accounts {
			b, ok := bal[a]
			if !ok {
				missing = append(missing, a)
			}
			if b < 0 {
				negative = append(negative, a)
			}
			sum += b
		}
		var extra []int
		for a := range bal {
			if a < 0 || a >= accounts {
				extra = append(extra, a)
			}
		}
		sort.Ints(extra)
		switch {
		case len(missing) > 0 || len(extra) > 0:
			res.add(Anomaly{Kind: "missing-account", Message: fmt.Sprintf("read %d accounts (missing %v, unknown %v), want %d", len(bal), missing, extra, accounts), Ops: []Op{c}})
		case sum != total:
			res.add(Anomaly{Kind: "wrong-total", Message: fmt.Sprintf("balances sum to %d, want %d", sum, total), Ops: []Op{c}})
		}
		if nonNegative && len(negative) > 0 {
			res.add(Anomaly{Kind: "negative", Message: fmt.Sprintf("accounts %v below zero", negative), Ops: []Op{c}})
		}
	}
	return res, nil
}

// Set checks a set history: "add" operations (Value int, unique) and
// reads ("read", Value []int). The last OK read must hold every
// acknowledged add ("lost" otherwise) and nothing never added
// ("unexpected"); an indeterminate add may be there or not. Recovered
// counts the indeterminate adds the read found.
func Set(h []Op) (res *Result, recovered int, err error) {
	pairs, err := Pairs(h)
	if err != nil {
		return nil, 0, err
	}
	res = &Result{Valid: true}
	count(res, pairs)
	adds := map[int]Pair{}
	var final *Op
	for _, p := range pairs {
		switch p.Invoke.F {
		case "add":
			v, ok := p.Invoke.Value.(int)
			if !ok {
				return nil, 0, fmt.Errorf("checker: set add value %T, want int: %v", p.Invoke.Value, p.Invoke)
			}
			adds[v] = p
		case "read":
			if p.Complete.Type == OK {
				c := p.Complete
				final = &c
			}
		}
	}
	if final == nil {
		res.add(Anomaly{Kind: "no-read", Message: "no read succeeded: nothing can be checked"})
		return res, 0, nil
	}
	vals, ok := final.Value.([]int)
	if !ok {
		return nil, 0, fmt.Errorf("checker: set read value %T, want []int: %v", final.Value, final)
	}
	present := map[int]bool{}
	for _, v := range vals {
		p, ok := adds[v]
		switch {
		case !ok:
			res.add(Anomaly{Kind: "unexpected", Message: fmt.Sprintf("read %d, which was never added", v), Ops: []Op{*final}})
		case p.Complete.Type == Fail:
			res.add(Anomaly{Kind: "unexpected", Message: fmt.Sprintf("read %d, whose add failed", v), Ops: []Op{p.Complete, *final}})
		case p.Complete.Type == Info:
			recovered++
		}
		present[v] = true
	}
	var lost []int
	for v, p := range adds {
		if p.Complete.Type == OK && !present[v] {
			lost = append(lost, v)
		}
	}
	sort.Ints(lost)
	for _, v := range lost {
		res.add(Anomaly{Kind: "lost", Message: fmt.Sprintf("acknowledged add of %d is missing from the final read", v), Ops: []Op{adds[v].Complete, *final}})
	}
	return res, recovered, nil
}

// MonoRead is the Value of a monotonic workload's OK "read": the value of
// a counter (or a TSO-derived timestamp) named Key.
type MonoRead struct {
	Key   string
	Value int64
}

// Monotonic checks that a read of a key that began after another read of
// the same key completed returns a value at least as large (real-time
// order: reads of a single key are linearizable).
func Monotonic(h []Op) (*Result, error) {
	pairs, err := Pairs(h)
	if err != nil {
		return nil, err
	}
	res := &Result{Valid: true}
	count(res, pairs)
	byKey := map[string][]Pair{}
	var keys []string
	for _, p := range pairs {
		if p.Invoke.F != "read" || p.Complete.Type != OK {
			continue
		}
		r, ok := p.Complete.Value.(MonoRead)
		if !ok {
			return nil, fmt.Errorf("checker: monotonic read value %T, want checker.MonoRead: %v", p.Complete.Value, p.Complete)
		}
		if _, ok := byKey[r.Key]; !ok {
			keys = append(keys, r.Key)
		}
		byKey[r.Key] = append(byKey[r.Key], p)
	}
	sort.Strings(keys)
	for _, k := range keys {
		reads := byKey[k]
		byReturn := append([]Pair(nil), reads...)
		sort.SliceStable(reads, func(a, b int) bool { return reads[a].Invoke.Time < reads[b].Invoke.Time })
		sort.SliceStable(byReturn, func(a, b int) bool { return byReturn[a].Complete.Time < byReturn[b].Complete.Time })
		// Sweep: before each read's invocation, the largest value of the
		// reads already completed.
		j, best := 0, -1
		for _, r := range reads {
			for j < len(byReturn) && byReturn[j].Complete.Time < r.Invoke.Time {
				if best < 0 || byReturn[j].Complete.Value.(MonoRead).Value > byReturn[best].Complete.Value.(MonoRead).Value {
					best = j
				}
				j++
			}
			if best >= 0 {
				prev := byReturn[best].Complete
				if v, pv := r.Complete.Value.(MonoRead).Value, prev.Value.(MonoRead).Value; v < pv {
					res.add(Anomaly{Kind: "nonmonotonic", Message: fmt.Sprintf("%s read %d after a read of %d had completed", k, v, pv), Ops: []Op{prev, r.Complete}})
				}
			}
		}
	}
	return res, nil
}
