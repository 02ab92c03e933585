// Package e2e tests the Docker deployment end to end: it builds the FROM
// scratch image (make images), starts deploy/docker-compose.yml under a
// unique compose project name with the SQL ports published on random
// 127.0.0.1 ports, and drives it with go-sql-driver/mysql while it stops,
// disconnects and reconnects containers.
//
// The tests are behind the build tag e2e, so `go test ./...` skips them:
//
//	make e2e        # go test -tags e2e ./tests/e2e/
//
// They need Docker with `docker compose` or `docker-compose` (set
// STRATA_COMPOSE to force one). Everything the test creates (containers,
// network, volumes, image tag) carries its project name and is removed when
// the test ends, also when it fails; containers of other projects are never
// touched. Measured outages are logged as "MEASURE" lines.
package e2e
