// Package statistics holds what ANALYZE TABLE learns about a table's data
// and what the planner estimates from it (TiDB's pkg/statistics in small).
//
// ANALYZE reads every row of the table at one snapshot. Per column it
// counts the rows, the NULLs and the distinct values (a HyperLogLog
// sketch, so memory does not grow with the table), and keeps a reservoir
// sample of values from which it builds the top-N most frequent values
// and an equi-depth histogram of the rest. An index gets the same over its
// whole key tuple. Values are compared in their memcomparable encoding
// (sql/tablecodec.AppendMemComparable): the order of index keys and of the
// planner's ranges.
//
// A table's statistics are one JSON row under the catalog's meta keys
// (`m Stats` + table id); `m StatsVersion` changes with every ANALYZE so
// SQL nodes reload only when something changed (Handle).
package statistics

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"time"
)

// Table is the statistics of one table.
type Table struct {
	TableID int64     `json:"table_id"`
	Version uint64    `json:"version"` // the timestamp ANALYZE read at
	Updated time.Time `json:"updated"`
	Count   int64     `json:"count"` // rows
	// Columns by the column's offset in the table's row (nil: not
	// analyzed, e.g. a column added since).
	Columns []*Column `json:"columns"`
	// Indexes by index id.
	Indexes map[int64]*Column `json:"indexes"`
}

// Column is the statistics of a column or of an index's key tuple.
type Column struct {
	ID        int64      `json:"id"`
	Name      string     `json:"name"`
	NDV       int64      `json:"ndv"`
	NullCount int64      `json:"null_count"`
	TotalSize int64      `json:"total_size"` // bytes of the encoded values
	TopN      []TopNItem `json:"topn,omitempty"`
	Buckets   []Bucket   `json:"buckets,omitempty"`
}

// TopNItem is a frequent value and its estimated row count.
type TopNItem struct {
	Value []byte `json:"v"`
	Count int64  `json:"c"`
}

// Bucket is an equi-depth histogram bucket: the values up to Upper
// (inclusive, above the previous bucket's Upper), Count rows in it and
// Repeat of them equal to Upper.
type Bucket struct {
	Lower  []byte `json:"l"`
	Upper  []byte `json:"u"`
	Count  int64  `json:"c"`
	Repeat int64  `json:"r"`
}

// Column returns the statistics of the column at off (nil: none).
func (t *Table) Column(off int) *Column {
	if t == nil || off < 0 || off >= len(t.Columns) {
		return nil
	}
	return t.Columns[off]
}

// Index returns the statistics of index id (nil: none).
func (t *Table) Index(id int64) *Column {
	if t == nil {
		return nil
	}
	return t.Indexes[id]
}

// nonNull is the estimated number of non-NULL values.
func (c *Column) nonNull(total int64) float64 {
	return math.Max(0, float64(total-c.NullCount))
}

func (c *Column) topNCount() int64 {
	var n int64
	for _, it := range c.TopN {
		n += it.Count
	}
	return n
}

func (c *Column) histCount() int64 {
	if len(c.Buckets) == 0 {
		return 0
	}
	return c.Buckets[len(c.Buckets)-1].Count
}

// EqualRows estimates the rows whose value encodes to v (a NULL: the NULL
// count).
func (c *Column) EqualRows(v []byte, isNull bool, total int64) float64 {
	if isNull {
		return float64(c.NullCount)
	}
	for _, it := range c.TopN {
		if bytes.Equal(it.Value, v) {
			return float64(it.Count)
		}
	}
	rest := c.nonNull(total) - float64(c.topNCount())
	ndv := c.NDV - int64(len(c.TopN))
	if rest <= 0 || ndv <= 0 {
		return 0
	}
	// A bucket's upper bound is known exactly.
	i := sort.Search(len(c.Buckets), func(i int) bool { return bytes.Compare(c.Buckets[i].Upper, v) >= 0 })
	if i < len(c.Buckets) && bytes.Equal(c.Buckets[i].Upper, v) && c.Buckets[i].Repeat > 0 {
		return float64(c.Buckets[i].Repeat)
	}
	if i == len(c.Buckets) && len(c.Buckets) > 0 {
		return 0 // above every value seen
	}
	return rest / float64(ndv)
}

