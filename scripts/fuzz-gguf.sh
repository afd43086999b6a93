#!/usr/bin/env bash
# Runs the libFuzzer GGUF target for a while on a corpus seeded with the small .gguf
# files of ../shared/models (under 4 MiB each: big files only slow every mutation).
# Usage: scripts/fuzz-gguf.sh FUZZER SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
fuzzer=${1:?fuzzer binary}
seconds=${2:-60}
shared=${HEARTH_SHARED_DIR:-../shared}
corpus=build-fuzz/corpus
crashes=build-fuzz/crashes
mkdir -p "$corpus" "$crashes"
if [ -d "$shared/models" ]; then
  find "$shared/models" -name '*.gguf' -size -4M -exec cp -n {} "$corpus"/ \;
else
  echo "fuzz-gguf: $shared/models absent; starting from an empty corpus"
fi
echo "fuzz-gguf: $(ls "$corpus" | wc -l) corpus files, ${seconds}s"
"$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$crashes/" "$corpus"
