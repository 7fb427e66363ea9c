#!/usr/bin/env bash
# Runs the whole test suite: every go vet analyzer and go test -race for the SDK module and for each side
# module (interop/, bench/, queue/asynq/, queue/river/, state/redis/) that has its own go.mod.
# The queue/asynq and state/redis tests start a redis-server of their own (apt-get install -y
# redis-server), the queue/river tests a PostgreSQL server (apt-get install -y postgresql);
# without them they are skipped, except under CI=true. The status page's browser test (statuspage)
# drives a headless Chromium (apt-get install -y chromium), skipped without one except under
# CI=true. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# go test's -vet=all runs every go vet analyzer on every package, test files included, as
# `go vet ./...` does, but over the build the race-enabled tests make anyway: a first run
# compiles everything once instead of twice.
run() {
  local dir=$1
  echo "== $dir: go test -race -vet=all"
  (cd "$dir" && go test -race -vet=all -count=1 ./...)
}

# The aimock second-opinion tests in interop/ need the pinned npm package; install it once.
if command -v node >/dev/null && [ ! -d interop/aimock/node_modules/@copilotkit/aimock ]; then
  echo "== npm ci --prefix interop/aimock"
  npm ci --prefix interop/aimock --no-audit --no-fund
fi

# The SDK module runs in the foreground; the side modules run one after another beside it, so
# that their compiling overlaps the SDK's tests that wait on real time (timeouts, servers).
# Each side module's output is printed when it is done; any failure fails the command.
side=$(mktemp)
trap 'rm -f "$side"' EXIT
(
  status=0
  for mod in interop bench queue/asynq queue/river state/redis; do
    if [ -f "$mod/go.mod" ]; then
      run "$mod" || status=1
    fi
  done
  exit $status
) >"$side" 2>&1 &
sidepid=$!

status=0
run . || status=1
wait "$sidepid" || status=1
cat "$side"
exit $status
