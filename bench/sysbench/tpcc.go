package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TPC-C runs go-tpc from this driver rather than from bench/tpcc.sh so that
// it shares the session: the same fresh cluster / private MariaDB targets,
// the same per-process CPU accounting from /proc, the same results
// directory, progress lines and final summary, and a non-zero exit on error
// for make bench-quick. bench/tpcc.sh stays for its extras (--kill-store,
// check, peak RSS).

type tpccConfig struct {
	TimeSec    int      `json:"time_s,omitempty"`
	Warehouses int      `json:"warehouses,omitempty"`
	Threads    int      `json:"threads,omitempty"`
	Targets    []string `json:"targets,omitempty"`
	GoTPC      string   `json:"-"`
}

// TPCCResult is one go-tpc TPC-C prepare + run on one target.
type TPCCResult struct {
	Target     string    `json:"target"`
	Status     string    `json:"status"` // ok, errors (go-tpc printed failed transactions), setup_failed, prepare_failed, run_failed
	Error      string    `json:"error,omitempty"`
	Started    time.Time `json:"started"`
	Warehouses int       `json:"warehouses"`
	Threads    int       `json:"threads"`
	TimeSec    int       `json:"time_s"`
	PrepareSec float64   `json:"prepare_s"`
	Command    string    `json:"command,omitempty"`

	TpmC       float64 `json:"tpmc"`
	TpmTotal   float64 `json:"tpm_total,omitempty"`
	Efficiency float64 `json:"efficiency_pct,omitempty"`
	// Txns is go-tpc's [Summary] per transaction type (and *_ERR lines).
	Txns []TPCCTxn `json:"transactions"`
	// Errors are the error lines go-tpc printed during the run (first ones).
	Errors      []string    `json:"errors,omitempty"`
	ErrorsCount int         `json:"errors_printed"`
	Procs       []ProcStats `json:"procs,omitempty"` // CPUUsPerQuery is per transaction here
	GoTPCCPUSec float64     `json:"gotpc_cpu_s"`
	RawOutput   string      `json:"raw_output"`
}

// TPCCTxn is one [Summary] line of go-tpc (latencies in ms).
type TPCCTxn struct {
	Name  string  `json:"name"`
	Count int64   `json:"count"`
	TPM   float64 `json:"tpm"`
	AvgMs float64 `json:"avg_ms"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	MaxMs float64 `json:"max_ms"`
}

func (r *TPCCResult) stem(stamp string) string {
	return fmt.Sprintf("%s-tpcc-w%d-%s", stamp, r.Warehouses, r.Target)
}

// transactions counts the committed transactions of every type.
func (r *TPCCResult) transactions() int64 {
	var n int64
	for _, t := range r.Txns {
		if !strings.HasSuffix(t.Name, "_ERR") {
			n += t.Count
		}
	}
	return n
}

func (r *TPCCResult) txn(name string) TPCCTxn {
	for _, t := range r.Txns {
		if t.Name == name {
			return t
		}
	}
	return TPCCTxn{}
}

func (r *TPCCResult) serverCPUUs() float64 {
	var s float64
	for _, p := range r.Procs {
		s += p.CPUUsPerQuery
	}
	return s
}

func (r *TPCCResult) oneLine() string {
	if r.Status != "ok" && r.TpmC == 0 {
		return r.Status + ": " + r.Error
	}
	no := r.txn("NEW_ORDER")
	s := fmt.Sprintf("%s: tpmC %.0f, NEW_ORDER p50 %s ms p99 %s ms, server CPU %.0f µs/transaction, %d error lines",
		r.Status, r.TpmC, ms(no.P50Ms), ms(no.P99Ms), r.serverCPUUs(), r.ErrorsCount)
	if r.Error != "" {
		s += " error: " + r.Error
	}
	return s
}

// GoTPCOutput is what go-tpc tpcc run printed, parsed.
type GoTPCOutput struct {
	TpmC, TpmTotal, Efficiency float64
	Summary                    []TPCCTxn
	Errors                     []string
	ErrorsCount                int
}

var (
	reTPCCLine = regexp.MustCompile(`^\[(Summary|Current)\] ([A-Z_]+) - (.*)$`)
	reTPCCKV   = regexp.MustCompile(`([A-Za-z0-9.()]+): ([0-9.]+)`)
	reTPCCErr  = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d [0-9:.]+\].*(failed|[Ee]rror)`)
)

// parseTPCCLine reads "[Summary] NEW_ORDER - Takes(s): 9.9, Count: 10, TPM: 60.5, Sum(ms): ..., 50th(ms): ...".
func parseTPCCLine(line string) (kind string, t TPCCTxn, ok bool) {
	m := reTPCCLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", t, false
	}
	t.Name = m[2]
	for _, kv := range reTPCCKV.FindAllStringSubmatch(m[3], -1) {
		v, _ := strconv.ParseFloat(kv[2], 64)
		switch kv[1] {
		case "Count":
			t.Count = int64(v)
		case "TPM":
			t.TPM = v
		case "Avg(ms)":
			t.AvgMs = v
		case "50th(ms)":
			t.P50Ms = v
		case "90th(ms)":
			t.P90Ms = v
		case "95th(ms)":
			t.P95Ms = v
		case "99th(ms)":
			t.P99Ms = v
		case "99.9th(ms)":
			t.P999 = v
		case "Max(ms)":
			t.MaxMs = v
		}
	}
	return m[1], t, true
}

