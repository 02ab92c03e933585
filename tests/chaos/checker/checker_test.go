package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// call records an invocation of f by process p at time at and its
// completion at time done.
func (h *hist) call(p int, f string, in any, t Type, out any, at, done int64) {
	h.ops = append(h.ops, Op{Index: len(h.ops), Process: p, Type: Invoke, F: f, Value: in, Time: at})
	h.ops = append(h.ops, Op{Index: len(h.ops), Process: p, Type: t, F: f, Value: out, Time: done})
}

func reg(k, v int) RegisterOp { return RegisterOp{Key: k, Value: v} }

func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		kinds []string
	}{
		{"sequential", func(h *hist) {
			h.call(0, "write", reg(1, 1), OK, reg(1, 1), 1, 2)
			h.call(1, "read", reg(1, 0), OK, reg(1, 1), 3, 4)
			h.call(0, "cas", RegisterOp{Key: 1, From: 1, To: 2}, OK, RegisterOp{Key: 1, Swapped: true}, 5, 6)
			h.call(1, "cas", RegisterOp{Key: 1, From: 1, To: 3}, OK, RegisterOp{Key: 1}, 7, 8)
			h.call(1, "read", reg(1, 0), OK, reg(1, 2), 9, 10)
		}, nil},
		{"concurrent read may see either value", func(h *hist) {
			h.call(0, "write", reg(1, 1), OK, reg(1, 1), 1, 2)
			h.ops = append(h.ops, Op{Index: 2, Process: 0, Type: Invoke, F: "write", Value: reg(1, 2), Time: 3})
			h.call(1, "read", reg(1, 0), OK, reg(1, 1), 4, 5)
			h.ops = append(h.ops, Op{Index: 5, Process: 0, Type: OK, F: "write", Value: reg(1, 2), Time: 6})
			h.call(1, "read", reg(1, 0), OK, reg(1, 2), 7, 8)
		}, nil},
		{"stale read", func(h *hist) {
			h.call(0, "write", reg(1, 1), OK, reg(1, 1), 1, 2)
			h.call(0, "write", reg(1, 2), OK, reg(1, 2), 3, 4)
			h.call(1, "read", reg(1, 0), OK, reg(1, 1), 5, 6)
		}, []string{"nonlinearizable"}},
		{"indeterminate write seen later", func(h *hist) {
			h.call(0, "write", reg(2, 7), Info, nil, 1, 2)
			h.call(1, "read", reg(2, 0), OK, reg(2, 0), 3, 4)
			h.call(1, "read", reg(2, 0), OK, reg(2, 7), 5, 6)
		}, nil},
		{"indeterminate write never seen", func(h *hist) {
			h.call(0, "write", reg(2, 7), Info, nil, 1, 2)
			h.call(1, "read", reg(2, 0), OK, reg(2, 0), 3, 4)
		}, nil},
		{"failed write seen", func(h *hist) {
			h.call(0, "write", reg(3, 5), Fail, nil, 1, 2)
			h.call(1, "read", reg(3, 0), OK, reg(3, 5), 3, 4)
		}, []string{"nonlinearizable"}},
		{"indeterminate write seen, then undone", func(h *hist) {
			h.call(0, "write", reg(2, 7), Info, nil, 1, 2)
			h.call(1, "read", reg(2, 0), OK, reg(2, 7), 3, 4)
			h.call(1, "read", reg(2, 0), OK, reg(2, 0), 5, 6)
		}, []string{"nonlinearizable"}},
		{"keys are independent", func(h *hist) {
			h.call(0, "write", reg(1, 1), OK, reg(1, 1), 1, 2)
			h.call(1, "read", reg(2, 0), OK, reg(2, 0), 3, 4)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			r, err := Register(h.ops, 10*time.Second)
			require.NoError(t, err)
			require.Equal(t, tc.kinds, r.Kinds(), "%v", r.Anomalies)
		})
	}
}

func TestBank(t *testing.T) {
	for _, tc := range []struct {
		name  string
		read  map[int]int64
		kinds []string
	}{
		{"right total", map[int]int64{0: 50, 1: 30, 2: 20}, nil},
		{"wrong total", map[int]int64{0: 50, 1: 30, 2: 21}, []string{"wrong-total"}},
		{"missing account", map[int]int64{0: 70, 1: 30}, []string{"missing-account"}},
		{"unknown account", map[int]int64{0: 50, 1: 30, 2: 20, 3: 0}, []string{"missing-account"}},
		{"negative balance", map[int]int64{0: 110, 1: -10, 2: 0}, []string{"negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			h.call(0, "transfer", nil, OK, nil, 1, 2)
			h.call(1, "read", nil, OK, tc.read, 3, 4)
			h.call(2, "read", nil, Info, nil, 5, 6) // not checked
			r, err := Bank(h.ops, 3, 100, true)
			require.NoError(t, err)
			require.Equal(t, tc.kinds, r.Kinds())
			require.Equal(t, []int{2, 0, 1}, []int{r.OK, r.Fail, r.Info})
		})
	}
}

func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		final     []int
		kinds     []string
		recovered int
	}{
		{"all there", []int{1, 2}, nil, 0},
		{"indeterminate add recovered", []int{1, 2, 3}, nil, 1},
		{"lost acknowledged add", []int{2}, []string{"lost"}, 0},
		{"failed add present", []int{1, 2, 4}, []string{"unexpected"}, 0},
		{"never added", []int{1, 2, 9}, []string{"unexpected"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			h.call(0, "add", 1, OK, 1, 1, 2)
			h.call(1, "add", 2, OK, 2, 1, 3)
			h.call(2, "add", 3, Info, nil, 1, 4)
			h.call(3, "add", 4, Fail, nil, 1, 5)
			h.call(0, "read", nil, OK, tc.final, 6, 7)
			r, rec, err := Set(h.ops)
			require.NoError(t, err)
			require.Equal(t, tc.kinds, r.Kinds())
			require.Equal(t, tc.recovered, rec)
		})
	}
	r, _, err := Set(nil)
	require.NoError(t, err)
	require.Equal(t, []string{"no-read"}, r.Kinds())
}

func TestMonotonic(t *testing.T) {
	mr := func(k string, v int64) MonoRead { return MonoRead{Key: k, Value: v} }
	var ok hist
	ok.call(0, "read", nil, OK, mr("c", 1), 1, 3)
	ok.call(1, "read", nil, OK, mr("c", 0), 2, 4) // concurrent with the first: may be older
	ok.call(0, "read", nil, OK, mr("c", 2), 5, 6)
	ok.call(1, "read", nil, OK, mr("tso", 100), 5, 6)
	ok.call(1, "read", nil, OK, mr("tso", 101), 7, 8)
	r, err := Monotonic(ok.ops)
	require.NoError(t, err)
	require.True(t, r.Valid, "%v", r.Anomalies)

	var bad hist
	bad.call(0, "read", nil, OK, mr("tso", 100), 1, 2)
	bad.call(1, "read", nil, OK, mr("tso", 120), 3, 4)
	bad.call(0, "read", nil, OK, mr("tso", 110), 5, 6)
	r, err = Monotonic(bad.ops)
	require.NoError(t, err)
	require.Equal(t, []string{"nonmonotonic"}, r.Kinds())
	require.Contains(t, r.Anomalies[0].Message, "read 110 after a read of 120")
}
