# Strata: `make run` starts a local cluster, `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
GIT_HASH := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/stratadb/strata/status.GitHash=$(GIT_HASH)
# Static binaries (no cgo): they run anywhere, including FROM scratch images.
export CGO_ENABLED := 0
# Pinned code generators for `make proto`.
PROTOC_GEN_GO := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
TEST_TIMEOUT ?= 20m

.PHONY: all build run test chaos test-unit test-integration test-bank test-affinity test-clients test-apps apps-deps test-go-sql-driver proto deps clean tools-mysql help gcc test-ch collation-reference test-dashboard

all: build

help:
	@echo "make run    build and start 1 PD + 3 stores + 1 SQL node (PDS=k STORES=n SQL=m to change)"
	@echo "make test   unit and integration tests"
	@echo "make test-dashboard  /dashboard in headless chromium (installs it); DASHBOARD_PNG=path for the screenshot"
	@echo "make build  binaries into ./bin"
	@echo "make proto  regenerate proto/ Go code (installs protoc and plugins)"
	@echo "make clean  remove ./bin and ./data"
	@echo "make certs  CA and certificates for cluster TLS into deploy/certs (make cluster-up TLS=1 uses them)"

deps:
	$(GO) mod download

build: deps
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/pd ./cmd/storenode ./cmd/sqlnode ./cmd/playground ./cmd/consistencycheck ./cmd/br

PDS ?= 1
STORES ?= 3
SQL ?= 1
run: build
	$(BIN)/playground --bin-dir $(BIN) --data-dir $(CURDIR)/data --pds $(PDS) --stores $(STORES) --sql $(SQL)

# Unit and cluster tests run with the race detector (it needs cgo and gcc).
test: deps gcc apps-deps
	$(GO) vet ./...
	CGO_ENABLED=1 $(GO) test -race -timeout $(TEST_TIMEOUT) ./...
	CGO_ENABLED=1 $(GO) test -race -tags failpoints ./failpoint/

gcc:
	@command -v gcc >/dev/null || { apt-get update -qq && apt-get install -y -qq gcc libc6-dev; }

test-unit: deps
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /tests)

test-integration: deps
	$(GO) test -timeout $(TEST_TIMEOUT) -v ./tests/...

