package memdb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// dump renders the buffer as "key=op[:value][+L]" in key order.
func dump(m *MemDB, start, end string, reverse bool) string {
	var parts []string
	for k, e := range m.Iter([]byte(start), []byte(end), reverse) {
		s := fmt.Sprintf("%s=%s", k, e.Op)
		if e.Op == kvrpcpb.Op_Put || e.Op == kvrpcpb.Op_Insert {
			s += ":" + string(e.Value)
		}
		if e.Flags&Locked != 0 {
			s += "+L"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestOps(t *testing.T) {
	tests := []struct {
		name string
		run  func(m *MemDB)
		want string
	}{
		{"put", func(m *MemDB) { m.Set([]byte("a"), []byte("1")) }, "a=Put:1"},
		{"insert then set stays insert", func(m *MemDB) {
			m.Insert([]byte("a"), []byte("1"))
			m.Set([]byte("a"), []byte("2"))
		}, "a=Insert:2"},
		{"insert then delete asserts absence", func(m *MemDB) {
			m.Insert([]byte("a"), []byte("1"))
			m.Delete([]byte("a"))
		}, "a=CheckNotExists"},
		{"delete then insert is a put", func(m *MemDB) {
			m.Delete([]byte("a"))
			m.Insert([]byte("a"), []byte("1"))
		}, "a=Put:1"},
		{"lock only", func(m *MemDB) { m.Lock([]byte("a"), Locked) }, "a=Lock+L"},
		{"lock keeps value", func(m *MemDB) {
			m.Set([]byte("a"), []byte("1"))
			m.Lock([]byte("a"), Locked)
			m.Set([]byte("a"), []byte("2"))
		}, "a=Put:2+L"},
		{"order", func(m *MemDB) {
			for _, k := range []string{"c", "a", "b"} {
				m.Set([]byte(k), []byte(k))
			}
		}, "a=Put:a b=Put:b c=Put:c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			tt.run(m)
			require.Equal(t, tt.want, dump(m, "", "", false))
		})
	}
}

func TestIterBounds(t *testing.T) {
	m := New()
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Set([]byte(k), []byte(k))
	}
	require.Equal(t, "b=Put:b c=Put:c", dump(m, "b", "d", false))
	require.Equal(t, "c=Put:c b=Put:b", dump(m, "b", "d", true))
	require.Equal(t, "d=Put:d c=Put:c b=Put:b", dump(m, "b", "", true))
	require.Equal(t, "", dump(m, "e", "", false))
	n := 0
	for range m.Iter(nil, nil, false) {
		n++
		if n == 2 {
			break
		}
	}
	require.Equal(t, 2, n)
}

func TestStaging(t *testing.T) {
	m := New()
	m.Set([]byte("a"), []byte("1"))
	stmt := m.Checkpoint()
	m.Set([]byte("a"), []byte("2"))
	m.Set([]byte("b"), []byte("1"))
	m.Delete([]byte("c"))
	m.Lock([]byte("d"), Locked)
	m.Lock([]byte("a"), Locked)
	m.RevertTo(stmt)
	m.Release(stmt)
	// Writes of the failed statement are gone; its locks stay.
	require.Equal(t, "a=Put:1+L d=Lock+L", dump(m, "", "", false))
	require.Equal(t, len("a")+len("1")+len("d"), m.Size())
	require.Empty(t, m.undo, "no checkpoint left: no undo kept")

	// Committed statement keeps its writes.
	stmt = m.Checkpoint()
	m.Set([]byte("e"), []byte("1"))
	m.Release(stmt)
	require.Equal(t, "a=Put:1+L d=Lock+L e=Put:1", dump(m, "", "", false))
}

func TestSavepoints(t *testing.T) {
	m := New()
	sp1 := m.Checkpoint() // SAVEPOINT s1
	stmt := m.Checkpoint()
	m.Set([]byte("a"), []byte("1"))
	m.Release(stmt)
	sp2 := m.Checkpoint() // SAVEPOINT s2
	stmt = m.Checkpoint()
	m.Set([]byte("a"), []byte("2"))
	m.Insert([]byte("b"), []byte("1"))
	m.Release(stmt)
	require.Equal(t, "a=Put:2 b=Insert:1", dump(m, "", "", false))

	m.RevertTo(sp2) // ROLLBACK TO s2
	require.Equal(t, "a=Put:1", dump(m, "", "", false))
	stmt = m.Checkpoint()
	m.Set([]byte("c"), []byte("1"))
	m.Release(stmt)
	m.RevertTo(sp1) // ROLLBACK TO s1 drops everything after it, s2 included
	m.Release(sp2)
	require.Equal(t, "", dump(m, "", "", false))
	require.Equal(t, 0, m.Size())
	m.Release(sp1)
	require.Empty(t, m.undo)
}

// TestEmptyBuildsNothing: a buffer nobody wrote to answers every read
// without building its tree (read-only transactions never allocate one),
// and checkpoints over it revert to empty.
func TestEmptyBuildsNothing(t *testing.T) {
	m := New()
	_, ok := m.Get([]byte("a"))
	require.False(t, ok)
	require.Zero(t, m.Len())
	for range m.Iter(nil, nil, false) {
		t.Fatal("an empty buffer yields nothing")
	}
	require.Nil(t, m.tree)
	cp := m.Checkpoint()
	m.Set([]byte("a"), []byte("1"))
	require.Equal(t, 1, m.Len())
	m.RevertTo(cp)
	m.Release(cp)
	require.Zero(t, m.Len())
	require.Zero(t, m.Size())
}
