#!/usr/bin/env bash
# go-tpc TPC-C against Strata and MariaDB in one run.
#
#   make build && bench/tpcc.sh [--warehouses 4] [--threads 16] [--time 5m]
#                               [--targets strata,mariadb] [--check strata]
#                               [--kill-store] [--base-bin-dir DIR]
#                               [--label NAME] [--keep] [--strata-port P]
#
# For each target: a fresh server on free loopback ports in a temp dir
# (Strata: bin/playground over a copy of bin/; MariaDB: a private
# mariadb-install-db datadir and mariadbd --no-defaults, as
# bench/sysbench does), then `go-tpc tpcc prepare` (timed), `run`, and
# `check` for the targets in --check (default strata only: MariaDB runs
# check 3.3.2.10's correlated history subquery as a scan per customer,
# which takes hours at 4 warehouses). --kill-store kills the Strata store leading the most regions
# with SIGKILL for the middle minute of the run and restarts it with the
# same command line. --base-bin-dir adds target strata-base: Strata from
# the binaries in DIR (a parent commit's build), for an A/B in one run.
# --strata-port uses a running Strata whose database
# tpcc already holds the warehouses (no prepare; it is neither started nor
# stopped). Writes bench/results/<UTC time>-tpcc[-label].md with
# tpmC, every transaction's count, errors and p50/p99 latency, the prepare
# time, the check result (with its time), the SQL node's peak RSS (VmHWM,
# reset after the prepare: during the run, then after the check) and the
# servers' CPU during the run per committed transaction (all types; by
# SQL node, stores and PD, or mariadbd; bench/proccpu); raw go-tpc
# output stays in the temp dir (printed; removed unless --keep).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOTPC=${GOTPC:-$(command -v go-tpc || echo /root/go/bin/go-tpc)}
MARIADBD=${MARIADBD:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}
WAREHOUSES=4 THREADS=16 TIME=5m TARGETS=strata,mariadb KILL=0 LABEL="" KEEP=0 STRATA_PORT="" CHECK=strata,strata-base BASE_BIN=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --warehouses) WAREHOUSES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --kill-store) KILL=1; shift ;;
    --label) LABEL=-$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --strata-port) STRATA_PORT=$2; shift 2 ;;
    --check) CHECK=$2; shift 2 ;;
    --base-bin-dir) BASE_BIN=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[[ -x $GOTPC ]] || { echo "go-tpc not found: go install github.com/pingcap/go-tpc/cmd/go-tpc@latest" >&2; exit 1; }

WORK=$(mktemp -d /tmp/tpcc-bench-XXXXXX)
# /metrics are read through the Prometheus text parser (bench/promget).
PROMGET=$WORK/promget
(cd "$ROOT" && go build -o "$PROMGET" ./bench/promget)
# Server CPU from /proc/<pid>/stat, as bench/sysbench accounts it
# (bench/proccpu: localcluster.CPUSeconds).
PROCCPU=$WORK/proccpu
(cd "$ROOT" && go build -o "$PROCCPU" ./bench/proccpu)
STAMP=$(date -u +%Y-%m-%d-%H%M)
OUT=$ROOT/bench/results/$STAMP-tpcc$LABEL.md
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
cleanup() {
  stop_pids
  if [[ $KEEP == 0 ]]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
secs() { # go duration (5m, 90s, 1h) -> seconds
  local d=$1
  case $d in *h) echo $(( ${d%h} * 3600 )) ;; *m) echo $(( ${d%m} * 60 )) ;; *s) echo "${d%s}" ;; *) echo "$d" ;; esac
}
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_strata BIN NAME starts Strata from the binaries in BIN under
# $WORK/NAME; it sets PORT and SQLPID.
start_strata() {
  local bin=$1 dir=$WORK/$2
  mkdir -p "$dir"
  if [[ -n $STRATA_PORT ]]; then
    PORT=$STRATA_PORT
    SQLPID=$(pgrep -f -- "sqlnode.*--addr 127.0.0.1:$PORT( |$)" | head -1)
    VERSION="Strata (running, sqlnode pid $SQLPID)"
    return
  fi
  mkdir -p "$dir/bin"
  cp "$bin"/{pd,storenode,sqlnode,playground} "$dir/bin/"
  start_playground "$dir/bin" "$dir" || return 1
  SQLPID=$(pgrep -f -- "$dir/bin/sqlnode" | head -1)
  VERSION="Strata $(git -C "$ROOT" rev-parse --short HEAD)"
  [[ $bin == "$ROOT/bin" ]] || VERSION="Strata from $bin"
}

