#!/usr/bin/env python3
"""Compares hearth's /v1/embeddings with llama.cpp's (the lc-embed driver built beside the
project, /work/llama.cpp/READY) on one bert GGUF, for mean and cls pooling, unnormalised.

Usage: scripts/embed-agreement.py MODEL.gguf [HEARTH] [LC_EMBED]
  e.g. build/hearth gen-model --arch bert --preset bge-small --type f16 --seed 7 \\
         --vocab-from ../shared/models/vocab/ggml-vocab-bert-bge.gguf --out /tmp/bge-small-rand.gguf
       scripts/embed-agreement.py /tmp/bge-small-rand.gguf
Prints, per pooling, the largest absolute difference and the smallest cosine over the
inputs, and whether both tokenized every input alike.
"""
import json
import math
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, y'all! How are you?",
    "embeddings agree",
    "Äpfel und Birnen: 3,5 kg für 12 €",
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def main():
    model = sys.argv[1]
    hearth = sys.argv[2] if len(sys.argv) > 2 else "build/hearth"
    lc = sys.argv[3] if len(sys.argv) > 3 else "/work/llama.cpp/build/lc-embed"
    port = free_port()
    srv = subprocess.Popen([hearth, "serve", "-m", "bert=" + model, "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        for pooling in ("mean", "cls"):
            reply = post(port, {"model": "bert", "input": TEXTS, "pooling": pooling,
                                "embd_normalize": -1})
            ours = [d["embedding"] for d in reply["data"]]
            with tempfile.NamedTemporaryFile(suffix=".bin") as out:
                cmd = [lc, "-m", model, "--pooling", pooling, "--normalize", "-1",
                       "--out", out.name, "-t", "2"]
                for t in TEXTS:
                    cmd += ["--text", t]
                meta = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                 text=True).stdout)
                raw = open(out.name, "rb").read()
            n = meta["n_embd"]
            theirs = [list(struct.unpack_from(f"<{n}f", raw, 4 * n * i)) for i in range(len(TEXTS))]
            max_diff, min_cos = 0.0, 1.0
            for a, b in zip(ours, theirs):
                max_diff = max(max_diff, max(abs(x - y) for x, y in zip(a, b)))
                dot = sum(x * y for x, y in zip(a, b))
                na = math.sqrt(sum(x * x for x in a))
                nb = math.sqrt(sum(y * y for y in b))
                min_cos = min(min_cos, dot / (na * nb))
            print(json.dumps({"pooling": pooling, "inputs": len(TEXTS), "n_embd": n,
                              "max_abs_diff": max_diff, "min_cosine": min_cos,
                              "prompt_tokens_hearth": reply["usage"]["prompt_tokens"],
                              "prompt_tokens_llama_cpp": sum(len(t) for t in meta["tokens"])}))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    sys.exit(main())
