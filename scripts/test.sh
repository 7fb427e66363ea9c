#!/usr/bin/env bash
# Runs the whole test suite: go vet and go test -race for the SDK module and for each side
# module (interop/, bench/, queue/asynq/, queue/river/, state/redis/) that has its own go.mod.
# The queue/asynq and state/redis tests start a redis-server of their own (apt-get install -y
# redis-server), the queue/river tests a PostgreSQL server (apt-get install -y postgresql);
# without them they are skipped, except under CI=true. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

run() {
  local dir=$1
  echo "== $dir: go vet"
  (cd "$dir" && go vet ./...)
  echo "== $dir: go test -race"
  (cd "$dir" && go test -race -count=1 ./...)
}

# The aimock second-opinion tests in interop/ need the pinned npm package; install it once.
if command -v node >/dev/null && [ ! -d interop/aimock/node_modules/@copilotkit/aimock ]; then
  echo "== npm ci --prefix interop/aimock"
  npm ci --prefix interop/aimock --no-audit --no-fund
fi

run .
for mod in interop bench queue/asynq queue/river state/redis; do
  if [ -f "$mod/go.mod" ]; then
    run "$mod"
  fi
done
