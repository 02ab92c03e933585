#!/usr/bin/env bash
# ADD INDEX under sysbench load (issue 8's acceptance check): a local
# cluster (1 PD, 3 stores, 2 SQL nodes on free ports, cmd/playground),
# sysbench oltp_read_write on SQL node 1 (8 threads, create_secondary=on,
# default prepared statements, $TIME s), and 15 s into the run
# `ALTER TABLE sbtest1 ADD INDEX c_idx (c)` on SQL node 2 (the DDL owner
# may be either node). Then ADMIN CHECK TABLE and EXPLAIN of a
# `WHERE c = ?` query. Prints a markdown report on stdout.
#
#   make build && bench/ddl_under_load.sh > bench/results/...-ddl-under-load.md
set -euo pipefail
TIME=${TIME:-60}
SIZE=${SIZE:-10000}
BIN=${BIN:-bin}
dir=$(mktemp -d /tmp/strata-ddl-load-XXXX)
"$BIN/playground" --bin-dir "$BIN" --data-dir "$dir" --sql 2 --free-ports >"$dir/playground.out" 2>&1 &
pg=$!
trap 'kill -TERM $pg 2>/dev/null; wait $pg 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 240); do
	grep -q "Strata is ready" "$dir/playground.out" && break
	sleep 0.5 # polling the playground's output: no event to wait on
done
mapfile -t ports < <(grep -o "mysql -h 127.0.0.1 -P [0-9]*" "$dir/playground.out" | awk '{print $NF}')
[ "${#ports[@]}" -ge 2 ] || { cat "$dir/playground.out"; exit 1; }
m1=(mysql -h 127.0.0.1 -P "${ports[0]}" -u root --batch)
m2=(mysql -h 127.0.0.1 -P "${ports[1]}" -u root --batch)
"${m1[@]}" -e "CREATE DATABASE sbtest"
sb=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="${ports[0]}" --mysql-user=root
	--mysql-db=sbtest --tables=1 --table-size="$SIZE" --create_secondary=on --threads=8)
"${sb[@]}" prepare >"$dir/prepare.out" 2>&1
"${sb[@]}" --time="$TIME" --report-interval=5 run >"$dir/run.out" 2>&1 &
run=$!
sleep 15 # the ALTER starts 15 s into the measured run, by design
t0=$(date +%s.%N)
alter_rc=0
"${m2[@]}" -e "ALTER TABLE sbtest.sbtest1 ADD INDEX c_idx (c)" >"$dir/alter.out" 2>&1 || alter_rc=$?
t1=$(date +%s.%N)
sb_rc=0
wait $run || sb_rc=$?
check_rc=0
"${m2[@]}" -e "ADMIN CHECK TABLE sbtest.sbtest1" >"$dir/check.out" 2>&1 || check_rc=$?
c=$("${m1[@]}" -N -e "SELECT c FROM sbtest.sbtest1 WHERE id = 1")
"${m1[@]}" -e "EXPLAIN SELECT id, c FROM sbtest.sbtest1 WHERE c = '$c'" >"$dir/explain.out" 2>&1
"${m1[@]}" -e "ADMIN SHOW DDL JOBS 3" >"$dir/jobs.out" 2>&1

echo "# ADD INDEX under sysbench oltp_read_write"
echo
echo "$(date -u +%F) · commit $(git rev-parse --short HEAD) · $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Cluster: cmd/playground, 1 PD, 3 stores, 2 SQL nodes. sysbench oltp_read_write on SQL node 1:"
echo "8 threads, --create_secondary=on, prepared statements (default), --table-size=$SIZE, --time=$TIME."
echo "At 15 s: \`ALTER TABLE sbtest1 ADD INDEX c_idx (c)\` on SQL node 2."
echo
echo "| check | result |"
echo "|---|---|"
echo "| ALTER exit code | $alter_rc ($(cat "$dir/alter.out" | tr '\n' ' ')) |"
printf '| ALTER duration | %.1f s |\n' "$(echo "$t1 - $t0" | bc)"
echo "| sysbench exit code | $sb_rc |"
echo "| sysbench ignored errors | $(grep -E 'ignored errors:' "$dir/run.out" | sed 's/  */ /g') |"
echo "| FATAL lines | $(grep -c FATAL "$dir/run.out" || true) |"
echo "| ADMIN CHECK TABLE exit code | $check_rc ($(cat "$dir/check.out" | tr '\n' ' ')) |"
echo
echo "EXPLAIN SELECT id, c FROM sbtest1 WHERE c = '<c of id 1>':"
echo
echo '```'
cat "$dir/explain.out"
echo '```'
echo
echo "ADMIN SHOW DDL JOBS 3:"
echo
echo '```'
cat "$dir/jobs.out"
echo '```'
echo
echo "sysbench run output:"
echo
echo '```'
cat "$dir/run.out"
echo '```'
[ "$alter_rc" = 0 ] && [ "$sb_rc" = 0 ] && [ "$check_rc" = 0 ] && grep -q c_idx "$dir/explain.out"
