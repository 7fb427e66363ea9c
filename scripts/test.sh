#!/usr/bin/env bash
# Runs the whole test suite: every go vet analyzer and go test -race for the SDK module and for each side
# module (interop/, bench/, queue/asynq/, queue/river/, state/redis/, tokens/tiktoken/) that has its own go.mod.
# The queue/asynq and state/redis tests start a redis-server of their own (apt-get install -y
# redis-server), the queue/river tests a PostgreSQL server (apt-get install -y postgresql);
# without them they are skipped, except under CI=true. The status page's browser test (statuspage)
# drives a headless Chromium (apt-get install -y chromium), skipped without one except under
# CI=true. It says before it starts what it will run and skip, prints each package as it ends,
# and lists at the end every test skipped and why. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
modules=(.)
for mod in interop bench queue/asynq queue/river state/redis tokens/tiktoken; do
  [ -f "$mod/go.mod" ] && modules+=("$mod")
done

echo "== what runs: go vet (every analyzer) and go test -race -count=1 in ${#modules[@]} modules: ${modules[*]}"
echo "   It usually takes about 2½ minutes on 2 cores with a warm build cache, about 5 from a cold one."
echo "   Each package is printed as it ends; every module's tests are listed with their skips at the end."

# What each missing program costs: the tests that need it are skipped here, and fail under CI=true.
ci=${CI:-}
missing=0
need() { # need PROGRAM-FOUND WHAT TESTS INSTALL
  if [ "$1" = yes ]; then
    echo "   found $2: $3 run"
  else
    missing=1
    if [ "$ci" = true ]; then
      echo "   MISSING $2, and CI=true: $3 will fail ($4)"
    else
      echo "   missing $2: $3 are skipped ($4)"
    fi
  fi
}
has() { command -v "$1" >/dev/null 2>&1 && echo yes || echo no; }
pg=no
if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then pg=yes; fi
chrome=no
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then chrome=yes; fi
echo "== services the tests start on 127.0.0.1 for themselves"
need "$(has redis-server)" redis-server "the tests of state/redis and queue/asynq" "apt-get install -y redis-server"
need "$pg" PostgreSQL "the tests of queue/river" "apt-get install -y postgresql"
need "$chrome" Chromium "the status page's browser test (statuspage)" "apt-get install -y chromium"
need "$(has node)" node "the aimock second-opinion tests in interop/" "install node and npm"
[ "$missing" = 0 ] || echo "   (.ci/run installs them all)"

# The aimock second-opinion tests in interop/ need the pinned npm package; install it once.
if command -v node >/dev/null && [ ! -d interop/aimock/node_modules/@copilotkit/aimock ]; then
  echo "== npm ci --prefix interop/aimock"
  npm ci --prefix interop/aimock --no-audit --no-fund
fi

# The formatter of go test's JSON stream: built once, beside the build cache.
sum=$(mktemp -d)
trap 'rm -rf "$sum"; kill "${beat:-}" 2>/dev/null || true' EXIT
go build -o "$sum/testsum" ./internal/testkit/testsum

# go test's -vet=all runs every go vet analyzer on every package, test files included, as
# `go vet ./...` does, but over the build the race-enabled tests make anyway: a first run
# compiles everything once instead of twice. The JSON stream goes through testsum, which prints
# each package as it ends and the skips at the end; the exit status is go test's (or testsum's,
# when it saw a failure go test did not report).
run() {
  local dir=$1
  echo "== $dir: go test -race -vet=all (started at +$(( $(date +%s) - start ))s)"
  (cd "$dir" && go test -json -race -vet=all -count=1 ./... 2>&1 | "$sum/testsum" -module "$dir")
}

# The SDK module runs in the foreground; the side modules run one after another beside it, so
# that their compiling overlaps the SDK's tests that wait on real time (timeouts, servers).
# Both print as they go (a package's lines are whole; the two streams interleave by line).
# The allocation guards that the race detector's sync.Pool makes vary (they skip under -race)
# run once more without it, so that they are proven somewhere.
norace() {
  echo "== .: the allocation guards without -race (started at +$(( $(date +%s) - start ))s)"
  go test -json -count=1 -run 'Allocat' ./client ./statuspage 2>&1 | "$sum/testsum" -module ". (allocations, no -race)"
}
(
  status=0
  norace || status=1
  for mod in "${modules[@]:1}"; do
    run "$mod" || status=1
  done
  exit $status
) &
sidepid=$!

# A line every 30 s while the packages that wait on real time are quiet.
( while sleep 30 </dev/null >/dev/null 2>&1; do echo "   … $(( $(date +%s) - start ))s, still running"; done ) &
beat=$!

status=0
run . || status=1
wait "$sidepid" || status=1
kill "$beat" 2>/dev/null || true
if [ $status = 0 ]; then
  echo "== all ${#modules[@]} modules passed in $(( $(date +%s) - start ))s"
else
  echo "== FAILED after $(( $(date +%s) - start ))s: see the FAIL lines above"
fi
exit $status