start_mariadb() {
  local dir=$WORK/mariadb
  mkdir -p "$dir"
  mariadb-install-db --no-defaults --datadir="$dir/data" --user=root --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
  PORT=$(freeport)
  "$MARIADBD" --no-defaults --datadir="$dir/data" --port="$PORT" --bind-address=127.0.0.1 \
    --socket="$dir/mysqld.sock" --pid-file="$dir/mysqld.pid" --skip-grant-tables --skip-name-resolve --user=root \
    --log-error="$dir/error.log" >"$dir/mariadbd.log" 2>&1 &
  PIDS+=($!)
  SQLPID=$!
  for _ in $(seq 300); do
    mysql -h 127.0.0.1 -P "$PORT" -u root -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.2
  done
  VERSION="MariaDB $(mysql -h 127.0.0.1 -P "$PORT" -u root -N -e 'SELECT VERSION()')"
}

# busiest_store prints the PID of the store leading the most regions
# among the stores of the SQL node's cluster (same --pd address).
busiest_store() {
  local best="" bestn=-1 pd
  pd=$(tr '\0' '\n' </proc/"$SQLPID"/cmdline | grep -A1 -- '^--pd$' | tail -1)
  [[ -n $pd ]] || return 0
  for pid in $(pgrep -f -- "storenode .*--pd $pd( |$)"); do
    local st n
    st=$(tr '\0' '\n' </proc/"$pid"/cmdline | grep -A1 -- '--status-addr' | tail -1)
    n=$("$PROMGET" --sum "$st" strata_raftstore_regions type=leaders 2>/dev/null)
    n=${n%.*}
    if [[ ${n:-0} -gt $bestn ]]; then best=$pid bestn=${n:-0}; fi
  done
  echo "$best"
}

# kill_store_middle kills a store -9 for the middle minute of the run and
# restarts it with its command line; it records the kill window.
kill_store_middle() {
  local total=$1
  sleep $(( total / 2 - 30 ))
  local pid
  pid=$(busiest_store)
  [[ -n $pid ]] || return 0
  local -a cmd
  mapfile -d '' cmd </proc/"$pid"/cmdline
  local logf
  logf=$(readlink /proc/"$pid"/fd/2 || echo "$WORK/strata/restarted-store.log")
  echo "kill -9 store pid $pid at $(date -u +%H:%M:%S)" >>"$WORK/kill.log"
  kill -KILL "$pid"
  sleep 60
  "${cmd[@]}" >>"$logf" 2>&1 &
  echo "restarted store as pid $! at $(date -u +%H:%M:%S)" >>"$WORK/kill.log"
  echo $! >"$WORK/restarted.pid"
}

# server_pids prints `role pid` for every server process of the target:
# mariadbd, or the SQL node, the stores and the PD of its cluster (same
# --pd address).
server_pids() {
  if [[ $tgt != strata* ]]; then echo "mariadbd $SQLPID"; return; fi
  echo "sqlnode $SQLPID"
  local pd pid
  pd=$(tr '\0' '\n' </proc/"$SQLPID"/cmdline | grep -A1 -- '^--pd$' | tail -1)
  [[ -n $pd ]] || return 0
  for pid in $(pgrep -f -- "storenode .*--pd $pd( |$)"); do echo "store $pid"; done
  for pid in $(pgrep -f -- "/pd .*--addr $pd( |$)"); do echo "pd $pid"; done
}

# server_cpu prints `role pid cpu_seconds` for the processes of server_pids.
server_cpu() {
  local pids
  pids=$(server_pids)
  [[ -n $pids ]] || return 0
  join -1 2 -2 1 -o 1.1,1.2,2.2 <(echo "$pids" | sort -k2,2) <("$PROCCPU" $(echo "$pids" | awk '{print $2}') | sort -k1,1)
}

# cpu_report prints the servers' CPU between two server_cpu outputs: in
# total (and in % of one core over secs), per committed transaction and
# per role. A process gone by the second (--kill-store) counts its CPU
# up to the first output only.
cpu_report() { # before after secs transactions
  awk -v secs="$3" -v txns="$4" 'NR == FNR { a[$2] = $3; next }
    { d = $3 - a[$2]; if ($3 == 0) d = 0; if (d < 0) d = 0; cpu[$1] += d; n[$1]++; tot += d }
    END {
      if (txns <= 0) txns = 1
      printf "%.1f s (%.0f%% of one core), %.0f µs per committed transaction (%d): ", tot, 100 * tot / secs, 1e6 * tot / txns, txns
      sep = ""
      split("sqlnode store pd mariadbd", order, " ")
      for (i = 1; i <= 4; i++) { r = order[i]; if (r in cpu) { printf "%s%s %.0f µs%s", sep, r, 1e6 * cpu[r] / txns, (n[r] > 1 ? " (" n[r] " processes)" : ""); sep = ", " } }
      printf "\n"
    }' <(echo "$1") <(echo "$2")
}

