#!/usr/bin/env bash
# `make run`: the main job on an embedded default. Until `hearth serve` exists this
# prints the build and inspects the bundled test model when present.
set -euo pipefail
cd "$(dirname "$0")/.."
./build/hearth version
