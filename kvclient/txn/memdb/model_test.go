package memdb

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// model is the buffer's contract over a plain map: each operation's
// entry rule as doc.go and the methods state it, checkpoints as whole
// copies, a revert as the copy with the current Locked flags kept.
type model struct {
	m     map[string]Entry
	snaps []map[string]Entry // one per live checkpoint, oldest first
}

func (md *model) set(k string, v []byte) {
	prev, had := md.m[k]
	op := kvrpcpb.Op_Put
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_Insert
	}
	md.m[k] = Entry{Op: op, Value: bytes.Clone(nonNil(v)), Flags: prev.Flags}
}

func (md *model) insert(k string, v []byte) {
	prev, had := md.m[k]
	op := kvrpcpb.Op_Insert
	if had && prev.Op == kvrpcpb.Op_Del {
		op = kvrpcpb.Op_Put
	}
	md.m[k] = Entry{Op: op, Value: bytes.Clone(nonNil(v)), Flags: prev.Flags}
}

func (md *model) delete(k string) {
	prev, had := md.m[k]
	op := kvrpcpb.Op_Del
	if had && (prev.Op == kvrpcpb.Op_Insert || prev.Op == kvrpcpb.Op_CheckNotExists) {
		op = kvrpcpb.Op_CheckNotExists
	}
	md.m[k] = Entry{Op: op, Flags: prev.Flags}
}

func (md *model) lock(k string) {
	e, had := md.m[k]
	if !had {
		e = Entry{Op: kvrpcpb.Op_Lock}
	}
	e.Flags |= Locked
	md.m[k] = e
}

// revert restores the i-th live checkpoint's copy, keeping locks.
func (md *model) revert(i int) {
	next := maps.Clone(md.snaps[i])
	for k, e := range md.m {
		if e.Flags&Locked == 0 {
			continue
		}
		old, had := next[k]
		if !had {
			old = Entry{Op: kvrpcpb.Op_Lock}
		}
		old.Flags |= Locked
		next[k] = old
	}
	md.m = next
}

func (md *model) size() int {
	n := 0
	for k, e := range md.m {
		n += len(k) + len(e.Value)
	}
	return n
}

// iter is Iter's answer: the keys in [start, end) in order.
func (md *model) iter(start, end string, reverse bool) []string {
	var ks []string
	for k := range md.m {
		if k >= start && (end == "" || k < end) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	if reverse {
		slices.Reverse(ks)
	}
	return ks
}

// randKey draws keys that share long prefixes, are prefixes of each
// other, and branch on every byte value (so nodes grow to 256 children).
func randKey(r *rand.Rand) string {
	prefixes := []string{"", "t\x80\x00\x00\x00\x00\x00\x00\x70_r", "t\x80\x00\x00\x00\x00\x00\x00\x70_i\x80\x00", "t\x80\x00\x00\x00\x00\x00\x00\x71_r"}
	var b strings.Builder
	b.WriteString(prefixes[r.IntN(len(prefixes))])
	for range r.IntN(4) {
		if r.IntN(2) == 0 {
			b.WriteByte(byte(r.IntN(256)))
		} else {
			b.WriteByte("\x00\x01ab\xff"[r.IntN(5)])
		}
	}
	return b.String()
}

func entryString(e Entry) string {
	return fmt.Sprintf("%s:%q(nil=%v)%d", e.Op, e.Value, e.Value == nil, e.Flags)
}

// sameEntry: a and b are equal, nil values and empty ones told apart.
func sameEntry(a, b Entry) bool {
	return a.Op == b.Op && a.Flags == b.Flags && (a.Value == nil) == (b.Value == nil) && bytes.Equal(a.Value, b.Value)
}

// TestModel runs random operation sequences against the buffer and the
// model and compares every read.
func TestModel(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, seed*7+1))
		m, md := New(), &model{m: map[string]Entry{}}
		var cps []int // live checkpoint handles, oldest first
		var log []string
		check := func() {
			require.Equal(t, len(md.m), m.Len(), "seed %d: %v", seed, log)
			require.Equal(t, md.size(), m.Size(), "seed %d: %v", seed, log)
			for range 8 {
				k := randKey(r)
				e, ok := m.Get([]byte(k))
				want, wok := md.m[k]
				require.Equal(t, wok, ok, "seed %d: get %q: %v", seed, k, log)
				if ok && !sameEntry(want, e) {
					t.Fatalf("seed %d: get %q: %s, want %s", seed, k, entryString(e), entryString(want))
				}
			}
			for range 4 {
				start, end := randKey(r), randKey(r)
				if r.IntN(4) == 0 {
					start = ""
				}
				if r.IntN(4) == 0 {
					end = ""
				}
				reverse := r.IntN(2) == 0
				limit := 1 + r.IntN(len(md.m)+1)
				want := md.iter(start, end, reverse)
				want = want[:min(limit, len(want))]
				var got []string
				for k, e := range m.Iter([]byte(start), []byte(end), reverse) {
					got = append(got, string(k))
					if want := md.m[string(k)]; !sameEntry(want, e) {
						t.Fatalf("seed %d: iter %q: %s, want %s", seed, k, entryString(e), entryString(want))
					}
					if len(got) == limit {
						break
					}
				}
				require.Equal(t, want, got, "seed %d: iter [%q, %q) reverse=%v: %v", seed, start, end, reverse, log)
			}
		}
		for range 2000 {
			k := randKey(r)
			v := []byte(fmt.Sprint(r.IntN(100)))
			if r.IntN(10) == 0 {
				v = nil
			}
			switch op := r.IntN(20); {
			case op < 5:
				m.Set([]byte(k), v)
				md.set(k, v)
				log = append(log, "set "+k)
			case op < 8:
				m.Insert([]byte(k), v)
				md.insert(k, v)
				log = append(log, "insert "+k)
			case op < 11:
				m.Delete([]byte(k))
				md.delete(k)
				log = append(log, "delete "+k)
			case op < 13:
				m.Lock([]byte(k), Locked)
				md.lock(k)
				log = append(log, "lock "+k)
			case op < 15:
				cps = append(cps, m.Checkpoint())
				md.snaps = append(md.snaps, maps.Clone(md.m))
				log = append(log, "checkpoint")
			case op < 17 && len(cps) > 0:
				i := r.IntN(len(cps))
				m.RevertTo(cps[i])
				md.revert(i)
				// As ROLLBACK TO SAVEPOINT does, the newer checkpoints
				// are dropped with their changes.
				for len(cps) > i+1 {
					m.Release(cps[len(cps)-1])
					cps, md.snaps = cps[:len(cps)-1], md.snaps[:len(md.snaps)-1]
				}
				log = append(log, fmt.Sprint("revert ", i))
			case op < 19 && len(cps) > 0:
				// Checkpoints are released newest first.
				m.Release(cps[len(cps)-1])
				cps, md.snaps = cps[:len(cps)-1], md.snaps[:len(md.snaps)-1]
				log = append(log, "release")
			default:
				check()
			}
			if len(log) > 50 {
				log = log[1:]
			}
		}
		check()
	}
}
