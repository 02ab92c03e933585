package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/txn"
)

// requestStageSeconds is the store's side of strata_sql_stage_seconds:
// where each request carrying kvrpcpb.ExecDetails spent its time, by
// method (rpc_seconds' label) and stage. A stage that does not apply to a
// request (a read's raft stages) is not observed; a pessimistic lock's
// lock_wait only when it waited.
var requestStageSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "strata", Subsystem: "store", Name: "request_stage_seconds",
	Help: "Time store requests spent per stage, by method and stage: wait (queued on a BatchCommands stream or for a coprocessor slot), " +
		"read_index (lease check or ReadIndex round), cm_wait (in-flight async-commit/1PC writes), kv_read (Pebble), process (evaluation, kv_read included), " +
		"latch_wait, propose_wait, persist_log (proposal to leader fsync), commit_log (proposal to quorum commit), apply_log (commit to apply), lock_wait.",
	Buckets: prometheus.ExponentialBuckets(0.00001, 2, 22),
}, []string{"method", "stage"})

// Stages of requestStageSeconds.
const (
	stWait = iota
	stReadIndex
	stCMWait
	stKVRead
	stProcess
	stLatchWait
	stProposeWait
	stPersistLog
	stCommitLog
	stApplyLog
	stLockWait
	numStoreStages
)

var storeStageNames = [numStoreStages]string{"wait", "read_index", "cm_wait", "kv_read", "process",
	"latch_wait", "propose_wait", "persist_log", "commit_log", "apply_log", "lock_wait"}

// detailMethods are the methods whose responses carry ExecDetails.
var detailMethods = []string{"kv_get", "kv_batch_get", "kv_scan", "coprocessor", "kv_prewrite", "kv_commit", "kv_pessimistic_lock"}

// stageObservers holds the observers of every (method, stage), resolved
// once so that a request observes without a label lookup.
var stageObservers = func() map[string]*[numStoreStages]prometheus.Observer {
	m := make(map[string]*[numStoreStages]prometheus.Observer, len(detailMethods))
	for _, method := range detailMethods {
		var obs [numStoreStages]prometheus.Observer
		for i, st := range storeStageNames {
			obs[i] = requestStageSeconds.WithLabelValues(method, st)
		}
		m[method] = &obs
	}
	return m
}()

// detailed is a response that carries ExecDetails.
type detailed interface {
	GetExecDetails() *kvrpcpb.ExecDetails
}

// finishDetails completes the ExecDetails resp carries, if any, for a
// request of method the store received at start and answers now: its total
// time on the store, and the stage histograms.
func finishDetails(method string, resp any, start, now time.Time) {
	r, ok := resp.(detailed)
	if !ok {
		return
	}
	d := r.GetExecDetails()
	if d == nil {
		return
	}
	if t := d.GetTimeDetail(); t != nil {
		t.TotalRpcWallTimeNs = uint64(now.Sub(start))
	}
	obs := stageObservers[method]
	if obs == nil {
		return
	}
	observe := func(st int, ns uint64) { obs[st].Observe(float64(ns) / 1e9) }
	if t := d.GetTimeDetail(); t != nil {
		if t.WaitWallTimeNs > 0 {
			observe(stWait, t.WaitWallTimeNs)
		}
		observe(stReadIndex, t.ReadIndexWaitNs)
		observe(stProcess, t.ProcessWallTimeNs)
		if d.GetWriteDetail() == nil {
			observe(stCMWait, t.ConcurrencyManagerWaitNs)
			observe(stKVRead, t.KvReadWallTimeNs)
		}
	}
	if w := d.GetWriteDetail(); w != nil {
		observe(stLatchWait, w.LatchWaitNanos)
		if w.CommitLogNanos > 0 || w.ProposeSendWaitNanos > 0 {
			// Only commands that wrote went through raft.
			observe(stProposeWait, w.ProposeSendWaitNanos)
			observe(stPersistLog, w.PersistLogNanos)
			observe(stCommitLog, w.CommitLogNanos)
			observe(stApplyLog, w.ApplyLogNanos)
		}
		if w.PessimisticLockWaitNanos > 0 {
			observe(stLockWait, w.PessimisticLockWaitNanos)
		}
	}
}

// addStreamWait adds to the ExecDetails of a stream's response the time
// its request waited for a worker, and observes it.
func addStreamWait(out *storepb.BatchCommandsResponse_Response, wait time.Duration) {
	var (
		d      *kvrpcpb.ExecDetails
		method string
	)
	switch c := out.GetCmd().(type) {
	case *storepb.BatchCommandsResponse_Response_Get:
		d, method = c.Get.GetExecDetails(), "kv_get"
	case *storepb.BatchCommandsResponse_Response_BatchGet:
		d, method = c.BatchGet.GetExecDetails(), "kv_batch_get"
	case *storepb.BatchCommandsResponse_Response_Scan:
		d, method = c.Scan.GetExecDetails(), "kv_scan"
	case *storepb.BatchCommandsResponse_Response_Coprocessor:
		d, method = c.Coprocessor.GetExecDetails(), "coprocessor"
	case *storepb.BatchCommandsResponse_Response_Prewrite:
		d, method = c.Prewrite.GetExecDetails(), "kv_prewrite"
	case *storepb.BatchCommandsResponse_Response_Commit:
		d, method = c.Commit.GetExecDetails(), "kv_commit"
	}
	t := d.GetTimeDetail()
	if t == nil {
		return
	}
	// The handler's own wait (a coprocessor slot) is in wait already; its
	// total began when the handler did.
	t.WaitWallTimeNs += uint64(wait)
	t.TotalRpcWallTimeNs += uint64(wait)
	stageObservers[method][stWait].Observe(wait.Seconds())
}

// CopTimer splits a coprocessor region read's time into its stages
// (kvrpcpb.TimeDetail): the ReadIndex, the concurrency manager's check,
// the wait for a coprocessor slot, then the run. It is exported so that
// store/storetest times its reads as a store node does.
type CopTimer struct{ txn.ReadTimer }

// StartCopTimer starts timing a read that began at start, once its
// ReadIndex is done (now).
func StartCopTimer(start time.Time) CopTimer {
	c := CopTimer{txn.StartRead(start)}
	c.ReadIndexDone()
	return c
}

// Done ends the run, which answered resp and err, and attaches the
// details to resp. The engine reads are interleaved with evaluation: both
// are processing (kv_read_wall_time is not split out).
func (c *CopTimer) Done(resp *kvrpcpb.CoprocessorResponse, err error) (*kvrpcpb.CoprocessorResponse, error) {
	if resp != nil {
		resp.ExecDetails = c.Details(0, 0)
	}
	return resp, err
}
