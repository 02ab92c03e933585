// Package status serves the HTTP status port every Strata process exposes:
//
//	/status        JSON: role, version, git hash, start time, uptime
//	/metrics       Prometheus metrics from the default registry
//	/debug/pprof/  Go profiling endpoints
//
// and the routes its process adds (PD's API, the SQL node's /dashboard;
// Deferred stands in for a handler that exists only after the port
// opens).
//
// Version and GitHash are set at link time by the Makefile
// (-ldflags "-X github.com/stratadb/strata/status.GitHash=...").
package status
