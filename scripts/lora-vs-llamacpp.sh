#!/usr/bin/env bash
# Agreement of hearth's LoRA with llama.cpp's (docs/engine.md "LoRA adapters"): a
# random-weight base from `hearth gen-model`, a random adapter from
# `hearth gen-model --lora-for`, then the logits of the prompt's last position from
# `hearth logits --out` and llama.cpp's `lc-logits` (a driver built beside the project,
# /work/llama.cpp/READY) on the same token ids, without and with the adapter (and at a
# second scale). Prints max / mean abs diff and whether the top-1 agrees.
#
# usage: scripts/lora-vs-llamacpp.sh LC_LOGITS [HEARTH_BIN] [WORKDIR]
set -euo pipefail
LC=${1:?usage: $0 LC_LOGITS [HEARTH_BIN] [WORKDIR]}
HEARTH=${2:-build/hearth}
W=${3:-$(mktemp -d)}
PROMPT="Once upon a time there was a little robot who wanted to learn to paint"
mkdir -p "$W"
rm -f "$W/base.bin"
"$HEARTH" gen-model --preset small --type f32 --seed 1 --out "$W/base.gguf" -q
"$HEARTH" gen-model --lora-for "$W/base.gguf" --rank 8 --alpha 16 --seed 2 --out "$W/lora.gguf"
"$HEARTH" gen-model --lora-for "$W/base.gguf" --rank 8 --alpha 16 --seed 2 --type f16 \
  --out "$W/lora16.gguf"
compare() {  # name, hearth --lora args, lc-logits --lora args
  local name=$1 hl=$2 ll=$3
  local toks
  toks=$("$HEARTH" logits -m "$W/base.gguf" -p "$PROMPT" -n 1 $hl --out "$W/h.bin" 2>/dev/null |
    awk '/^prompt_tokens/ {for (i = 3; i <= NF; i++) printf "%s%s", (i > 3 ? "," : ""), $i}')
  "$LC" -m "$W/base.gguf" --tokens "$toks" --out "$W/l.bin" $ll > /dev/null
  [ -f "$W/base.bin" ] || cp "$W/h.bin" "$W/base.bin"
  python3 - "$name" "$W/h.bin" "$W/l.bin" "$W/base.bin" <<'PY'
import struct, sys
name, h, l, base = sys.argv[1:5]
a = open(h, "rb").read(); b = open(l, "rb").read(); c = open(base, "rb").read()
n = len(a) // 4
x = struct.unpack("<%df" % n, a); y = struct.unpack("<%df" % n, b[:len(a)])
z = struct.unpack("<%df" % n, c)
d = [abs(p - q) for p, q in zip(x, y)]
effect = max(abs(p - q) for p, q in zip(x, z))
top = lambda v: max(range(len(v)), key=lambda i: v[i])
print("%-20s n_vocab %d  adapter effect max %.3g  vs llama.cpp: max_abs_diff %.3g  "
      "mean_abs_diff %.3g  top1 %d / %d %s"
      % (name, n, effect, max(d), sum(d) / n, top(x), top(y),
         "agree" if top(x) == top(y) else "DIFFER"))
PY
}
compare "base" "" ""
compare "lora f32 scale 1" "--lora $W/lora.gguf" "--lora $W/lora.gguf"
compare "lora f32 scale 0.5" "--lora $W/lora.gguf:0.5" "--lora $W/lora.gguf --lora-scale 0.5"
compare "lora f16 scale 1" "--lora $W/lora16.gguf" "--lora $W/lora16.gguf"
compare "two adapters" "--lora $W/lora.gguf:0.5 --lora $W/lora16.gguf:0.25" \
  "--lora $W/lora.gguf --lora-scale 0.5 --lora $W/lora16.gguf --lora-scale 0.25"
