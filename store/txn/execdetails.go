package txn

import (
	"time"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// execDetails is a response's kvrpcpb.ExecDetails with its parts, in one
// allocation: the only one a request makes for its details.
type execDetails struct {
	d kvrpcpb.ExecDetails
	t kvrpcpb.TimeDetail
	s kvrpcpb.ScanDetail
	w kvrpcpb.WriteDetail
}

// NewReadDetails returns the ExecDetails of a read: a time and a scan
// detail, zero.
func NewReadDetails() *kvrpcpb.ExecDetails {
	x := new(execDetails)
	x.d.TimeDetail, x.d.ScanDetail = &x.t, &x.s
	return &x.d
}

// NewWriteDetails returns the ExecDetails of a write command: a time and
// a write detail, zero.
func NewWriteDetails() *kvrpcpb.ExecDetails {
	x := new(execDetails)
	x.d.TimeDetail, x.d.WriteDetail = &x.t, &x.w
	return &x.d
}

// ReadTimer splits a read's time into its stages with one clock reading
// per stage boundary: begin, after the ReadIndex (or lease check), after
// the concurrency manager's check, after the engine reads, at the end. It
// allocates only when the read answers (Details). store/server's
// coprocessor uses it too.
type ReadTimer struct {
	last time.Time
	// the stages so far, in nanoseconds
	readIndex, cm, wait, kvRead uint64
}

// StartRead starts timing a read that began at start.
func StartRead(start time.Time) ReadTimer { return ReadTimer{last: start} }

// Lap returns the nanoseconds since the previous boundary and moves it
// to now.
func (r *ReadTimer) Lap() uint64 {
	now := time.Now()
	d := now.Sub(r.last)
	r.last = now
	return uint64(d)
}

// ReadIndexDone ends the ReadIndex (or lease check).
func (r *ReadTimer) ReadIndexDone() { r.readIndex = r.Lap() }

// CMDone ends the concurrency manager's check.
func (r *ReadTimer) CMDone() { r.cm = r.Lap() }

// WaitDone ends a wait in a queue (a coprocessor slot).
func (r *ReadTimer) WaitDone() { r.wait = r.Lap() }

func (r *ReadTimer) kvReadDone() { r.kvRead = r.Lap() }

// Details ends the read: what followed the last boundary is processing
// (with the engine reads when they were timed apart); versions read are
// the keys returned and size their bytes.
func (r *ReadTimer) Details(versions, size int) *kvrpcpb.ExecDetails {
	return r.detailsIn(new(execDetails), versions, size)
}

// detailsIn is Details in x (zero), which it returns the details of.
func (r *ReadTimer) detailsIn(x *execDetails, versions, size int) *kvrpcpb.ExecDetails {
	x.d.TimeDetail, x.d.ScanDetail = &x.t, &x.s
	d := &x.d
	t := d.TimeDetail
	t.ReadIndexWaitNs, t.ConcurrencyManagerWaitNs, t.WaitWallTimeNs = r.readIndex, r.cm, r.wait
	t.KvReadWallTimeNs = r.kvRead
	t.ProcessWallTimeNs = r.kvRead + r.Lap()
	d.ScanDetail.ProcessedVersions = uint64(versions)
	d.ScanDetail.ProcessedVersionsSize = uint64(size)
	return d
}
