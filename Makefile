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

.PHONY: all build run test test-unit test-integration proto deps clean tools-mysql help

all: build

help:
	@echo "make run    build and start 1 PD + 3 stores + 1 SQL node (STORES=n SQL=m to change)"
	@echo "make test   unit and integration tests"
	@echo "make build  binaries into ./bin"
	@echo "make proto  regenerate proto/ Go code (installs protoc and plugins)"
	@echo "make clean  remove ./bin and ./data"

deps:
	$(GO) mod download

build: deps
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/pd ./cmd/storenode ./cmd/sqlnode ./cmd/playground

STORES ?= 3
SQL ?= 1
run: build
	$(BIN)/playground --bin-dir $(BIN) --data-dir $(CURDIR)/data --stores $(STORES) --sql $(SQL)

test: deps
	$(GO) vet ./...
	$(GO) test -timeout $(TEST_TIMEOUT) ./...

test-unit: deps
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /tests)

test-integration: deps
	$(GO) test -timeout $(TEST_TIMEOUT) -v ./tests/...

# mysql CLI for trying the playground by hand.
tools-mysql:
	@command -v mysql >/dev/null || { apt-get update -qq && apt-get install -y -qq mariadb-client; }

proto:
	@command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(TOOLS):$$PATH ./proto/gen.sh

clean:
	rm -rf $(BIN) $(CURDIR)/data
