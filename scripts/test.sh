#!/usr/bin/env bash
# Runs the whole test suite: go vet and go test -race for the SDK module and for each side
# module (interop/, bench/) that has its own go.mod. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

run() {
  local dir=$1
  echo "== $dir: go vet"
  (cd "$dir" && go vet ./...)
  echo "== $dir: go test -race"
  (cd "$dir" && go test -race -count=1 ./...)
}

run .
for mod in interop bench; do
  if [ -f "$mod/go.mod" ]; then
    run "$mod"
  fi
done
