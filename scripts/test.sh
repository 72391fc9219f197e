#!/usr/bin/env bash
# The test command: installs what is missing (scripts/setup.sh, idempotent), then typecheck,
# lint, formatting (Prettier), unused files/exports/dependencies (knip), import cycles (madge),
# the package dependency rules (dependency-cruiser) and every jest suite. Ends with one plain line `N passed, N failed`
# read from jest's --json result.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p .test-artifacts
export NODE_OPTIONS=--experimental-vm-modules NODE_NO_WARNINGS=1

pnpm run -s typecheck || { echo "typecheck failed"; echo "0 passed, 1 failed"; exit 1; }
pnpm run -s lint || { echo "lint failed"; echo "0 passed, 1 failed"; exit 1; }
pnpm run -s format:check || { echo "formatting differs from Prettier's (pnpm format fixes it)"; echo "0 passed, 1 failed"; exit 1; }
pnpm run -s knip || { echo "knip found unused files, exports or dependencies"; echo "0 passed, 1 failed"; exit 1; }
pnpm run -s cycles || { echo "import cycles found"; echo "0 passed, 1 failed"; exit 1; }
pnpm run -s deps || { echo "package dependency rules broken (docs/architecture.md)"; echo "0 passed, 1 failed"; exit 1; }

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