# sql_errors prints the Strata SQL node's strata_sql_errors_total series
# (nothing for MariaDB).
sql_errors() {
  [[ $tgt == strata* ]] || return 0
  local st
  st=$(tr '\0' '\n' </proc/"$SQLPID"/cmdline | grep -A1 -- '^--status-addr$' | tail -1)
  [[ -n $st ]] && "$PROMGET" "$st" strata_sql_errors_total 2>/dev/null || true
}

# error_diff prints "code N" for each error code whose count grew between
# two sql_errors outputs.
error_diff() {
  awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if (d > 0) { match($1, /code="[0-9]+"/); printf "%s %d, ", substr($1, RSTART + 6, RLENGTH - 7), d } }' <(echo "$1") <(echo "$2")
}

summary_rows() { # go-tpc run output -> markdown rows
  awk '/^\[Summary\]/ {
    op=$2; gsub(/,/, "", op)
    n=split($0, f, ", "); count=""; p50=""; p99=""; tpm=""
    for (i=1;i<=n;i++) {
      if (f[i] ~ /Count:/) { split(f[i], a, ": "); count=a[2] }
      if (f[i] ~ /^TPM:/) { split(f[i], a, ": "); tpm=a[2] }
      if (f[i] ~ /^50th/) { split(f[i], a, ": "); p50=a[2] }
      if (f[i] ~ /^99th/) { split(f[i], a, ": "); p99=a[2] }
    }
    printf "| %s | %s | %s | %s | %s |\n", op, count, tpm, p50, p99
  }' "$1"
}

TOTAL=$(secs "$TIME")
{
  echo "# go-tpc TPC-C: $WAREHOUSES warehouses, $THREADS threads, $TIME"
  echo
  echo "Run by \`bench/tpcc.sh --warehouses $WAREHOUSES --threads $THREADS --time $TIME --targets $TARGETS$([[ $KILL == 1 ]] && echo ' --kill-store')\`"
  echo "at $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores (load average at start: $(cut -d' ' -f1-3 /proc/loadavg)); go-tpc $(go version -m "$GOTPC" 2>/dev/null | awk '$1 == "mod" {print $3}')."
  echo "Strata: \`make build\` binaries, 1 PD + 3 stores + 1 SQL node (playground, free ports). MariaDB: \`mariadbd --no-defaults\` (InnoDB, log flushed at every commit)."
  echo
} >"$OUT.tmp"

