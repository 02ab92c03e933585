package statistics

import (
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// hll is a HyperLogLog sketch (2^14 registers, ~0.8 % standard error) of
// the distinct values ANALYZE sees, so counting them costs 16 KiB per
// column whatever the table's size. The hash has a fixed seed (xxHash64):
// the same rows give the same estimate on every node and every ANALYZE,
// so plans do not change between runs over unchanged data (a per-process
// random seed moved a 101-value column's estimate to 98 about once in a
// few hundred runs: three hash collisions among 16,384 registers).
type hll struct {
	regs []uint8
}

const hllP = 14

func (h *hll) add(v []byte) {
	if h.regs == nil {
		h.regs = make([]uint8, 1<<hllP)
	}
	x := xxhash.Sum64(v)
	i := x >> (64 - hllP)
	rank := uint8(bits.LeadingZeros64(x<<hllP|1<<(hllP-1))) + 1
	if rank > h.regs[i] {
		h.regs[i] = rank
	}
}

func (h *hll) estimate() float64 {
	if h.regs == nil {
		return 0
	}
	m := float64(len(h.regs))
	sum, zeros := 0.0, 0
	for _, r := range h.regs {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting for small sets
	}
	return e
}
