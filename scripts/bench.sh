#!/usr/bin/env bash
# `make bench`: the benchmark suite. Prints JSON figures per subsystem.
set -euo pipefail
cd "$(dirname "$0")/.."
./build/hearth version
