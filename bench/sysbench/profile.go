package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Profile is one pprof file taken during a measured run.
type Profile struct {
	Proc string `json:"proc"`
	Kind string `json:"kind"` // "cpu" or "allocs"
	File string `json:"file"` // relative to the results directory
	Top  string `json:"top"`  // relative path of `go tool pprof -top` output
	Err  string `json:"error,omitempty"`
	// Categories (CPU profiles only): share of CPU samples whose stack
	// contains a function matching each category's pattern. Categories
	// overlap (gRPC inside the KV client, syscalls inside gRPC...).
	Categories []Category `json:"categories,omitempty"`
	// Seconds of CPU in the profile.
	SampledSec float64 `json:"sampled_s,omitempty"`
}

// Category is one line of a CPU breakdown.
type Category struct {
	Name    string  `json:"name"`
	Pattern string  `json:"pattern"`
	Ignore  string  `json:"ignore,omitempty"`
	Percent float64 `json:"pct"`
}

// cpuCategories are where a point select or a write can spend CPU, by role:
// name, pprof -focus regexp, and optionally a pprof -ignore regexp (drops
// samples that also pass through it, to keep callees out of a caller's
// share).
var cpuCategories = map[string][][3]string{
	"sql": {
		{"MySQL protocol + connection I/O (sql/server, minus session/KV/TSO below it)", `strata/sql/server\.`, `strata/sql/(session|executor|expr)\.|strata/kvclient|strata/pd/pdclient`},
		{"SQL parser (tidb parser)", `tidb/pkg/parser`, ""},
		{"session, planner, executor, expressions (minus KV/TSO calls)", `strata/sql/(session|executor|expr|catalog|types)\.`, `strata/kvclient|strata/pd/pdclient`},
		{"KV client incl. its gRPC calls (kvclient)", `strata/kvclient`, ""},
		{"TSO client incl. its gRPC stream (pd/pdclient)", `strata/pd/pdclient`, ""},
		{"gRPC transport goroutines (not under kvclient or pdclient)", `google\.golang\.org/grpc`, `strata/kvclient|strata/pd/pdclient`},
		{"protobuf (anywhere)", `google\.golang\.org/protobuf`, ""},
		{"syscalls (anywhere: network read/write)", `^syscall\.|internal/runtime/syscall`, ""},
		{"GC (mark workers + assists)", `runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.markroot|runtime\.gcDrain`, ""},
		{"malloc (anywhere)", `runtime\.mallocgc`, ""},
		{"scheduler (schedule, park, netpoll)", `runtime\.(schedule|findRunnable|park_m|netpoll|goschedImpl|mcall)`, ""},
		{"Prometheus metrics", `prometheus`, ""},
	},
	"store": {
		{"gRPC handlers (store/server) incl. what they call", `strata/store/server\.`, ""},
		{"ReadIndex (raftstore ReadIndex/serveReads, raft readIndex)", `ReadIndex|readIndex|serveReads`, ""},
		{"raftstore (Ready loop, persist, apply, transport)", `strata/raftstore\.`, ""},
		{"etcd raft library", `go\.etcd\.io/raft`, ""},
		{"MVCC (store/mvcc)", `strata/store/mvcc`, ""},
		{"Pebble (anywhere)", `cockroachdb/pebble`, ""},
		{"fsync", `[Ff]datasync|[Ff]sync`, ""},
		{"gRPC transport goroutines (not under store/server or raftstore)", `google\.golang\.org/grpc`, `strata/store/server\.|strata/raftstore\.`},
		{"protobuf (anywhere)", `google\.golang\.org/protobuf`, ""},
		{"syscalls (anywhere)", `^syscall\.|internal/runtime/syscall`, ""},
		{"GC (mark workers + assists)", `runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.markroot|runtime\.gcDrain`, ""},
		{"malloc (anywhere)", `runtime\.mallocgc`, ""},
		{"scheduler (schedule, park, netpoll)", `runtime\.(schedule|findRunnable|park_m|netpoll|goschedImpl|mcall)`, ""},
		{"Prometheus metrics", `prometheus`, ""},
	},
	"pd": {
		{"TSO (tso)", `strata/tso`, ""},
		{"PD server (pd)", `strata/pd\.`, ""},
		{"etcd", `go\.etcd\.io/etcd`, ""},
		{"gRPC (any)", `google\.golang\.org/grpc`, ""},
		{"protobuf", `google\.golang\.org/protobuf`, ""},
		{"syscalls", `^syscall\.|internal/runtime/syscall`, ""},
		{"GC (mark workers + assists)", `runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.markroot|runtime\.gcDrain`, ""},
		{"scheduler (schedule, park, netpoll)", `runtime\.(schedule|findRunnable|park_m|netpoll|goschedImpl|mcall)`, ""},
	},
}

