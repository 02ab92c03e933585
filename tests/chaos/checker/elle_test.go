package checker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hist builds hand-made histories; each call appends an invocation and
// its completion one tick apart, unless ops are interleaved by hand.
type hist struct {
	ops []Op
	now int64
}

func (h *hist) add(p int, t Type, f string, v any) {
	h.now++
	h.ops = append(h.ops, Op{Index: len(h.ops), Process: p, Type: t, F: f, Value: v, Time: h.now})
}

// txn records a whole transaction: invoked with reads unfilled, completed
// as t with the values given.
func (h *hist) txn(p int, t Type, mops ...Mop) {
	inv := make(Txn, len(mops))
	for i, m := range mops {
		inv[i] = Mop{Append: m.Append, Key: m.Key, Value: m.Value}
	}
	h.add(p, Invoke, "txn", inv)
	h.add(p, t, "txn", Txn(mops))
}

func ap(k, v int) Mop        { return Mop{Append: true, Key: k, Value: v} }
func rd(k int, l ...int) Mop { return Mop{Key: k, List: append([]int{}, l...)} }

func TestListAppend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func(h *hist)
		kinds   []string // forbidden anomalies found
		allowed []string // cycles snapshot isolation allows
	}{
		{"serial history", func(h *hist) {
			h.txn(0, OK, ap(1, 1))
			h.txn(1, OK, rd(1, 1), ap(1, 2))
			h.txn(0, OK, rd(1, 1, 2), rd(2))
		}, nil, nil},
		{"failed append never read", func(h *hist) {
			h.txn(0, Fail, ap(1, 1))
			h.txn(1, OK, rd(1))
		}, nil, nil},
		{"indeterminate append read", func(h *hist) {
			h.txn(0, Info, ap(1, 1))
			h.txn(1, OK, rd(1, 1), ap(1, 2))
			h.txn(2, OK, rd(1, 1, 2))
		}, nil, nil},
		{"G0 write cycle", func(h *hist) {
			h.txn(0, OK, ap(1, 1), ap(2, 1))
			h.txn(1, OK, ap(1, 2), ap(2, 2))
			h.txn(2, OK, rd(1, 1, 2), rd(2, 2, 1))
		}, []string{"G0"}, nil},
		{"G1a aborted read", func(h *hist) {
			h.txn(0, Fail, ap(1, 1))
			h.txn(1, OK, rd(1, 1))
		}, []string{"G1a"}, nil},
		{"G1b intermediate read", func(h *hist) {
			h.txn(0, OK, ap(1, 1), ap(1, 2))
			h.txn(1, OK, rd(1, 1))
		}, []string{"G1b"}, nil},
		{"G1c circular information flow", func(h *hist) {
			h.txn(0, OK, ap(1, 1), rd(2, 1))
			h.txn(1, OK, ap(2, 1), rd(1, 1))
		}, []string{"G1c"}, nil},
		{"G-single read skew", func(h *hist) {
			h.txn(0, OK, ap(1, 1), ap(2, 1))
			h.txn(1, OK, rd(1), rd(2, 1))
			h.txn(2, OK, rd(1, 1))
		}, []string{"G-single"}, nil},
		{"G2-item write skew is allowed", func(h *hist) {
			h.txn(0, OK, rd(1), ap(2, 1))
			h.txn(1, OK, rd(2), ap(1, 1))
			h.txn(2, OK, rd(1, 1), rd(2, 1))
		}, nil, []string{"G2-item"}},
		{"incompatible orders", func(h *hist) {
			h.txn(0, OK, ap(1, 1))
			h.txn(1, OK, ap(1, 2))
			h.txn(2, OK, rd(1, 1, 2))
			h.txn(3, OK, rd(1, 2, 1))
		}, []string{"incompatible-order"}, nil},
		{"garbage element", func(h *hist) {
			h.txn(0, OK, rd(1, 99))
		}, []string{"garbage"}, nil},
		{"duplicate element", func(h *hist) {
			h.txn(0, OK, ap(1, 1))
			h.txn(1, OK, rd(1, 1, 1))
		}, []string{"duplicate"}, nil},
		{"own append not seen", func(h *hist) {
			h.txn(0, OK, ap(1, 5), rd(1))
		}, []string{"internal"}, nil},
		{"own read then append seen", func(h *hist) {
			h.txn(0, OK, ap(1, 4))
			h.txn(1, OK, rd(1, 4), ap(1, 5), rd(1, 4, 5))
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			r, err := ListAppend(h.ops)
			require.NoError(t, err)
			require.Equal(t, tc.kinds, r.Kinds(), "%v", r.Anomalies)
			require.Equal(t, len(tc.kinds) == 0, r.Valid)
			var allowed []string
			for _, a := range r.Allowed {
				allowed = append(allowed, a.Kind)
			}
			require.Equal(t, tc.allowed, allowed)
		})
	}
}

// A report names the cycle's transactions and the dependency of each step.
func TestListAppendReportsTheCycle(t *testing.T) {
	var h hist
	h.txn(0, OK, ap(1, 1), ap(2, 1))
	h.txn(1, OK, rd(1), rd(2, 1))
	h.txn(2, OK, rd(1, 1))
	r, err := ListAppend(h.ops)
	require.NoError(t, err)
	require.Len(t, r.Anomalies, 1)
	msg := r.Anomalies[0].Message
	require.Contains(t, msg, "-rw->")
	require.Contains(t, msg, "-wr->")
	require.Len(t, r.Anomalies[0].Ops, 2)
}

// Two appends of one element to one key make dependencies ambiguous: the
// checker refuses the history rather than guess.
func TestListAppendRejectsDuplicateAppends(t *testing.T) {
	var h hist
	h.txn(0, OK, ap(1, 1))
	h.txn(1, OK, ap(1, 1))
	_, err := ListAppend(h.ops)
	require.ErrorContains(t, err, "appended to key 1 twice")
}

func TestPairsCompletesOpenOperations(t *testing.T) {
	var h hist
	h.add(0, Invoke, "read", nil)
	h.add(1, Invoke, "write", 3)
	h.add(1, OK, "write", 3)
	pairs, err := Pairs(h.ops)
	require.NoError(t, err)
	require.Len(t, pairs, 2)
	require.Equal(t, Info, pairs[0].Complete.Type)
	require.Equal(t, OK, pairs[1].Complete.Type)

	h.add(1, Invoke, "write", 4)
	h.add(1, Invoke, "write", 5)
	_, err = Pairs(h.ops)
	require.ErrorContains(t, err, "in flight")
}