// ParseGoTPC reads go-tpc tpcc run's output.
func ParseGoTPC(text string) GoTPCOutput {
	var o GoTPCOutput
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if kind, t, ok := parseTPCCLine(line); ok {
			if kind == "Summary" {
				o.Summary = append(o.Summary, t)
			}
			continue
		}
		if strings.HasPrefix(line, "tpmC:") {
			for _, kv := range reTPCCKV.FindAllStringSubmatch(line, -1) {
				v, _ := strconv.ParseFloat(kv[2], 64)
				switch kv[1] {
				case "tpmC":
					o.TpmC = v
				case "tpmTotal":
					o.TpmTotal = v
				case "efficiency":
					o.Efficiency = v
				}
			}
			continue
		}
		if reTPCCErr.MatchString(line) {
			o.ErrorsCount++
			if len(o.Errors) < 8 {
				o.Errors = append(o.Errors, shorten(line, 300))
			}
		}
	}
	if o.TpmTotal == 0 { // go-tpc v1.0.7 prints only tpmC
		for _, t := range o.Summary {
			if !strings.HasSuffix(t.Name, "_ERR") {
				o.TpmTotal += t.TPM
			}
		}
	}
	return o
}

// runTPCC prepares go-tpc's TPC-C tables in a fresh database of t and runs
// the measured TPC-C mix, sampling every server process like runOne.
func runTPCC(ctx context.Context, cfg config, sess *session, t target) TPCCResult {
	tc := cfg.TPCC
	res := TPCCResult{Target: t.Name(), Warehouses: tc.Warehouses, Threads: tc.Threads, TimeSec: tc.TimeSec, Started: time.Now().UTC()}
	defer t.Teardown()
	if err := t.Setup(ctx); err != nil {
		res.Status, res.Error = "setup_failed", err.Error()
		return res
	}
	stem := res.stem(sess.Stamp)
	rawPath := filepath.Join(cfg.ResultsDir, "raw", stem+".txt")
	raw, err := os.Create(rawPath)
	if err != nil {
		res.Status, res.Error = "setup_failed", err.Error()
		return res
	}
	defer raw.Close()
	res.RawOutput = filepath.Join("raw", stem+".txt")
	common := []string{"tpcc", "-H", "127.0.0.1", "-P", strconv.Itoa(t.Port()), "-U", "root", "-D", "sbtest",
		"--warehouses", strconv.Itoa(tc.Warehouses)}

	prep := append(slices.Clone(common), "prepare", "-T", strconv.Itoa(max(tc.Threads, tc.Warehouses)), "--no-check")
	t0 := time.Now()
	out, _, err := runClient(ctx, tc.GoTPC, prep, cfg.PrepareTimeout, raw)
	res.PrepareSec = time.Since(t0).Seconds()
	if err != nil {
		res.Status, res.Error = "prepare_failed", tailLines(out, err)
		return res
	}
	logf("  tpcc %s: prepared %d warehouse(s) in %.0f s", t.Name(), tc.Warehouses, res.PrepareSec)

	// --ignore-error keeps every thread going after an error (without it
	// a thread stops at its first one); each error is printed with its
	// time and counted in ErrorsCount.
	args := append(slices.Clone(common), "run", "-T", strconv.Itoa(tc.Threads),
		"--time", fmt.Sprintf("%ds", tc.TimeSec), "--interval", fmt.Sprintf("%ds", max(1, cfg.Progress)), "--ignore-error")
	res.Command = tc.GoTPC + " " + strings.Join(args, " ")
	procs := t.Procs()
	before := make([]sample, len(procs))
	for i, p := range procs {
		before[i] = takeSample(ctx, p)
	}
	start := time.Now()
	var sink io.Writer = raw
	if cfg.Progress > 0 {
		sink = io.MultiWriter(raw, &progressWriter{label: "  tpcc " + t.Name(), total: tc.TimeSec, tpcc: true, start: start})
	}
	out, cpu, err := runClient(ctx, tc.GoTPC, args, time.Duration(tc.TimeSec+180)*time.Second, sink)
	wall := time.Since(start).Seconds()
	o := ParseGoTPC(out)
	res.TpmC, res.TpmTotal, res.Efficiency = o.TpmC, o.TpmTotal, o.Efficiency
	res.Txns, res.Errors, res.ErrorsCount = o.Summary, o.Errors, o.ErrorsCount
	res.GoTPCCPUSec = cpu
	switch {
	case err != nil:
		res.Status, res.Error = "run_failed", tailLines(out, err)
	case res.transactions() == 0:
		res.Status, res.Error = "run_failed", "no transaction completed: "+tailLines(out, nil)
	case o.ErrorsCount > 0:
		// The run completed and its figures stand, but a transaction
		// failed: a failure for --fail-on-error.
		res.Status, res.Error = "errors", fmt.Sprintf("%d error lines, first: %s", o.ErrorsCount, o.Errors[0])
	default:
		res.Status = "ok"
	}
	txns := float64(res.transactions())
	for i, p := range procs {
		res.Procs = append(res.Procs, procStats(p, before[i], takeSample(ctx, p), txns, wall))
	}
	return res
}

func tailLines(out string, err error) string {
	all := strings.Split(strings.TrimSpace(out), "\n")
	msg := strings.Join(all[max(0, len(all)-3):], " | ")
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return shorten(msg, 600)
}