IFS=, read -ra TGTS <<<"$TARGETS"
for tgt in "${TGTS[@]}"; do
  log "$tgt: starting"
  case $tgt in
    strata) start_strata "$ROOT/bin" strata ;;
    strata-base) [[ -n $BASE_BIN ]] || { echo "strata-base needs --base-bin-dir" >&2; exit 2; }; start_strata "$BASE_BIN" strata-base ;;
    mariadb) start_mariadb ;;
    *) echo "unknown target $tgt" >&2; exit 2 ;;
  esac
  dir=$WORK/$tgt
  args=(-H 127.0.0.1 -P "$PORT" -U root -D tpcc --warehouses "$WAREHOUSES")
  if [[ $tgt == strata && -n $STRATA_PORT ]]; then
    prep="(loaded before)"
  else
    log "$tgt ($VERSION) on port $PORT: prepare"
    t0=$(date +%s.%N)
    "$GOTPC" tpcc prepare "${args[@]}" -T "$WAREHOUSES" --no-check >"$dir/prepare.log" 2>&1 || { tail "$dir/prepare.log" >&2; exit 1; }
    prep="$(echo "$(date +%s.%N) - $t0" | bc | cut -d. -f1) s"
  fi
  log "$tgt: prepared in $prep; run $TIME"
  # Peak RSS from here on (the prepare's bulk loading is not counted):
  # writing 5 to clear_refs resets VmHWM to the current RSS.
  echo 5 >/proc/"$SQLPID"/clear_refs 2>/dev/null || true
  if [[ $tgt == strata && $KILL == 1 ]]; then kill_store_middle "$TOTAL" & killer=$!; fi
  # --ignore-error keeps every thread going after an error (without it a
  # thread stops at its first one) and go-tpc prints each error with its
  # time. It counts the transactions still running when --time runs out
  # as errors (their context is cancelled) but does not print those.
  errs0=$(sql_errors)
  cpu0=$(server_cpu)
  t0run=$(date +%s.%N)
  "$GOTPC" tpcc run "${args[@]}" -T "$THREADS" --time "$TIME" --ignore-error >"$dir/run.log" 2>&1 || true
  errs1=$(sql_errors)
  cpu1=$(server_cpu)
  runsecs=$(echo "$(date +%s.%N) - $t0run" | bc)
  committed=$(awk '/^\[Summary\] [A-Z_]+ - / && $2 !~ /_ERR$/ { for (i=1;i<=NF;i++) if ($i == "Count:") { v=$(i+1); gsub(/,/, "", v); n += v } } END { print n+0 }' "$dir/run.log")
  if [[ $tgt == strata && $KILL == 1 ]]; then
    wait "$killer" || true
    [[ -f $WORK/restarted.pid ]] && PIDS+=("$(cat "$WORK/restarted.pid")")
  fi
  rss=$(awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' /proc/"$SQLPID"/status)
  check="not run"
  if [[ ,$CHECK, == *,$tgt,* ]]; then
    log "$tgt: check"
    t0check=$(date +%s)
    # go-tpc exits 0 when a condition fails: its "failed" line decides.
    if "$GOTPC" tpcc check "${args[@]}" -T "$WAREHOUSES" >"$dir/check.log" 2>&1 && ! grep -q failed "$dir/check.log"; then
      check="passed ($(grep -c '^begin to check' "$dir/check.log") conditions x warehouses)"
    else
      check="FAILED: $(grep -m1 -i 'failed' "$dir/check.log" | cut -c1-300)"
    fi
    check="$check in $(( $(date +%s) - t0check )) s; peak RSS after it: $(awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' /proc/"$SQLPID"/status)"
  fi
  {
    echo "## $tgt ($VERSION)"
    echo
    echo "- $(grep -m1 '^tpmC' "$dir/run.log" || echo 'tpmC: n/a')"
    echo "- prepare: $prep; check: $check"
    echo "- server peak RSS (VmHWM of the SQL node / mariadbd) during the run: $rss"
    echo "- server CPU during the run (user + system from /proc of every server process, as bench/sysbench counts it): $(cpu_report "$cpu0" "$cpu1" "$runsecs" "$committed")"
    [[ $tgt == strata && $KILL == 1 && -f $WORK/kill.log ]] && sed 's/^/- /' "$WORK/kill.log"
    echo
    echo "| transaction | count | TPM | p50 ms | p99 ms |"
    echo "|---|---:|---:|---:|---:|"
    summary_rows "$dir/run.log"
    echo
    printed=$(grep -cE '^\[[0-9]{4}.*failed, err' "$dir/run.log" || true)
    counted=$(awk '/^\[Summary\] [A-Z_]*_ERR/ { for (i=1;i<=NF;i++) if ($i == "Count:") { v=$(i+1); gsub(/,/, "", v); n += v } } END { print n+0 }' "$dir/run.log")
    echo "- errors: go-tpc counted $counted, printed $printed during the run; the other $(( counted - printed )) were transactions cut off when --time ran out (go-tpc cancels them and counts them without printing)"
    [[ $tgt == strata* ]] && echo "- errors the SQL node returned during the run (strata_sql_errors_total by code): $(error_diff "$errs0" "$errs1" | sed 's/, $//')$([[ -z $(error_diff "$errs0" "$errs1") ]] && echo none)"
    echo
    errlines=$(grep -E '^\[[0-9]{4}' "$dir/run.log" | grep -i 'error\|failed' | sed -E 's/^\[[^]]*\] //' | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn | head -10 || true)
    errtimes=$(grep -E '^\[[0-9]{4}.*failed, err' "$dir/run.log" | sed -E 's/^\[[0-9-]+ ([0-9:]+)\].*Error ([0-9]+).*/\1 \2/; s/^\[[0-9-]+ ([0-9:]+)\].*/\1 other/' | tr '\n' ',' | sed 's/,$//; s/,/, /g' || true)
    [[ -n $errtimes ]] && { echo "Error times (UTC) and codes: $errtimes"; echo; }
    if [[ -n $errlines ]]; then
      echo "Errors printed by go-tpc (grouped, numbers as N):"
      echo
      echo '```'
      echo "$errlines"
      echo '```'
      echo
    fi
  } >>"$OUT.tmp"
  log "$tgt: $(grep -m1 '^tpmC' "$dir/run.log" || echo 'no tpmC'); check $check"
  # Stop this target before the next one starts (they share the cores).
  stop_pids
done
mv "$OUT.tmp" "$OUT"
log "wrote $OUT (raw output in $WORK)"
