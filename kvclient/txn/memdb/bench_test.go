package memdb

import (
	"math/rand/v2"
	"testing"

	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// The benchmarks run the buffer on the key shapes transactions write,
// encoded by the real codec (a test-only import: the package itself knows
// nothing of SQL keys):
//
//   - sysbench: one UPDATE of a non-indexed column of sbtest1, one row key
//     t{tid}_r{id}.
//   - tpcc: one NewOrder (10 order lines): district updated, orders and
//     new_order inserted with orders' customer index, 10 stock rows
//     updated and 10 order lines inserted. TPC-C's tables have clustered
//     composite primary keys, so row keys are t{tid}_r{w_id}{d_id}... and
//     every key of one table shares a long prefix. 34 writes of 24 keys
//     (each stock row is written twice: NewOrder's two statements on it).
//   - bulk: INSERT of 100,000 rows into a sysbench table (auto-increment
//     handle, random k) with its secondary index k_1: 200,000 keys.
type txnShape struct {
	name  string
	keys  [][]byte // in the order the transaction writes them
	value []byte
}

const (
	sbTable  = 112 // sysbench's sbtest1 table id
	sbIndexK = 1
)

func sysbenchShape() txnShape {
	return txnShape{
		name:  "sysbench",
		keys:  [][]byte{tablecodec.RowKey(sbTable, 48_231)},
		value: make([]byte, 190), // sbtest's c(120) + pad(60) + k and id
	}
}

func commonRowKey(tid int64, vals ...int64) []byte {
	ds := make([]types.Datum, len(vals))
	for i, v := range vals {
		ds[i] = types.NewInt(v)
	}
	h, err := tablecodec.AppendCommonHandle(nil, ds, make([]bool, len(ds)))
	if err != nil {
		panic(err)
	}
	return tablecodec.AppendHandleRowKey(nil, tid, tablecodec.CommonHandle(h))
}

func tpccShape() txnShape {
	const (
		district, orders, newOrder, orderLine, stock = 104, 106, 107, 108, 110
		wID, dID, oID, cID                           = 7, 3, 3001, 1234
	)
	keys := [][]byte{
		commonRowKey(district, wID, dID),
		commonRowKey(orders, wID, dID, oID),
		tablecodec.AppendIndexKey(nil, orders, 2,
			[]types.Datum{types.NewInt(wID), types.NewInt(dID), types.NewInt(cID), types.NewInt(oID)},
			false, tablecodec.Handle{}),
		commonRowKey(newOrder, wID, dID, oID),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for ol := int64(1); ol <= 10; ol++ {
		keys = append(keys, commonRowKey(stock, wID, r.Int64N(100_000)+1))
	}
	for ol := int64(1); ol <= 10; ol++ {
		keys = append(keys, commonRowKey(orderLine, wID, dID, oID, ol))
	}
	// NewOrder's second statement on each stock row.
	keys = append(keys, keys[4:14]...)
	return txnShape{name: "tpcc", keys: keys, value: make([]byte, 80)}
}

func bulkShape() txnShape {
	const rows = 100_000
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([][]byte, 0, 2*rows)
	for id := int64(1); id <= rows; id++ {
		h := tablecodec.IntHandle(id)
		keys = append(keys, tablecodec.RowKey(sbTable, id),
			tablecodec.AppendIndexKey(nil, sbTable, sbIndexK,
				[]types.Datum{types.NewInt(r.Int64N(rows))}, true, h))
	}
	return txnShape{name: "bulk", keys: keys, value: make([]byte, 190)}
}

func benchShapes() []txnShape { return []txnShape{sysbenchShape(), tpccShape(), bulkShape()} }

// fill writes the shape as its statements do: one checkpoint for the
// whole write (a statement), a Set per key.
func fill(m *MemDB, s txnShape) {
	cp := m.Checkpoint()
	for _, k := range s.keys {
		m.Set(k, s.value)
	}
	m.Release(cp)
}

// runShapes runs op over every shape, on a buffer already holding the
// shape when filled, and reports ns/key beside ns/op.
func runShapes(b *testing.B, filled bool, op func(b *testing.B, m *MemDB, s txnShape)) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			var m *MemDB
			if filled {
				m = New()
				fill(m, s)
			}
			b.ReportAllocs()
			for b.Loop() {
				op(b, m, s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s.keys)), "ns/key")
		})
	}
}

// BenchmarkSet: a fresh buffer filled by one statement.
func BenchmarkSet(b *testing.B) {
	runShapes(b, false, func(_ *testing.B, _ *MemDB, s txnShape) { fill(New(), s) })
}

// BenchmarkGet: every key read back (the statement's own reads and the
// unique checks look in the buffer first), and as many misses (the key
// with a zero byte appended).
func BenchmarkGet(b *testing.B) {
	var miss []byte
	runShapes(b, true, func(b *testing.B, m *MemDB, s txnShape) {
		for _, k := range s.keys {
			if _, ok := m.Get(k); !ok {
				b.Fatal("written key missing")
			}
			miss = append(append(miss[:0], k...), 0)
			if _, ok := m.Get(miss); ok {
				b.Fatal("unwritten key found")
			}
		}
	})
}

// BenchmarkIter: the commit's walk of the whole buffer in key order.
func BenchmarkIter(b *testing.B) {
	var muts []mutation
	runShapes(b, true, func(b *testing.B, m *MemDB, _ txnShape) { muts = collect(b, m, muts) })
}

// mutation is what the committer keeps of each entry.
type mutation struct {
	key, value []byte
}

// collect walks the buffer as the committer does, keeping every key and
// value.
func collect(b *testing.B, m *MemDB, muts []mutation) []mutation {
	muts = muts[:0]
	for k, e := range m.Iter(nil, nil, false) {
		muts = append(muts, mutation{k, e.Value})
	}
	if len(muts) != m.Len() {
		b.Fatalf("iterated %d of %d keys", len(muts), m.Len())
	}
	return muts
}

// BenchmarkRevert: a failed statement over a buffer already holding the
// shape rewrites every key and is rolled back.
func BenchmarkRevert(b *testing.B) {
	runShapes(b, true, func(_ *testing.B, m *MemDB, s txnShape) {
		other := s.value[:len(s.value)-1]
		cp := m.Checkpoint()
		for _, k := range s.keys {
			m.Set(k, other)
		}
		m.RevertTo(cp)
		m.Release(cp)
	})
}

// BenchmarkTxn: a whole transaction's use of the buffer: the statement
// reads each key before writing it (the executor's unique and lock
// checks), writes it under a checkpoint, and the commit walks the buffer.
func BenchmarkTxn(b *testing.B) {
	var muts []mutation
	runShapes(b, false, func(b *testing.B, _ *MemDB, s txnShape) {
		m := New()
		cp := m.Checkpoint()
		for _, k := range s.keys {
			if _, ok := m.Get(k); !ok {
				m.Lock(k, Locked)
			}
			m.Set(k, s.value)
		}
		m.Release(cp)
		muts = collect(b, m, muts)
	})
}
