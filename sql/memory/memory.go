package memory

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/stratadb/strata/sql/errno"
)

// MySQL / TiDB error codes of this package.
const (
	// ErrQuotaCode is TiDB's ErrMemoryExceedForQuery.
	ErrQuotaCode uint16 = 8175
	// ErrServerLimitCode is TiDB's ErrMemoryExceedForInstance.
	ErrServerLimitCode uint16 = 8176
)

// DefaultQuota is tidb_mem_quota_query's default (1 GiB, as TiDB).
const DefaultQuota = 1 << 30

// trackBatch is how many bytes a Tracker accumulates before it adds them to
// its Statement (and checks the quota).
const trackBatch = 16 << 10

// Kill reasons (Statement.killed).
const (
	notKilled int32 = iota
	killedServerLimit
)

// Statement is the memory of the statement a session is running. The zero
// value is usable; a nil *Statement tracks nothing.
type Statement struct {
	connID uint64
	bytes  atomic.Int64 // everything tracked
	quotad atomic.Int64 // what counts toward the quota (not results)
	peak   atomic.Int64
	// running: between Start and End (the Limiter only kills running
	// statements).
	running atomic.Bool
	killed  atomic.Int32
	quota   int64 // 0: none
	spill   bool
	spilled atomic.Bool
}

// NewStatement returns the Statement of connection connID.
func NewStatement(connID uint64) *Statement { return &Statement{connID: connID} }

// registry holds the running statements (between Start and End), for the
// Limiter.
var registry = struct {
	sync.Mutex
	m map[*Statement]struct{}
}{m: map[*Statement]struct{}{}}

// Start begins a statement with quota bytes (<= 0: no quota); spill says
// whether operators may spill to disk past it.
func (s *Statement) Start(quota int64, spill bool) {
	if s == nil {
		return
	}
	s.quota, s.spill = max(quota, 0), spill
	s.killed.Store(notKilled)
	s.spilled.Store(false)
	s.peak.Store(0)
	s.running.Store(true)
	registry.Lock()
	registry.m[s] = struct{}{}
	registry.Unlock()
}

// End ends the statement: bytes its operators did not release are
// released, and the peak is recorded.
func (s *Statement) End() {
	if s == nil || !s.running.Load() {
		return
	}
	s.running.Store(false)
	registry.Lock()
	delete(registry.m, s)
	registry.Unlock()
	if n := s.bytes.Swap(0); n != 0 {
		nodeBytes.Add(-n)
	}
	s.quotad.Store(0)
	peakBytes.Observe(float64(s.peak.Load()))
}

// Bytes is what the running statement tracks now.
func (s *Statement) Bytes() int64 {
	if s == nil {
		return 0
	}
	return s.bytes.Load()
}

// Peak is the most the statement tracked since Start.
func (s *Statement) Peak() int64 {
	if s == nil {
		return 0
	}
	return s.peak.Load()
}

// Spilled reports whether an operator of the statement spilled to disk.
func (s *Statement) Spilled() bool { return s != nil && s.spilled.Load() }

// add adds n and returns the new total that counts toward the quota.
func (s *Statement) add(n int64, quota bool) int64 {
	t := s.bytes.Add(n)
	nodeBytes.Add(n)
	if n > 0 {
		for p := s.peak.Load(); t > p && !s.peak.CompareAndSwap(p, t); p = s.peak.Load() {
		}
	}
	if !quota {
		return 0
	}
	return s.quotad.Add(n)
}

func (s *Statement) overQuota(total int64) bool { return s.quota > 0 && total > s.quota }

// err is the error of a killed statement (nil if it is not).
func (s *Statement) err() error {
	if s.killed.Load() == killedServerLimit {
		return ErrServerLimit(s.connID)
	}
	return nil
}

// ErrQuota is ERROR 8175: the statement went over tidb_mem_quota_query.
func ErrQuota(connID uint64) error {
	return &errno.Error{Code: ErrQuotaCode, State: "HY000", Msg: fmt.Sprintf("Your query has been cancelled due to exceeding the allowed memory limit for a single SQL query. Please try narrowing your query scope or increase the tidb_mem_quota_query limit and try again.[conn=%d]", connID)}
}

// ErrServerLimit is ERROR 8176: the statement was the largest when the SQL
// node went over tidb_server_memory_limit.
func ErrServerLimit(connID uint64) error {
	return &errno.Error{Code: ErrServerLimitCode, State: "HY000", Msg: fmt.Sprintf("Your query has been cancelled due to exceeding the allowed memory limit for the tidb-server instance and this query is currently using the most memory. Please try narrowing your query scope or increase the tidb_server_memory_limit and try again.[conn=%d]", connID)}
}

// Tracker is one operator's share of its statement. A nil Statement makes
// a Tracker that only counts; a nil *Tracker does nothing. Not safe for
// concurrent use.
type Tracker struct {
	s       *Statement
	noQuota bool  // Track: not toward the quota
	bytes   int64 // held by the operator
	pending int64 // not yet added to s
}

// NewTracker returns a Tracker on s (nil: untracked).
func NewTracker(s *Statement) *Tracker { return &Tracker{s: s} }

// Bytes is what the operator holds.
func (t *Tracker) Bytes() int64 {
	if t == nil {
		return 0
	}
	return t.bytes
}

// ErrQuota is the statement's ERROR 8175, for an operator that is over
// the quota and cannot spill more.
func (t *Tracker) ErrQuota() error {
	oomCancels.WithLabelValues("quota").Inc()
	if t == nil || t.s == nil {
		return ErrQuota(0)
	}
	return ErrQuota(t.s.connID)
}

// Consume adds n bytes (negative: released) the operator cannot give
// back by spilling. It fails with 8175 when the statement is over its
// quota, and with 8176 when the node's Limiter killed it.
func (t *Tracker) Consume(n int64) error {
	over, err := t.grow(n)
	if err == nil && over {
		err = t.ErrQuota()
	}
	return err
}

// NewResultTracker returns a Tracker of bytes that count toward the
// statement's memory (the node limit, SHOW PROCESSLIST) but not toward
// its quota: the result set a statement returns, held until it is sent.
// Its Consume fails only when the node's Limiter killed the statement.
func NewResultTracker(s *Statement) *Tracker { return &Tracker{s: s, noQuota: true} }

// Grow adds n bytes of an operator that can spill: spill is true when the
// statement is over its quota and may spill, and the operator should
// write what it holds to disk and Release it. When the statement may not
// spill, Grow fails with 8175 instead.
func (t *Tracker) Grow(n int64) (spill bool, err error) {
	over, err := t.grow(n)
	if err != nil || !over {
		return false, err
	}
	if !t.s.spill {
		return false, t.ErrQuota()
	}
	t.s.spilled.Store(true)
	return true, nil
}

// grow reports whether the statement is over its quota (checked when the
// batch is flushed).
func (t *Tracker) grow(n int64) (over bool, err error) {
	if t == nil {
		return false, nil
	}
	t.bytes += n
	if t.s == nil {
		return false, nil
	}
	t.pending += n
	if t.pending < trackBatch && t.pending > -trackBatch {
		return false, nil
	}
	total := t.s.add(t.pending, !t.noQuota)
	t.pending = 0
	if err := t.s.err(); err != nil {
		return false, err
	}
	return n > 0 && t.s.overQuota(total), nil
}

// Release gives back everything the operator holds (it spilled, or it
// closed).
func (t *Tracker) Release() {
	if t == nil {
		return
	}
	if d := t.bytes - t.pending; t.s != nil && d != 0 {
		t.s.add(-d, !t.noQuota)
	}
	t.bytes, t.pending = 0, 0
}
