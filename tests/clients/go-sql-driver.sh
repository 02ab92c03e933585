#!/usr/bin/env bash
# Runs go-sql-driver/mysql's live-server suite (driver_test.go of the module)
# against a local cluster on free ports and prints the pass/fail counts
# (every test and subtest line) and the failing tests.
#   GSD_VERSION  module version (default v1.10.1)
#   BIN          directory with pd, storenode, sqlnode, playground (default ./bin)
#   GSD_LOG      where to keep the full go test output (default a temp file)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
VERSION=${GSD_VERSION:-v1.10.1}
BIN=${BIN:-$ROOT/bin}
WORK=$(mktemp -d)
LOG=${GSD_LOG:-$WORK/go-test.log}
PG_PID=
cleanup() {
	if [[ -n $PG_PID ]]; then kill "$PG_PID" 2>/dev/null || true; wait "$PG_PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

SRC=$(go mod download -json "github.com/go-sql-driver/mysql@$VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
cp -r "$SRC" "$WORK/gsd"
chmod -R u+w "$WORK/gsd"
(cd "$WORK/gsd" && go mod download)

"$BIN/playground" --bin-dir "$BIN" --free-ports --data-dir "$WORK/data" >"$WORK/playground.out" 2>&1 &
PG_PID=$!
for _ in $(seq 180); do
	grep -q "Strata is ready" "$WORK/playground.out" && break
	kill -0 "$PG_PID" 2>/dev/null || { cat "$WORK/playground.out"; exit 1; }
	sleep 1
done
PORT=$(grep -o -- '-P [0-9]*' "$WORK/playground.out" | head -1 | awk '{print $2}')
[[ -n $PORT ]] || { echo "cluster not ready"; cat "$WORK/playground.out"; exit 1; }

# Database "test" exists on every cluster. TestConnectorReturnsTimeout is
# always skipped (it needs a server that never answers).
set +e
(cd "$WORK/gsd" && MYSQL_TEST_USER=root MYSQL_TEST_PASS= MYSQL_TEST_PROT=tcp MYSQL_TEST_ADDR="127.0.0.1:$PORT" \
	MYSQL_TEST_DBNAME=test go test -count=1 -timeout 30m -skip TestConnectorReturnsTimeout -v . >"$LOG" 2>&1)
set -e
pass=$(grep -cE '^\s*--- PASS' "$LOG" || true)
fail=$(grep -cE '^\s*--- FAIL' "$LOG" || true)
skip=$(grep -cE '^\s*--- SKIP' "$LOG" || true)
echo "go-sql-driver/mysql $VERSION live suite: $pass passed, $fail failed, $skip skipped (tests and subtests)"
grep -E '^--- FAIL' "$LOG" || true
if grep -q 'panic: test timed out' "$LOG"; then
	echo "the suite timed out; running then:"; grep -A3 'panic: test timed out' "$LOG"
fi
