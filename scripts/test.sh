#!/usr/bin/env bash
# The test command: installs what is missing (scripts/setup.sh, idempotent), then typecheck,
# lint, formatting (Prettier), unused files/exports/dependencies (knip), import cycles (madge),
# the package dependency rules (dependency-cruiser) and every jest suite. Ends with one plain line `N passed, N failed`
# read from jest's --json result.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p .test-artifacts
# The container tests' image, built while the static checks run; the test's own build.sh call
# waits for this one and finds its layers cached (scripts/containers/build.sh).
if [ $# -eq 0 ] && command -v podman >/dev/null 2>&1; then
  bash scripts/containers/build.sh >.test-artifacts/image-build.log 2>&1 &
fi
export NODE_OPTIONS=--experimental-vm-modules NODE_NO_WARNINGS=1

# The static checks in two lanes (one per core), each into its own log; the first failing one, in
# this order, is reported with its output.
checks=(typecheck lint format:check knip cycles deps)
declare -A why=(
  [typecheck]="typecheck failed"
  [lint]="lint failed"
  [format:check]="formatting differs from Prettier's (pnpm format fixes it)"
  [knip]="knip found unused files, exports or dependencies"
  [cycles]="import cycles found"
  [deps]="package dependency rules broken (docs/architecture.md)"
)
check() { pnpm run -s "$1" >".test-artifacts/check-${1/:/-}.log" 2>&1 || touch ".test-artifacts/check-${1/:/-}.failed"; }
rm -f .test-artifacts/check-*
(check typecheck; check knip; check deps) &
lane1=$!
(check lint; check format:check; check cycles) &
lane2=$!
wait "$lane1" "$lane2"
for c in "${checks[@]}"; do
  if [ -f ".test-artifacts/check-${c/:/-}.failed" ]; then
    cat ".test-artifacts/check-${c/:/-}.log"
    echo "${why[$c]}"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

rm -f .test-artifacts/jest.json
pnpm exec jest --json --outputFile=.test-artifacts/jest.json "$@"
status=$?
if [ -f .test-artifacts/jest.json ]; then
  node -e '
    const r = JSON.parse(require("fs").readFileSync(".test-artifacts/jest.json", "utf8"));
    const failedSuites = r.numRuntimeErrorTestSuites || 0;
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests + failedSuites} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
  '
else
  echo "0 passed, 1 failed"
fi
exit $status
