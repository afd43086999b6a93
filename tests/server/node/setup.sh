#!/usr/bin/env bash
# Prepares DEST for the Node tests: copies package.json, package-lock.json and the
# test scripts of SRC there (ESM resolves packages from the script's own directory) and
# installs the pinned packages with `npm ci` unless DEST already holds exactly these.
# SRC defaults to this directory (the official SDKs); tests/server/web (puppeteer-core
# for the browser test) is the other one.
# Used by tests/server/serve_acceptance_test.cpp, web_ui_test.cpp and scripts/load-test.sh.
# Usage: setup.sh DEST [SRC]  Exit status: non-zero when node/npm or the install fail.
set -euo pipefail
src="$(cd "${2:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)"
dest="$1"
command -v node >/dev/null || { echo "setup.sh: node is not installed (make deps)" >&2; exit 3; }
command -v npm >/dev/null || { echo "setup.sh: npm is not installed (make deps)" >&2; exit 3; }
mkdir -p "$dest"
cd "$dest"
# ctest runs tests in parallel: one npm ci at a time per DEST, and nobody copies
# scripts while another test runs them half-installed.
exec 9>.npm-lock
flock 9
cp "$src/package.json" "$src/package-lock.json" "$src"/*.mjs .
# The stamp is both manifests: npm ci also checks that they agree with each other.
if ! cat package.json package-lock.json | cmp -s - node_modules/.hearth-lock 2>/dev/null; then
  timeout 240 npm ci --prefer-offline --no-audit --no-fund --loglevel=error
  cat package.json package-lock.json >node_modules/.hearth-lock
fi
