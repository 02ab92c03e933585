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
// the concurrency manager's check, after the engine reads, at the end.
// store/server's coprocessor uses it too.
type ReadTimer struct {
	D    *kvrpcpb.ExecDetails // NewReadDetails
	last time.Time
}

// StartRead starts timing a read that began at start.
func StartRead(start time.Time) ReadTimer {
	return ReadTimer{D: NewReadDetails(), last: start}
}

// Lap returns the nanoseconds since the previous boundary and moves it
// to now.
func (r *ReadTimer) Lap() uint64 {
	now := time.Now()
	d := now.Sub(r.last)
	r.last = now
	return uint64(d)
}

func (r *ReadTimer) readIndexDone() { r.D.TimeDetail.ReadIndexWaitNs = r.Lap() }
func (r *ReadTimer) cmDone()        { r.D.TimeDetail.ConcurrencyManagerWaitNs = r.Lap() }
func (r *ReadTimer) kvReadDone()    { r.D.TimeDetail.KvReadWallTimeNs = r.Lap() }

// done ends the read: what followed the engine reads (building the
// response) is processing too; versions read are the keys returned and
// size their bytes.
func (r *ReadTimer) done(versions, size int) *kvrpcpb.ExecDetails {
	t := r.D.TimeDetail
	t.ProcessWallTimeNs = t.KvReadWallTimeNs + r.Lap()
	r.D.ScanDetail.ProcessedVersions = uint64(versions)
	r.D.ScanDetail.ProcessedVersionsSize = uint64(size)
	return r.D
}
