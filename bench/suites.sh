#!/usr/bin/env bash
# The externally written suites in ../shared/suites against a fresh
# playground cluster: every TiDB integration test pair (statements whose
# output matches TiDB's .result, per file) and the sqllogictest files
# (records ok / not ok / skipped, per file). Prints one table per suite;
# the raw outputs stay in the work directory it names, with failures.md:
# every mismatching statement with its reason (bench/tidbtests -failures).
#
#   make suites            (builds, then runs this; about 10-20 minutes)
#   bench/suites.sh [--slt 'select1.test select2.test evidence'] [--it 'ddl/column executor/insert']
#
# Needs ../shared/suites, ../shared/tools/sltrunner and the mysql client;
# exits 1 when they are missing. Never fails on test mismatches: the counts are the result.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUITES=${SUITES:-$ROOT/../shared/suites}
SLTRUNNER_SRC=${SLTRUNNER_SRC:-$ROOT/../shared/tools/sltrunner}
SLT="select1.test select2.test evidence index random select4.test select5.test"
IT=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --slt) SLT=$2; shift 2 ;;
    --it) IT=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
[[ -d $SUITES/integrationtest && -d $SUITES/slt/test ]] || { echo "no suites at $SUITES" >&2; exit 1; }
command -v mysql >/dev/null || { echo "the mysql client is missing: make apps-deps" >&2; exit 1; }
[[ -n $IT ]] || IT=$(grep -v '^\s*$' "$SUITES/integrationtest/LIST.txt" | tr '\n' ' ')
WORK=$(mktemp -d /tmp/strata-suites-XXXXXX)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
cleanup() {
  stop_pids
  rm -rf "$WORK/cluster/data"
}
trap cleanup EXIT

(cd "$SLTRUNNER_SRC" && go build -o "$WORK/sltrunner" .)
start_playground "$ROOT/bin" "$WORK/cluster"
DSN="root:@tcp(127.0.0.1:$PORT)/"
echo "cluster on port $PORT; raw outputs in $WORK"

echo
echo "TiDB integration tests (statements matching TiDB's .result)"
echo
echo "| file | match | statements |"
echo "|---|---:|---:|"
# shellcheck disable=SC2086
(cd "$ROOT" && go run ./bench/tidbtests -dsn "$DSN" -dir "$SUITES/integrationtest" -show 20 -failures "$WORK/failures.md" $IT) >"$WORK/integrationtest.txt" 2>&1 || true
sed -n 's#^\([^ ]*\): \([0-9]*\)/\([0-9]*\) statements match$#| \1 | \2 | \3 |#p' "$WORK/integrationtest.txt"
awk '/statements match$/ { split($2, a, "/"); ok += a[1]; n += a[2] } END { printf "| **all** | **%d** | **%d** |\n", ok, n }' "$WORK/integrationtest.txt"
grep ': error:' "$WORK/integrationtest.txt" || true
echo
echo "Every mismatch with its reason: $WORK/failures.md"

mysql -h 127.0.0.1 -P "$PORT" -u root -e "CREATE DATABASE IF NOT EXISTS sqllogictest"
echo
echo "sqllogictest (records)"
echo
echo "| file | ok | not ok | skipped |"
echo "|---|---:|---:|---:|"
for f in $SLT; do
  out="$WORK/slt-$(echo "$f" | tr '/' '_').txt"
  (cd "$SUITES/slt/test" && "$WORK/sltrunner" -dsn "${DSN}sqllogictest" verify "$f") >"$out" 2>&1 || true
  ok=$(grep -c ' ok$' "$out" || true)
  bad=$(grep -c ' not ok' "$out" || true)
  skip=$(grep -c ' skipped$' "$out" || true)
  echo "| $f | $ok | $bad | $skip |"
done
