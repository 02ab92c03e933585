package executor

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

// genOp generates n rows (id, key, 100-byte pad) without holding them:
// key = id*7919 mod n, so every key appears once on each side.
type genOp struct {
	n, i int64
}

func (o *genOp) Open(context.Context) error { o.i = 0; return nil }
func (o *genOp) Close() error               { return nil }
func (o *genOp) width() int                 { return 3 }

func (o *genOp) Next(_ context.Context, ck *Chunk) error {
	ck.reset()
	pad := make([]byte, 100*chunkRows) // fresh per chunk: kept rows really hold it
	for j := 0; o.i < o.n && !ck.full(); j++ {
		r := ck.alloc()
		r[0] = types.NewInt(o.i)
		r[1] = types.NewInt(o.i * 7919 % o.n)
		p := pad[j*100 : (j+1)*100 : (j+1)*100]
		p[0] = byte(o.i)
		r[2] = types.NewBytes(p)
		o.i++
	}
	return nil
}

// BenchmarkHashJoinSpill joins two generated inputs whose build side
// holds STRATA_SPILL_BENCH_MB (default 1024) MB of rows under a 100 MB
// tidb_mem_quota_query, counting the joined rows, and reports the
// process's peak RSS (VmHWM) and the bytes spilled. bench/spill.sh runs it.
func BenchmarkHashJoinSpill(b *testing.B) {
	mb := int64(1024)
	if v := os.Getenv("STRATA_SPILL_BENCH_MB"); v != "" {
		mb, _ = strconv.ParseInt(v, 10, 64)
	}
	rowBytes := rowSize([]datum{types.NewInt(0), types.NewInt(0), types.NewBytes(make([]byte, 100))}) + mapEntrySize + 8
	n := mb << 20 / rowBytes
	p := &planner.HashJoin{Type: planner.InnerJoin, BuildRight: true, LeftW: 3, RightW: 3,
		LeftKeys: []expr.Expr{col(1)}, RightKeys: []expr.Expr{col(1)}}
	for range b.N {
		st := memory.NewStatement(1)
		st.Start(100<<20, true)
		op := newHashJoinOp(p, &genOp{n: n}, &genOp{n: n})
		op.mem = memory.NewTracker(st)
		before := spill.Bytes("hash_join")
		start := time.Now()
		ctx := context.Background()
		if err := op.Open(ctx); err != nil {
			b.Fatal(err)
		}
		ck := newChunk(6, chunkRows)
		var rows int64
		for {
			if err := op.Next(ctx, ck); err != nil {
				b.Fatal(err)
			}
			if len(ck.rows) == 0 {
				break
			}
			rows += int64(len(ck.rows))
		}
		op.Close()
		st.End()
		if rows != n {
			b.Fatalf("joined %d rows, want %d", rows, n)
		}
		b.ReportMetric(float64(n), "build_rows")
		b.ReportMetric(float64(n*rowBytes)/(1<<20), "build_MB_in_memory")
		b.ReportMetric((spill.Bytes("hash_join")-before)/(1<<20), "spilled_MB")
		b.ReportMetric(float64(st.Peak())/(1<<20), "peak_tracked_MB")
		b.ReportMetric(float64(vmHWM())/(1<<20), "peak_RSS_MB")
		b.ReportMetric(time.Since(start).Seconds(), "s")
	}
}

// vmHWM is the process's peak resident set (bytes), from /proc.
func vmHWM() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