// lessRows estimates the non-NULL rows with a value below v (or at most v
// when incl).
func (c *Column) lessRows(v []byte, incl bool) float64 {
	n := 0.0
	for _, it := range c.TopN {
		if cmp := bytes.Compare(it.Value, v); cmp < 0 || (incl && cmp == 0) {
			n += float64(it.Count)
		}
	}
	if len(c.Buckets) == 0 {
		return n
	}
	i := sort.Search(len(c.Buckets), func(i int) bool { return bytes.Compare(c.Buckets[i].Upper, v) >= 0 })
	prev := int64(0)
	if i > 0 {
		prev = c.Buckets[i-1].Count
	}
	if i == len(c.Buckets) {
		return n + float64(prev)
	}
	b := c.Buckets[i]
	if bytes.Equal(b.Upper, v) {
		in := float64(b.Count - prev - b.Repeat)
		if incl {
			in += float64(b.Repeat)
		}
		return n + float64(prev) + in
	}
	// Inside the bucket: the share of [Lower, Upper] below v.
	return n + float64(prev) + float64(b.Count-prev-b.Repeat)*fraction(b.Lower, b.Upper, v)
}

// fraction is where v lies between lo and hi (0 at lo, 1 at hi), from the
// 8 bytes after their common prefix read as a number (TiDB's
// calcFraction does the same for strings).
func fraction(lo, hi, v []byte) float64 {
	if bytes.Compare(v, lo) <= 0 {
		return 0
	}
	if bytes.Compare(v, hi) >= 0 {
		return 1
	}
	p := 0
	for p < len(lo) && p < len(hi) && lo[p] == hi[p] {
		p++
	}
	l, h, x := scalar(lo, p), scalar(hi, p), scalar(v, p)
	if h <= l {
		return 0.5
	}
	return math.Min(1, math.Max(0, (x-l)/(h-l)))
}

func scalar(b []byte, from int) float64 {
	var u uint64
	for i := 0; i < 8; i++ {
		u <<= 8
		if from+i < len(b) {
			u |= uint64(b[from+i])
		}
	}
	return float64(u)
}

// RangeRows estimates the non-NULL rows in [lo, hi] (nil lo: from the
// smallest; nil hi: to the largest; the Excl flags exclude a bound).
func (c *Column) RangeRows(lo, hi []byte, loExcl, hiExcl bool, total int64) float64 {
	all := float64(c.topNCount() + c.histCount())
	if all <= 0 {
		return 0
	}
	up := all
	if hi != nil {
		up = c.lessRows(hi, !hiExcl)
	}
	down := 0.0
	if lo != nil {
		down = c.lessRows(lo, loExcl)
	}
	// Scale the sample-based counts to the column's non-NULL rows.
	return math.Max(0, up-down) * c.nonNull(total) / all
}

// Builder collects one table's statistics over a scan of its rows.
type Builder struct {
	cols    []*colBuilder // by column offset (nil: not analyzed)
	indexes map[int64]*colBuilder
	count   int64
	sample  int
	seen    int64
	rnd     uint64
}

type colBuilder struct {
	stat   Column
	hll    hll
	sample [][]byte
}

// SampleSize is how many values per column the histograms and top-N are
// built from (TiDB samples 10000 by default for small tables).
const SampleSize = 10000

// Histogram shape.
const (
	maxBuckets = 64
	maxTopN    = 20
)

// NewBuilder starts statistics for columns (id and name per row offset;
// id 0: skip the column) and indexes (by id).
func NewBuilder(colIDs []int64, colNames []string, indexIDs []int64, indexNames []string) *Builder {
	b := &Builder{sample: SampleSize, indexes: map[int64]*colBuilder{}, rnd: 0x9e3779b97f4a7c15}
	for i, id := range colIDs {
		if id == 0 {
			b.cols = append(b.cols, nil)
			continue
		}
		b.cols = append(b.cols, &colBuilder{stat: Column{ID: id, Name: colNames[i]}})
	}
	for i, id := range indexIDs {
		b.indexes[id] = &colBuilder{stat: Column{ID: id, Name: indexNames[i]}}
	}
	return b
}

