#!/usr/bin/env bash
# Regenerates the Go code for every .proto here with pinned generators.
# Called by `make proto`, which installs protoc and the plugins first.
set -euo pipefail
cd "$(dirname "$0")"
for f in *.proto; do
  pkg="${f%.proto}"
  mkdir -p "$pkg"
done
protoc -I . \
  --go_out=. --go_opt=module=github.com/stratadb/strata/proto \
  --go-grpc_out=. --go-grpc_opt=module=github.com/stratadb/strata/proto \
  *.proto
