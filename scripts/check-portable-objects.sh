#!/usr/bin/env bash
# Fails when an object outside the per-ISA kernel files contains AVX-512 code, i.e.
# when a default (portable) build would not run on an x86-64 CPU without AVX-512.
#   check-portable-objects.sh <static library | object | directory of objects>...
#
# Allowed to hold AVX-512 (each only reached after a run-time CPU check):
#   engine/kernels/avx512_*, avx2_*, avxvnni_*: the kernel tables (cpu_features.cpp);
#   cache/crc32c.cpp: its own cpuid dispatch to a VPCLMULQDQ fold (target attributes);
#   common/stream_copy.cpp: its own CPU check picks the AVX-512, AVX2 or SSE2 store loop;
#   cli/bench_bandwidth.cpp: the bench's read loop, per-ISA copies picked after a CPU check.
# AVX-512 is recognised by its registers (zmm, xmm/ymm16-31, mask k0-7) or by an EVEX
# prefix (0x62 as the first opcode byte: AVX-512 forms on xmm/ymm 0-15 name no new
# register), which covers every AVX-512 instruction.
set -euo pipefail

allowed='^(avx512_|avx2_|avxvnni_|crc32c\.|stream_copy\.|bench_bandwidth\.)'
objdump=${OBJDUMP:-objdump}
status=0
checked=0

check() {  # <file> (an archive or an object)
  local report
  report=$("$objdump" -d --no-addresses "$1" 2>/dev/null | awk -F'\t' -v allowed="$allowed" '
    # objdump names each member of an archive: "member.o:     file format elf64-x86-64".
    / file format / { obj = $0; sub(/:[ \t]+file format.*/, "", obj); sub(/.*\//, "", obj);
                      skip = obj ~ allowed; next }
    skip { next }
    NF >= 3 && ($2 ~ /^((26|2e|36|3e|64|65|67) )*62 / || $3 ~ /%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])|%k[0-7]/) {
      if (!(obj in seen)) { seen[obj] = 1; printf "%s: %s\n", obj, $3 }
    }')
  checked=$((checked + 1))
  if [ -n "$report" ]; then
    echo "AVX-512 outside the per-ISA kernel files in $1:"
    echo "$report"
    status=1
  fi
}

for arg in "$@"; do
  if [ -d "$arg" ]; then
    while IFS= read -r f; do check "$f"; done < <(find "$arg" -name '*.o' | sort)
  else
    check "$arg"
  fi
done
if [ "$checked" -eq 0 ]; then
  echo "check-portable-objects: nothing to check" >&2
  exit 2
fi
[ "$status" -eq 0 ] && echo "check-portable-objects: $checked files, no AVX-512 outside the kernel files"
exit "$status"
