#!/usr/bin/env bash
# br's acceptance check: a backup of go-tpc TPC-C taken while go-tpc runs,
# restored into a fresh cluster, where `go-tpc tpcc check` must pass and
# CHECKSUM TABLE of every table must equal the source's at the backup ts
# (read with tidb_snapshot while go-tpc still runs).
#
#   make build bench-tools-gotpc apps-deps && bench/br_tpcc.sh [--warehouses 4] [--threads 4] [--time 3m]
#
# Two playground clusters (1 PD, 3 stores, 1 SQL node each) on free
# loopback ports in a temp dir; the backup directory is in the same temp
# dir (one machine: every store sees it). Prints each step's time and
# br's rates; exits non-zero if a step or the check fails.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOTPC=${GOTPC:-$ROOT/bin/tools/go-tpc}
WAREHOUSES=4 THREADS=4 TIME=3m
while [[ $# -gt 0 ]]; do
  case $1 in
    --warehouses) WAREHOUSES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[[ -x $GOTPC ]] || { echo "go-tpc not found at $GOTPC: make bench-tools-gotpc" >&2; exit 1; }
command -v mysql >/dev/null || { echo "the mysql client is missing: make apps-deps" >&2; exit 1; }
TABLES=tpcc.warehouse,tpcc.district,tpcc.customer,tpcc.history,tpcc.new_order,tpcc.orders,tpcc.order_line,tpcc.item,tpcc.stock
WORK=$(mktemp -d /tmp/br-tpcc-XXXXXX)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
cleanup() {
  stop_pids
  rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "$(date -u +%H:%M:%S) $*"; }

# start NAME: a playground cluster; sets PORT and PD.
start() { start_playground "$ROOT/bin" "$WORK/$1"; }

start src
SRC_PORT=$PORT SRC_PD=$PD
args=(-H 127.0.0.1 -U root -D tpcc --warehouses "$WAREHOUSES")
log "source on port $SRC_PORT (PD $SRC_PD): prepare $WAREHOUSES warehouses"
"$GOTPC" tpcc prepare "${args[@]}" -P "$SRC_PORT" -T "$WAREHOUSES" --no-check >"$WORK/prepare.log" 2>&1 || { tail "$WORK/prepare.log" >&2; exit 1; }
log "prepared; go-tpc run for $TIME with $THREADS threads"
"$GOTPC" tpcc run "${args[@]}" -P "$SRC_PORT" -T "$THREADS" --time "$TIME" --ignore-error >"$WORK/run.log" 2>&1 &
RUN=$!
PIDS+=($RUN)
sleep 30 # let the workload reach steady state before the backup starts
log "backup while go-tpc runs"
"$ROOT/bin/br" backup full --pd "$SRC_PD" --storage "local://$WORK/backup" --db tpcc 2>"$WORK/backup.log" | grep -v '^Backup \[' | tee "$WORK/backup.out" || { tail "$WORK/backup.log" >&2; exit 1; }
BACKUP_TS=$(grep -o 'backup ts [0-9]*' "$WORK/backup.out" | cut -d' ' -f3)
log "CHECKSUM TABLE on the source at the backup ts $BACKUP_TS (go-tpc still running)"
mysql -h 127.0.0.1 -P "$SRC_PORT" -u root -N -e "SET @@tidb_snapshot = '$BACKUP_TS'; CHECKSUM TABLE $TABLES" >"$WORK/src.sum"
kill -0 "$RUN" 2>/dev/null && log "go-tpc was still running" || log "go-tpc had ended"
wait "$RUN" || true
grep -E '^\[Summary\] (NEW_ORDER|PAYMENT) ' "$WORK/run.log" || true
start dst
log "fresh cluster on port $PORT: restore"
"$ROOT/bin/br" restore full --pd "$PD" --storage "local://$WORK/backup" 2>"$WORK/restore.log" | grep -v '^Restore \[' || { tail "$WORK/restore.log" >&2; exit 1; }
log "go-tpc tpcc check on the restored cluster"
if "$GOTPC" tpcc check "${args[@]}" -P "$PORT" -T "$WAREHOUSES" >"$WORK/check.log" 2>&1 && ! grep -q failed "$WORK/check.log"; then
  log "check passed"
else
  tail -20 "$WORK/check.log"
  log "check FAILED"
  exit 1
fi
mysql -h 127.0.0.1 -P "$PORT" -u root -N -e "CHECKSUM TABLE $TABLES" >"$WORK/dst.sum"
if diff "$WORK/src.sum" "$WORK/dst.sum"; then
  cat "$WORK/dst.sum"
  log "CHECKSUM TABLE: all $(wc -l <"$WORK/dst.sum") tables equal the source's at the backup ts"
else
  log "CHECKSUM TABLE differs (< source at the backup ts, > restored)"
  exit 1
fi
