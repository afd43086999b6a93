#!/usr/bin/env bash
# The soak (manual; not part of `make test`): 32 streaming clients for 30 minutes against
# one `hearth serve`, every 10th request cancelled mid-stream, the model unloaded and
# reloaded every 5 minutes. Passes only with zero errors other than the deliberate
# cancels and the refusals while the model is away, RSS growth after the warm-up within
# HEARTH_LOAD_MAX_RSS_GROWTH_PCT, the server idle at the end (no active sequence, no
# pinned cache row) and a clean SIGTERM exit. scripts/load-test.sh does the work.
# Usage: scripts/soak.sh [seconds=1800] [clients=32]
set -euo pipefail
cd "$(dirname "$0")/.."
export HEARTH_LOAD_CANCEL_EVERY=${HEARTH_LOAD_CANCEL_EVERY:-10}
export HEARTH_LOAD_RESTART_EVERY_S=${HEARTH_LOAD_RESTART_EVERY_S:-300}
export HEARTH_LOAD_WARMUP_S=${HEARTH_LOAD_WARMUP_S:-120}
exec bash scripts/load-test.sh "${1:-1800}" "${2:-32}"
