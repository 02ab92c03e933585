# Shell helpers the bench scripts source: processes started by the script
# (PIDS) and playground clusters.

PIDS=() # processes the script started, stopped by PID (stop_pids)

# stop_pids stops every process in PIDS: SIGTERM, up to 15 s to exit,
# then SIGKILL; PIDS is empty afterwards.
stop_pids() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  PIDS=()
}

# start_playground BIN_DIR DIR starts a playground cluster (1 PD, 3
# stores, 1 SQL node) on free loopback ports with its data and log in DIR,
# waits until it is ready and sets PORT (SQL) and PD (PD's address).
start_playground() {
  local bin=$1 dir=$2
  mkdir -p "$dir"
  "$bin/playground" --bin-dir "$bin" --data-dir "$dir/data" --free-ports >"$dir/playground.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do
    grep -q "Strata is ready" "$dir/playground.log" && break
    sleep 0.2
  done
  grep -q "Strata is ready" "$dir/playground.log" || { cat "$dir/playground.log" >&2; return 1; }
  PORT=$(grep -o -- '-P [0-9]*' "$dir/playground.log" | head -1 | cut -d' ' -f2)
  PD=$(grep -o 'PD ([^)]*)' "$dir/playground.log" | head -1 | sed 's/PD (//; s/)//')
}
