package main

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

// sample is what one process looked like at one instant.
type sample struct {
	cpuSec  float64            // utime+stime from /proc/<pid>/stat
	metrics map[string]float64 // Prometheus series summed over labels (nil for non-Go processes)
}

// ProcStats is one server process's cost over the measured run.
type ProcStats struct {
	Name       string  `json:"name"`
	Role       string  `json:"role"`
	PID        int     `json:"pid"`
	CPUSec     float64 `json:"cpu_s"`
	CPUPercent float64 `json:"cpu_pct"` // of one core, averaged over the run
	// CPUUsPerQuery is CPU microseconds this process burned per sysbench query.
	CPUUsPerQuery float64 `json:"cpu_us_per_query"`
	// Mallocs and MallocsPerQuery come from go_memstats_mallocs_total (Go
	// processes only): heap allocations over the run, and per query.
	Mallocs         float64 `json:"mallocs,omitempty"`
	MallocsPerQuery float64 `json:"mallocs_per_query,omitempty"`
	// AllocBytesPerQuery is heap bytes allocated per query.
	AllocBytesPerQuery float64 `json:"alloc_bytes_per_query,omitempty"`
	// Means of Strata's own histograms over the run (ms), where present.
	ReadIndexWaitMs float64 `json:"read_index_wait_mean_ms,omitempty"`
	ReadIndexCount  float64 `json:"read_index_count,omitempty"`
	ProposeWaitMs   float64 `json:"propose_wait_mean_ms,omitempty"`
	ProposeCount    float64 `json:"propose_count,omitempty"`
	// ProposalAppendMs and ProposalCommitMs: a write on its leader, from
	// its arrival, until fsynced in the leader's log and until committed
	// (ProposeWaitMs: until applied and answered).
	ProposalAppendMs float64 `json:"proposal_append_mean_ms,omitempty"`
	ProposalCommitMs float64 `json:"proposal_commit_mean_ms,omitempty"`
	// EntriesPerFsync and EntriesPerApply: mean raft log entries per synced
	// batch and per apply batch (group commit width).
	EntriesPerFsync float64 `json:"entries_per_fsync,omitempty"`
	EntriesPerApply float64 `json:"entries_per_apply,omitempty"`
	FsyncMs         float64 `json:"raft_fsync_mean_ms,omitempty"`
	FsyncCount      float64 `json:"raft_fsync_count,omitempty"`
	SQLQueryMs      float64 `json:"sql_query_mean_ms,omitempty"`
	// RaftMsgsPerQuery and ReadyLoopsPerQuery: raft messages this store
	// sent and Ready loop iterations it ran, per query (ReadIndex and
	// replication traffic).
	RaftMsgsPerQuery   float64 `json:"raft_msgs_per_query,omitempty"`
	ReadyLoopsPerQuery float64 `json:"ready_loops_per_query,omitempty"`
	SQLErrors          float64 `json:"sql_errors,omitempty"`
}

func takeSample(ctx context.Context, p proc) sample {
	s := sample{cpuSec: procCPU(p.PID)}
	if p.Status != "" {
		s.metrics, _ = scrape(ctx, p.Status)
	}
	return s
}

// procCPU is the user+system CPU seconds of pid (0 if unreadable).
func procCPU(pid int) float64 { return localcluster.CPUSeconds(pid) }

// clkTck is USER_HZ, 100 on every Linux this runs on.
const clkTck = 100

// scrape fetches /metrics and sums every series over its labels (histograms
// and summaries as name_sum and name_count; buckets are skipped).
func scrape(ctx context.Context, hostport string) (map[string]float64, error) {
	mfs, err := promtext.Fetch(ctx, hostport)
	if err != nil {
		return nil, err
	}
	return mfs.ByName(), nil
}

// procStats turns two samples into the run's cost, given the query count
// and run length.
func procStats(p proc, before, after sample, queries float64, seconds float64) ProcStats {
	st := ProcStats{Name: p.Name, Role: p.Role, PID: p.PID, CPUSec: after.cpuSec - before.cpuSec}
	if seconds > 0 {
		st.CPUPercent = 100 * st.CPUSec / seconds
	}
	if queries > 0 {
		st.CPUUsPerQuery = 1e6 * st.CPUSec / queries
	}
	if before.metrics == nil || after.metrics == nil {
		return st
	}
	d := func(name string) float64 { return after.metrics[name] - before.metrics[name] }
	// per is a histogram's mean observation over the run and its count;
	// mean is per of a seconds histogram, in ms.
	per := func(prefix string) (avg, n float64) {
		if n = d(prefix + "_count"); n > 0 {
			avg = d(prefix+"_sum") / n
		}
		return avg, n
	}
	mean := func(prefix string) (ms, n float64) {
		avg, n := per(prefix)
		return 1e3 * avg, n
	}
	st.Mallocs = d("go_memstats_mallocs_total")
	if queries > 0 {
		st.MallocsPerQuery = st.Mallocs / queries
		st.AllocBytesPerQuery = d("go_memstats_alloc_bytes_total") / queries
	}
	st.ReadIndexWaitMs, st.ReadIndexCount = mean("strata_raftstore_read_index_wait_seconds")
	st.ProposeWaitMs, st.ProposeCount = mean("strata_raftstore_propose_wait_seconds")
	st.ProposalAppendMs, _ = mean("strata_raftstore_proposal_append_seconds")
	st.ProposalCommitMs, _ = mean("strata_raftstore_proposal_commit_seconds")
	st.FsyncMs, st.FsyncCount = mean("strata_raftstore_raft_log_fsync_seconds")
	st.EntriesPerFsync, _ = per("strata_raftstore_appended_entries_per_fsync")
	st.EntriesPerApply, _ = per("strata_raftstore_applied_entries_per_batch")
	st.SQLQueryMs, _ = mean("strata_sql_query_duration_seconds")
	st.SQLErrors = d("strata_sql_errors_total")
	if queries > 0 {
		st.RaftMsgsPerQuery = d("strata_raftstore_raft_messages_sent_total") / queries
		st.ReadyLoopsPerQuery = d("strata_raftstore_ready_loop_seconds_count") / queries
	}
	return st
}

// loadAvg is the 1-minute load average (0 if unreadable).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// machineCPUBusy reads the aggregate "cpu" line of /proc/stat: busy and
// total jiffies, to tell how much of the machine others used during a run.
func machineCPUBusy() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, x := range f[1:] {
		v, _ := strconv.ParseFloat(x, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy / clkTck, total / clkTck
}
