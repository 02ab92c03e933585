package checker

import (
	"fmt"
	"sort"
)

// Type is what an operation record says happened.
type Type int

const (
	// Invoke: a client is about to send the operation.
	Invoke Type = iota
	// OK: the operation took effect and its result is known.
	OK
	// Fail: the operation certainly did not take effect (a rollback, a
	// refused statement).
	Fail
	// Info: indeterminate; it may or may not have taken effect (a timeout,
	// a lost connection, MySQL 8110).
	Info
)

func (t Type) String() string {
	switch t {
	case Invoke:
		return "invoke"
	case OK:
		return "ok"
	case Fail:
		return "fail"
	case Info:
		return "info"
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// Op is one record of a history. A client records an Invoke before it
// sends an operation and exactly one completion (OK, Fail or Info) of the
// same Process and F after; a process runs one operation at a time.
type Op struct {
	Index   int    // position in the history
	Process int    // the client that ran it
	Type    Type   // Invoke, OK, Fail or Info
	F       string // operation name: "txn", "read", "write", "cas", "transfer", ...
	Value   any    // the workload's argument (Invoke) or result (OK)
	Time    int64  // monotonic nanoseconds since the history began
	Error   string // why it failed or is indeterminate
}

func (o Op) String() string {
	s := fmt.Sprintf("%d p%d %s %s %v @%.3fs", o.Index, o.Process, o.Type, o.F, o.Value, float64(o.Time)/1e9)
	if o.Error != "" {
		s += " (" + o.Error + ")"
	}
	return s
}

// Pair is an invocation with its completion. A history that ends with an
// operation in flight completes it as Info at the end.
type Pair struct {
	Invoke, Complete Op
}

// Pairs matches each invocation with its completion, in invocation order.
// It reports an error when a process has two operations in flight or a
// completion without an invocation: a bug in the recorder, not in the
// database.
func Pairs(h []Op) ([]Pair, error) {
	open := map[int]int{} // process -> index into out
	var out []Pair
	var last int64
	for _, o := range h {
		if o.Time > last {
			last = o.Time
		}
		switch o.Type {
		case Invoke:
			if _, busy := open[o.Process]; busy {
				return nil, fmt.Errorf("checker: process %d invoked %v with an operation in flight", o.Process, o)
			}
			open[o.Process] = len(out)
			out = append(out, Pair{Invoke: o})
		default:
			i, ok := open[o.Process]
			if !ok {
				return nil, fmt.Errorf("checker: completion without an invocation: %v", o)
			}
			delete(open, o.Process)
			out[i].Complete = o
		}
	}
	for _, i := range open {
		c := out[i].Invoke
		c.Type, c.Time, c.Error = Info, last, "still in flight when the history ended"
		out[i].Complete = c
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Invoke.Index < out[b].Invoke.Index })
	return out, nil
}

// Anomaly is one thing a checker found wrong, with the operations that
// show it.
type Anomaly struct {
	Kind    string // G0, G1a, G1b, G1c, G-single, G2-item, incompatible-order, lost, wrong-total, nonlinearizable, ...
	Message string
	Ops     []Op
}

func (a Anomaly) String() string {
	s := a.Kind + ": " + a.Message
	for _, o := range a.Ops {
		s += "\n    " + o.String()
	}
	return s
}

// Result is a checker's verdict over one history.
type Result struct {
	Valid     bool
	Anomalies []Anomaly
	// Counts of completed operations by type (ok, fail, info).
	OK, Fail, Info int
}

func (r *Result) add(a Anomaly) {
	r.Valid = false
	r.Anomalies = append(r.Anomalies, a)
}

// Kinds returns the anomaly kinds found, each once, sorted.
func (r *Result) Kinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range r.Anomalies {
		if !seen[a.Kind] {
			seen[a.Kind] = true
			out = append(out, a.Kind)
		}
	}
	sort.Strings(out)
	return out
}

func count(r *Result, pairs []Pair) {
	for _, p := range pairs {
		switch p.Complete.Type {
		case OK:
			r.OK++
		case Fail:
			r.Fail++
		default:
			r.Info++
		}
	}
}