// AddRow adds one row: vals[i] is column i's encoded value (nil: NULL),
// idx the encoded key tuple of each index (nil: a NULL in the tuple).
func (b *Builder) AddRow(vals [][]byte, idx map[int64][]byte) {
	b.count++
	// Reservoir sampling (algorithm R) picks the same rows for every
	// column.
	slot := -1
	if b.count <= int64(b.sample) {
		slot = int(b.count - 1)
	} else {
		b.rnd ^= b.rnd << 13
		b.rnd ^= b.rnd >> 7
		b.rnd ^= b.rnd << 17
		if j := int64(b.rnd % uint64(b.count)); j < int64(b.sample) {
			slot = int(j)
		}
	}
	for i, cb := range b.cols {
		if cb != nil {
			cb.add(vals[i], slot)
		}
	}
	for id, cb := range b.indexes {
		cb.add(idx[id], slot)
	}
}

func (cb *colBuilder) add(v []byte, slot int) {
	if v == nil {
		cb.stat.NullCount++
		v = nullMarker
	} else {
		cb.stat.TotalSize += int64(len(v))
		cb.hll.add(v)
	}
	switch {
	case slot < 0:
	case slot == len(cb.sample):
		cb.sample = append(cb.sample, bytes.Clone(v))
	default:
		cb.sample[slot] = bytes.Clone(v)
	}
}

// nullMarker stands for NULL in the sample (no encoded value is empty).
var nullMarker = []byte{}

// Finish builds the statistics.
func (b *Builder) Finish(tableID int64, version uint64, now time.Time) *Table {
	t := &Table{TableID: tableID, Version: version, Updated: now, Count: b.count, Indexes: map[int64]*Column{}}
	for _, cb := range b.cols {
		if cb == nil {
			t.Columns = append(t.Columns, nil)
			continue
		}
		t.Columns = append(t.Columns, cb.finish(b.count))
	}
	for id, cb := range b.indexes {
		t.Indexes[id] = cb.finish(b.count)
	}
	return t
}

func (cb *colBuilder) finish(total int64) *Column {
	c := cb.stat
	c.NDV = int64(math.Round(cb.hll.estimate()))
	nonNull := total - c.NullCount
	if c.NDV > nonNull {
		c.NDV = nonNull
	}
	vals := make([][]byte, 0, len(cb.sample))
	for _, v := range cb.sample {
		if len(v) > 0 { // not NULL
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 || nonNull == 0 {
		return &c
	}
	slices.SortFunc(vals, bytes.Compare)
	scale := float64(nonNull) / float64(len(vals))
	// Top-N: the most frequent sampled values that repeat.
	type run struct {
		v []byte
		n int
	}
	var runs []run
	for i := 0; i < len(vals); {
		j := i + 1
		for j < len(vals) && bytes.Equal(vals[j], vals[i]) {
			j++
		}
		runs = append(runs, run{vals[i], j - i})
		i = j
	}
	byFreq := slices.Clone(runs)
	slices.SortStableFunc(byFreq, func(a, b run) int { return b.n - a.n })
	top := map[string]bool{}
	for _, r := range byFreq {
		if len(c.TopN) == maxTopN || r.n < 2 {
			break
		}
		c.TopN = append(c.TopN, TopNItem{Value: r.v, Count: int64(math.Round(float64(r.n) * scale))})
		top[string(r.v)] = true
	}
	slices.SortFunc(c.TopN, func(a, b TopNItem) int { return bytes.Compare(a.Value, b.Value) })
	// Equi-depth histogram of the rest.
	last, rest := -1, 0
	for i, r := range runs {
		if !top[string(r.v)] {
			last, rest = i, rest+r.n
		}
	}
	if rest == 0 {
		return &c
	}
	depth := max(1, (rest+maxBuckets-1)/maxBuckets)
	var cum float64
	inBucket := 0
	var lower []byte
	for i, r := range runs {
		if top[string(r.v)] {
			continue
		}
		if inBucket == 0 {
			lower = r.v
		}
		inBucket += r.n
		cum += float64(r.n) * scale
		if inBucket >= depth || i == last {
			c.Buckets = append(c.Buckets, Bucket{Lower: lower, Upper: r.v, Count: int64(math.Round(cum)), Repeat: int64(math.Round(float64(r.n) * scale))})
			inBucket = 0
		}
	}
	return &c
}
