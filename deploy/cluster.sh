#!/usr/bin/env bash
# Start, wait for, stop and remove the compose cluster of
# deploy/docker-compose.yml. The Makefile targets cluster-up, cluster-down and
# cluster-clean call this script; it works the same by hand.
#
#   deploy/cluster.sh up|wait|down|clean|ps|logs
#
# Environment: COMPOSE (the compose command; default: `docker compose` if the
# plugin exists, else `docker-compose`), PROJECT (compose project name,
# default strata), TIMEOUT (seconds `up`/`wait` wait for health, default 120),
# STRATA_TLS=1 (add docker-compose.tls.yml: cluster TLS with the files of
# `make certs` in deploy/certs/).
set -euo pipefail
cd "$(dirname "$0")"

if [[ -z "${COMPOSE:-}" ]]; then
  if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
  elif command -v docker-compose >/dev/null 2>&1; then COMPOSE="docker-compose"
  else echo "cluster.sh: neither 'docker compose' nor 'docker-compose' is installed" >&2; exit 1
  fi
fi
PROJECT=${PROJECT:-strata}
TIMEOUT=${TIMEOUT:-120}
FILES=(-f docker-compose.yml)
if [[ "${STRATA_TLS:-}" == 1 ]]; then
  if [[ ! -f certs/ca.pem ]]; then
    echo "cluster.sh: STRATA_TLS=1 needs deploy/certs/ (run \`make certs\`)" >&2; exit 1
  fi
  FILES+=(-f docker-compose.tls.yml)
fi
compose() { $COMPOSE "${FILES[@]}" -p "$PROJECT" "$@"; }

# wait_healthy polls the health of every container of the project until all
# of them (8 without profiles) are healthy, or TIMEOUT seconds pass.
wait_healthy() {
  local start=$SECONDS deadline=$((SECONDS + TIMEOUT)) last=""
  while :; do
    local ids total=0 healthy=0 states=""
    ids=$(compose ps -q)
    for id in $ids; do
      local line
      line=$(docker inspect -f '{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}no-healthcheck{{end}}' "$id")
      total=$((total + 1))
      [[ $line == *" running healthy" ]] && healthy=$((healthy + 1))
      states+="${line#/} "$'\n'
    done
    local summary="$healthy/$total healthy"
    if [[ $summary != "$last" ]]; then
      echo "  $(printf '%3d' $((SECONDS - start)))s  $summary"
      last=$summary
    fi
    if (( total > 0 && healthy == total )); then
      echo "cluster $PROJECT: $total containers healthy after $((SECONDS - start))s"
      return 0
    fi
    if (( SECONDS >= deadline )); then
      echo "cluster $PROJECT: not healthy after ${TIMEOUT}s:" >&2
      printf '%s' "$states" >&2
      compose logs --tail 30 >&2 || true
      return 1
    fi
    sleep 1
  done
}

case "${1:-}" in
  up)
    compose up -d --remove-orphans
    wait_healthy
    sql1=$(compose port sql1 4000 || true)
    sql2=$(compose port sql2 4000 || true)
    echo
    echo "Strata is ready. Connect with:"
    echo "  mysql -h ${sql1%:*} -P ${sql1##*:} -u root     # sql1"
    echo "  mysql -h ${sql2%:*} -P ${sql2##*:} -u root     # sql2"
    ;;
  wait) wait_healthy ;;
  down) compose --profile monitoring down --remove-orphans ;;
  clean) compose --profile monitoring down --remove-orphans --volumes ;;
  ps) compose ps ;;
  logs) shift; compose logs "$@" ;;
  *) echo "usage: $0 up|wait|down|clean|ps|logs" >&2; exit 2 ;;
esac