# Jepsen-style runs (tests/chaos): every workload with every nemesis family
# for CHAOS_SECONDS each, reports under chaos-results/ (make test runs each
# workload once for 15 s). CHAOS_SEED=n replays a fault schedule.
CHAOS_SECONDS ?= 60
chaos: deps
	STRATA_CHAOS_FULL=1 STRATA_CHAOS_SECONDS=$(CHAOS_SECONDS) STRATA_CHAOS_SEED=$(CHAOS_SEED) \
		STRATA_CHAOS_REPORT_DIR=$(CURDIR)/chaos-results/$$(date +%Y-%m-%d-%H%M)-$(GIT_HASH) \
		$(GO) test -timeout 60m -count=1 -v -run TestChaos ./tests/chaos/
	@ls -d $(CURDIR)/chaos-results/*/ | tail -1 | xargs -I{} echo "reports: {}summary.md"

# The bank transfer invariant as a soak (make test runs it for 6 s per mode).
BANK_SECONDS ?= 60
test-bank: deps
	STRATA_BANK_SECONDS=$(BANK_SECONDS) $(GO) test -timeout $(TEST_TIMEOUT) -count=1 -v -run TestBankTransfers ./tests/

# Data affinity under 5 minutes of load (make test runs 45 s of it).
AFFINITY_LOAD ?= 5m
# The SQL node's /dashboard in a real headless browser (Debian's chromium)
# against a running cluster after a forced slow request (tests/
# dashboard_browser_test.go); the screenshot goes to DASHBOARD_PNG.
DASHBOARD_PNG ?= /tmp/strata-dashboard.png
test-dashboard: deps
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	STRATA_DASHBOARD_PNG=$(abspath $(DASHBOARD_PNG)) $(GO) test -tags browser -count=1 -timeout 15m -run 'TestDashboardBrowser' -v ./tests/

test-affinity: deps
	STRATA_AFFINITY_LOAD=$(AFFINITY_LOAD) $(GO) test -timeout $(TEST_TIMEOUT) -count=1 -v -run TestAffinityKeepsIndexAndRowsCoLed ./tests/

# Real clients (not part of `make test`, which runs them only when they are
# installed): the mysql CLI, Python's pymysql and MySQLdb, GORM; then
# go-sql-driver/mysql's own live-server suite against a playground.
test-clients: deps gcc
	@command -v mysql >/dev/null && /usr/bin/python3 -c 'import pymysql, MySQLdb' 2>/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq mariadb-client python3-pymysql python3-mysqldb; }
	cd tests/clients/gorm && $(GO) mod download
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestMySQLCLI|TestClientPrograms|TestUsersAcrossSQLNodes' ./tests/

# The applications' round trips (tests/apps_test.go): Django's migrations
# and ORM (python3-django 3.2, python3-mysqldb), mysqldump of one cluster
# reloaded into another (mariadb-client). `make test` runs them too.
test-apps: deps gcc apps-deps
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestDjango|TestMysqldumpRoundTrip' ./tests/

# What the applications' round trips need; `make test` installs it too, so
# that CI runs them.
apps-deps:
	@command -v mysqldump >/dev/null && /usr/bin/python3 -c 'import django, MySQLdb' 2>/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq mariadb-client python3-django python3-mysqldb; }

test-go-sql-driver: build
	BIN=$(BIN) tests/clients/go-sql-driver.sh

# mysql CLI for trying the playground by hand.
tools-mysql:
	@command -v mysql >/dev/null || { apt-get update -qq && apt-get install -y -qq mariadb-client; }

# Re-record the collation differential test's expected answers and
# sql/collate's weight tables from a private MariaDB 10.11 (see the script).
collation-reference: bench-tools-mariadb
	./sql/server/testdata/collation-mariadb/regen.sh

proto:
	@command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(TOOLS):$$PATH ./proto/gen.sh

clean:
	rm -rf $(BIN) $(CURDIR)/data

# ---- Docker deployment: deploy/, docs/operations.md ----
# The image is built FROM scratch from the static binaries (no registry needed).
IMAGE ?= strata:latest
# `docker compose` (v2 plugin) or `docker-compose` (v1), whichever is installed;
# evaluated once, on first use.
COMPOSE = $(eval COMPOSE := $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; \
	elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose; fi))$(COMPOSE)
# TLS=1: the cluster TLS variant (deploy/docker-compose.tls.yml, files of
# `make certs`).
CLUSTER := COMPOSE="$(COMPOSE)" STRATA_IMAGE=$(IMAGE) STRATA_TLS=$(TLS) deploy/cluster.sh

.PHONY: images cluster-up cluster-down cluster-clean e2e certs

images: build
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/healthcheck
	docker build -q -f deploy/Dockerfile --build-arg GIT_HASH=$(GIT_HASH) -t $(IMAGE) .

# 3 PD + 3 stores + 2 SQL nodes; SQL on 127.0.0.1:4000 (sql1) and :4001 (sql2).
cluster-up: images
	@test -n "$(COMPOSE)" || { echo "docker compose / docker-compose not found"; exit 1; }
	$(CLUSTER) up

# Development PKI for cluster TLS in deploy/certs/ (git-ignored): a CA, one
# certificate per component (CommonName pd, store, sql, client; the compose
# service names, localhost and 127.0.0.1) and PD's HTTP API token. Keys are
# world-readable so the containers' nobody user can read them: development
# only. An existing CA is kept; CERTS_ARGS=--force makes a new one.
certs:
	@if [ -f deploy/certs/ca.pem ] && [ -z "$(CERTS_ARGS)" ]; then echo "deploy/certs/ca.pem exists (CERTS_ARGS=--force replaces it)"; else \
	$(GO) run ./cmd/certgen --out deploy/certs --readable-keys --cert pd=pd1,pd2,pd3 --cert store=store1,store2,store3 \
		--cert sql=sql1,sql2 --cert client --token pd-token $(CERTS_ARGS); fi

# Removes containers and the network; data volumes are kept.
cluster-down:
	$(CLUSTER) down

# Removes containers, the network and the data volumes.
cluster-clean:
	$(CLUSTER) clean

# End-to-end test against a compose cluster with its own project name and
# random ports (tests/e2e); needs Docker.
e2e:
	$(GO) test -tags e2e -count=1 -v -timeout 30m ./tests/e2e/

# sysbench against a fresh local cluster on free loopback ports (never 4000);
# figures, raw output and profiles go to bench/results/ (see bench/README.md).
# Installs sysbench (and mariadb-server when SYSBENCH_ARGS names mariadb).
#   make bench-sysbench SYSBENCH_ARGS='--workload oltp_point_select,oltp_insert --targets strata,mariadb --runs 2'
SYSBENCH_ARGS ?= --workload oltp_point_select --threads 8 --time 60 --table-size 10000
.PHONY: bench-sysbench
bench-sysbench: build
	@command -v sysbench >/dev/null || { apt-get update -qq && apt-get install -y -qq sysbench; }
	@case "$(SYSBENCH_ARGS)" in *mariadb*) command -v mariadbd >/dev/null || { apt-get update -qq && apt-get install -y -qq mariadb-server; };; esac
	$(GO) run ./bench/sysbench $(SYSBENCH_ARGS)

# CH-benCHmark: go-tpc's 22 analytic queries on identical TPC-C data in
# Strata and a private MariaDB; every result must match (issue 12).
test-ch: deps
	@command -v mariadbd >/dev/null || { apt-get update -qq && apt-get install -y -qq mariadb-server; }
	GOBIN=$(TOOLS) $(GO) install github.com/pingcap/go-tpc/cmd/go-tpc@v1.0.7
	GO_TPC=$(TOOLS)/go-tpc $(GO) test -tags chbench -timeout 60m -count=1 -v -run TestCHBenchmarkMatchesMariaDB ./tests/

# ---- issue 32: make bench / make bench-quick (bench/README.md) ----
# Every sysbench OLTP workload at 1 thread (latency) and 16 threads
# (saturation), Strata and a private MariaDB interleaved run by run,
# then go-tpc TPC-C on both; one session directory
# bench/results/<date>-<git hash>/ with raw logs, one JSON per run,
# report.md and PNG plots. oltp_point_select and oltp_update_non_index
# are measured a second time by the Go driver (HDR histogram latencies,
# bench/sysbench/godriver.go). About 27 minutes on the 2-core dev machine
# (the driver prints its plan at start). BENCH_ARGS overrides the sizes.
BENCH_WORKLOADS := oltp_point_select,oltp_read_only,oltp_read_write,oltp_write_only,oltp_update_index,oltp_update_non_index,oltp_insert,select_random_points,select_random_ranges
BENCH_GO_WORKLOADS := oltp_point_select:driver=go,oltp_update_non_index:driver=go
BENCH_ARGS ?= --threads 1,16 --time 20 --warmup 5 --table-size 10000 --tpcc-time 120 --tpcc-warehouses 1 --tpcc-threads 4
BENCH_QUICK_ARGS ?= --threads 4 --time 4 --warmup 0 --table-size 1000 --tpcc-time 10 --tpcc-warehouses 1 --tpcc-threads 2
# Errors sysbench retries instead of failing the run (counted as "ignored
# err/s" in the report): MariaDB's deadlock / lock wait timeout (sysbench's
# default list) and Strata's write conflict.
BENCH_IGNORE_ERRORS := 1213,1020,1205,9007
GO_TPC_VERSION := v1.0.7
BENCH_STAMP = $(shell date -u +%Y-%m-%d)-$(GIT_HASH)
.PHONY: bench bench-quick bench-tools-sysbench bench-tools-mariadb bench-tools-gotpc

bench-tools-sysbench:
	@command -v sysbench >/dev/null || { apt-get update -qq && apt-get install -y -qq sysbench; }

bench-tools-mariadb:
	@test -x /usr/sbin/mariadbd || command -v mariadbd >/dev/null || { apt-get update -qq && apt-get install -y -qq mariadb-server; }

bench-tools-gotpc:
	@test -x $(TOOLS)/go-tpc || GOBIN=$(TOOLS) $(GO) install github.com/pingcap/go-tpc/cmd/go-tpc@$(GO_TPC_VERSION)

bench: build bench-tools-sysbench bench-tools-mariadb bench-tools-gotpc
	$(GO) run ./bench/sysbench --workload $(BENCH_WORKLOADS),$(BENCH_GO_WORKLOADS) --targets strata,mariadb \
		--sysbench-args '--mysql-ignore-errors=$(BENCH_IGNORE_ERRORS)' --go-tpc $(TOOLS)/go-tpc \
		--session-dir bench/results/$(BENCH_STAMP) $(BENCH_ARGS)

# Smoke test of the whole pipeline (about 2.5 minutes): every workload for 4 s
# and 1 warehouse of TPC-C for 10 s, Strata only, tiny tables; exits non-zero
# on any sysbench or go-tpc error. Results go to bench/results/quick-*/
# (ignored by git).
bench-quick: build bench-tools-sysbench bench-tools-gotpc
	$(GO) run ./bench/sysbench --workload $(BENCH_WORKLOADS) --targets strata --fail-on-error \
		--sysbench-args '--mysql-ignore-errors=$(BENCH_IGNORE_ERRORS)' --go-tpc $(TOOLS)/go-tpc \
		--session-dir bench/results/quick-$(BENCH_STAMP) $(BENCH_QUICK_ARGS)

# The externally written suites (../shared/suites: TiDB integration tests
# and sqllogictest) against a fresh playground: pass counts per file.
.PHONY: suites
suites: build apps-deps
	bench/suites.sh

# br's acceptance check: backup of go-tpc TPC-C (4 warehouses) while it
# runs, restore into a fresh cluster, go-tpc tpcc check there and CHECKSUM
# TABLE equal to the source's at the backup ts.
.PHONY: bench-br-tpcc
bench-br-tpcc: build bench-tools-gotpc apps-deps
	GOTPC=$(TOOLS)/go-tpc bench/br_tpcc.sh
