#!/usr/bin/env python3
"""hearth's GPU logits against llama.cpp's CUDA backend, teacher-forced on reference cases.

For each case file (../shared/reference format): llama.cpp's CUDA build evaluates the
prompt plus the case's generated tokens in one pass (every position's logits, all layers
on the GPU), hearth evaluates the same case on the GPU (`hearth logits --reference CASE
--device cuda:0 --out F`: the prompt in one batch, then token by token), and the rows of
the 24 steps are compared over the whole vocabulary: max and mean absolute difference and
whether the argmaxes agree, against the CPU's bounds (docs/engine.md: float weights
0.1 / 0.01, quantized 0.25 / 0.06).

  scripts/gpu-agreement.py --lc LC_LOGITS --hearth HEARTH CASE.txt...
LC_LOGITS is llama.cpp's logits driver built with CUDA beside the project (never part of
this repo); it takes -m MODEL --tokens a,b,c --all --out F and --lc-extra (default
"--ngl 99"). With a CPU build of both, --device cpu --lc-extra "" checks the script itself.
"""
import argparse
import array
import json
import os
import subprocess
import sys
import tempfile


def parse_case(path):
    case = {"steps": []}
    with open(path, encoding="utf-8") as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "model":
                case["model_file"] = w[1]
            elif w[0] == "prompt_tokens":
                case["prompt"] = [int(x) for x in w[2:]]
            elif w[0] == "step":
                case["steps"].append(int(w[3]))
    return case


def model_path(case_path, file):
    d = os.path.dirname(os.path.abspath(case_path))
    for p in (os.path.join(d, "models", file), os.path.join(d, "..", "models", file)):
        if os.path.exists(p):
            return p
    return None


def read_rows(path, n_vocab):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return [a[i * n_vocab:(i + 1) * n_vocab] for i in range(len(a) // n_vocab)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lc", required=True)
    ap.add_argument("--hearth", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--lc-extra", default="--ngl 99",
                    help="extra llama.cpp arguments (\"\" with a CPU build, to check the script)")
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cpath in args.cases:
            c = parse_case(cpath)
            model = model_path(cpath, c["model_file"])
            if model is None:
                print(f"{os.path.basename(cpath)}: model {c['model_file']} not found")
                continue
            tokens = c["prompt"] + c["steps"][:-1]
            lc_out, h_out = os.path.join(tmp, "lc.bin"), os.path.join(tmp, "h.bin")
            r = subprocess.run([args.lc, "-m", model, "--tokens", ",".join(map(str, tokens)),
                                "--all", "--out", lc_out] + args.lc_extra.split(),
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{os.path.basename(cpath)}: llama.cpp failed: {r.stderr.strip()[-300:]}")
                failures += 1
                continue
            n_vocab = json.loads(r.stdout.strip().splitlines()[-1])["n_vocab"]
            r = subprocess.run([args.hearth, "logits", "-m", model, "--reference", cpath,
                                "--device", args.device, "--out", h_out],
                               capture_output=True, text=True)
            if r.returncode not in (0, 1):  # 1: the reference check itself failed; compare anyway
                print(f"{os.path.basename(cpath)}: hearth failed: {r.stderr.strip()[-300:]}")
                failures += 1
                continue
            lc_rows = read_rows(lc_out, n_vocab)[len(c["prompt"]) - 1:]
            h_rows = read_rows(h_out, n_vocab)
            n = min(len(lc_rows), len(h_rows), len(c["steps"]))
            max_d, sum_d, count, argmax_miss = 0.0, 0.0, 0, 0
            for i in range(n):
                a, b = lc_rows[i], h_rows[i]
                for x, y in zip(a, b):
                    d = abs(x - y)
                    max_d = max(max_d, d)
                    sum_d += d
                count += len(a)
                if max(range(len(a)), key=a.__getitem__) != max(range(len(b)), key=b.__getitem__):
                    argmax_miss += 1
            quant = not any(t in c["model_file"] for t in ("f16", "bf16", "f32"))
            bound = (0.25, 0.06) if quant else (0.1, 0.01)
            mean_d = sum_d / max(count, 1)
            ok = max_d <= bound[0] and mean_d <= bound[1]
            failures += 0 if ok else 1
            print(f"{os.path.basename(cpath):38s} steps {n:2d} max {max_d:.4f} mean {mean_d:.5f} "
                  f"argmax misses {argmax_miss} bound {bound[0]}/{bound[1]} {'PASS' if ok else 'FAIL'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