var reShowing = regexp.MustCompile(`Showing nodes accounting for ([0-9.]+)(ms|s|us|µs|min|h)?, ([0-9.]+)% of ([0-9.]+)(ms|s|us|µs|min|h)? total`)

// categorize runs one `go tool pprof -top -focus` per category and reads the
// share of samples it keeps.
func categorize(file, role string) ([]Category, float64, error) {
	var out []Category
	var total float64
	for _, c := range cpuCategories[role] {
		args := []string{"tool", "pprof", "-top", "-nodecount=1000000", "-focus=" + c[1]}
		if c[2] != "" {
			args = append(args, "-ignore="+c[2])
		}
		text, err := exec.Command("go", append(args, file)...).CombinedOutput()
		if err != nil {
			return nil, 0, fmt.Errorf("go tool pprof -focus %s: %w: %s", c[1], err, text)
		}
		cat := Category{Name: c[0], Pattern: c[1], Ignore: c[2]}
		if m := reShowing.FindStringSubmatch(string(text)); m != nil {
			cat.Percent, _ = strconv.ParseFloat(m[3], 64)
			total = durSec(m[4], m[5])
		}
		out = append(out, cat)
	}
	return out, total, nil
}

func durSec(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "ms":
		return f / 1e3
	case "us", "µs":
		return f / 1e6
	case "min":
		return f * 60
	case "h":
		return f * 3600
	}
	return f
}

// captureProfiles takes a CPU profile and a delta allocation profile of
// seconds length from every Go process with a status server, all at once,
// and writes each with its `go tool pprof -top` text under dir.
func captureProfiles(ctx context.Context, procs []proc, seconds int, resultsDir, stem string) []Profile {
	var (
		mu  sync.Mutex
		out []Profile
		wg  sync.WaitGroup
	)
	dir := filepath.Join(resultsDir, "profiles")
	_ = os.MkdirAll(dir, 0o755)
	for _, p := range procs {
		if p.Status == "" {
			continue
		}
		for _, kind := range []string{"cpu", "allocs"} {
			wg.Add(1)
			go func(p proc, kind string) {
				defer wg.Done()
				path := "/debug/pprof/profile"
				if kind == "allocs" {
					path = "/debug/pprof/allocs"
				}
				name := fmt.Sprintf("%s-%s.%s.pb.gz", stem, p.Name, kind)
				pr := Profile{Proc: p.Name, Kind: kind, File: filepath.Join("profiles", name)}
				url := fmt.Sprintf("http://%s%s?seconds=%d", p.Status, path, seconds)
				if err := fetch(ctx, url, filepath.Join(resultsDir, pr.File), time.Duration(seconds+30)*time.Second); err != nil {
					pr.Err = err.Error()
				} else {
					pr.Top = filepath.Join("profiles", fmt.Sprintf("%s-%s.%s.top.txt", stem, p.Name, kind))
					if err := pprofTop(filepath.Join(resultsDir, pr.File), filepath.Join(resultsDir, pr.Top), kind); err != nil {
						pr.Err = err.Error()
					}
					if kind == "cpu" {
						cats, total, err := categorize(filepath.Join(resultsDir, pr.File), p.Role)
						if err != nil {
							pr.Err = err.Error()
						}
						pr.Categories, pr.SampledSec = cats, total
					}
				}
				mu.Lock()
				out = append(out, pr)
				mu.Unlock()
			}(p, kind)
		}
	}
	wg.Wait()
	return out
}

func fetch(ctx context.Context, url, dst string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pprofTop writes the flat and the cumulative top 40 of a profile (for
// allocs, by allocated objects).
func pprofTop(src, dst, kind string) error {
	var text []byte
	for _, order := range []string{"-top", "-cum"} {
		args := []string{"tool", "pprof", "-top", "-nodecount=40"}
		if order == "-cum" {
			args = append(args, "-cum")
		}
		if kind == "allocs" {
			args = append(args, "-sample_index=alloc_objects")
		}
		args = append(args, src)
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof: %w: %s", err, out)
		}
		text = append(text, []byte(fmt.Sprintf("==== go %v\n", args))...)
		text = append(text, out...)
		text = append(text, '\n')
	}
	return os.WriteFile(dst, text, 0o644)
}
