#!/usr/bin/env bash
# Fetches Chart.js (the charting library report.html inlines) from npm into the ignored cache
# .cache/npm/ — library code is never committed to the repository. Idempotent; prints the path
# of the UMD build. Exits 1 (with a message) when npm or the registry is unavailable: reports
# then have tables but no charts, and the headless-browser test skips.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${TESSERA_CHARTJS_VERSION:-4.4.7}"
dest=.cache/npm
file="$dest/node_modules/chart.js/dist/chart.umd.js"
if [ -s "$file" ] && grep -q "\"version\": \"$version\"" "$dest/node_modules/chart.js/package.json" 2>/dev/null; then
  echo "$PWD/$file"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "fetch-chartjs: npm not found; install Node.js/npm to get charts in report.html" >&2
  exit 1
fi
mkdir -p "$dest"
if ! npm install --prefix "$dest" --no-save --no-audit --no-fund --loglevel=error \
    "chart.js@$version" >&2; then
  echo "fetch-chartjs: npm install chart.js@$version failed (offline?)" >&2
  exit 1
fi
echo "$PWD/$file"
