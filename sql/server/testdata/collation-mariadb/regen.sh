#!/usr/bin/env bash
# Regenerates expected.txt (TestCollationDifferential's reference) from
# MariaDB 10.11, and sql/collate's weight tables (general_exceptions.go,
# unicode_ci_data.go): starts a private mariadbd on 127.0.0.1 with its own
# datadir under /tmp (no system service is touched), runs script.sql
# through the same Go code the test runs on Strata, and stops it.
#   needs: apt-get install -y mariadb-server mariadb-client
#   run:   sql/server/testdata/collation-mariadb/regen.sh   (or make collation-reference)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
port="${MARIADB_PORT:-33306}"
dir="$(mktemp -d /tmp/strata-mariadb.XXXXXX)"
mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" --auth-root-authentication-method=normal >"$dir/install.log" 2>&1
mariadbd --no-defaults --datadir="$dir/data" --user="$(id -un)" --bind-address=127.0.0.1 --port="$port" \
  --socket="$dir/sock" --pid-file="$dir/pid" --skip-grant-tables --character-set-server=utf8mb4 \
  --collation-server=utf8mb4_bin >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
  mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -N -e 'SELECT VERSION()'
cd "$root"
go test ./sql/server -run '^TestCollationDifferential$' -count=1 \
  -collation-reference="root@tcp(127.0.0.1:$port)/?charset=utf8mb4&collation=utf8mb4_bin"
# The collation tables of sql/collate: general_ci's weights that its
# rule does not derive, and unicode_ci's (UCA 4.0.0) weights.
dump() {
  mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -N -e "SET SESSION max_recursive_iterations=100000;
    WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n+1 FROM s WHERE n < 65535)
    SELECT n, HEX(WEIGHT_STRING(CONVERT(CONVERT(UNHEX(LPAD(HEX(n),8,'0')) USING utf32) USING utf8mb4) COLLATE $1))
    FROM s WHERE n < 55296 OR n > 57343"
}
dump utf8mb4_general_ci >"$dir/general.tsv"
dump utf8mb4_unicode_ci >"$dir/unicode.tsv"
(cd sql/collate && go test -run '^TestGenerate(General|Unicode)$' -count=1 -general-dump="$dir/general.tsv" -unicode-dump="$dir/unicode.tsv" .)
