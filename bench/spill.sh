#!/usr/bin/env bash
# Hash join spill benchmark (issue 12's memory-control acceptance, at the
# operator level): a build side of $MB MB of rows (default 1024) joined
# under a 100 MB tidb_mem_quota_query, in one process; reports time, bytes
# spilled and the process's peak RSS (VmHWM). Usage: bench/spill.sh [MB...]
set -euo pipefail
cd "$(dirname "$0")/.."
for mb in "${@:-1024}"; do
	STRATA_SPILL_BENCH_MB=$mb go test ./sql/executor/ -run XXX -bench BenchmarkHashJoinSpill -benchtime 1x -count 1
done
