#!/usr/bin/env bash
# The floor view's charting library (Chart.js, pinned with its integrity hash in package-lock.json),
# fetched from npm at setup time and copied beside the pages: nothing is fetched at run time, and no
# minified blob is committed. Run by `make install` and `.ci/run`; idempotent.
set -euo pipefail
cd "$(dirname "$0")"
VENDOR=../../craps_streams/floor/static/vendor
if [[ -s $VENDOR/chart.umd.js && ${1:-} != --force ]]; then exit 0; fi
command -v npm >/dev/null 2>&1 || { echo "fetch-assets: npm is needed (Node 20)" >&2; exit 1; }
npm ci --no-audit --no-fund --silent
mkdir -p "$VENDOR"
cp node_modules/chart.js/dist/chart.umd.js "$VENDOR/chart.umd.js"
cp node_modules/chart.js/LICENSE.md "$VENDOR/chart.js-LICENSE.md"
echo "fetch-assets: chart.js $(node -p "require('./node_modules/chart.js/package.json').version") -> craps_streams/floor/static/vendor/"
