#!/usr/bin/env python3
"""Cross-node warm TTFT vs cold (issue #24 item 6; docs/scale-out.md). Standard library only.

Starts a redis-server (free port, temporary directory), two `hearth serve` nodes on MODEL
sharing it (--redis), and HAProxy on deploy/haproxy.cfg (ports rewritten). Each round:
turn 1 of a fresh conversation (TOKENS random token ids) goes through HAProxy with an
X-Session-Id and lands on node A; then turn 2 (the same ids plus 16 more) is sent to the
OTHER node B twice: warm first (its cache may use the row A published to Redis), then
cold (`cache_prompt: false`, which reads no cache). TTFT is the time to the first
streamed token as the client sees it. Prints one JSON object: medians, their ratio, the
cache hit kinds B reported, and the load average.

  scripts/scale-out-ttft.py --model /work/benchm/tl-q4_0.gguf [--tokens 2048] [--rounds 3]

--no-redis runs the same nodes without the shared tier and sends the warm turn 2 to
node A itself (same-node warm vs cold): a check of this script on a build without the
remote tier.
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout_s, what):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise SystemExit(f"scale-out-ttft: timed out waiting for {what}")


def redis_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def rewrite_ports(cfg, ports):
    """deploy/haproxy.cfg's ports -> ours; server lines of nodes not started are dropped."""
    out = []
    for line in cfg.splitlines():
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            if port not in ports:
                if line.strip().startswith("server "):
                    continue
            else:
                line = line[: m.start(1)] + str(ports[port]) + line[m.end(1):]
        out.append(line)
    return "\n".join(out) + "\n"


def post(port, body, headers=None, stream=False):
    """Returns (ttft_ms, node, usage): the first streamed token's time, or the whole reply's."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    if stream:
        body = dict(body, stream=True, stream_options={"include_usage": True})
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), h)
    reply = conn.getresponse()
    if reply.status != 200:
        raise SystemExit(f"scale-out-ttft: {reply.status}: {reply.read()[:300]!r}")
    node = reply.getheader("X-Hearth-Node")
    if not stream:
        data = json.loads(reply.read())
        return (time.perf_counter() - t0) * 1000.0, node, data["usage"]
    ttft, usage = None, None
    for raw in reply:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if ttft is None and chunk.get("choices") and chunk["choices"][0].get("text"):
            ttft = (time.perf_counter() - t0) * 1000.0
        if chunk.get("usage"):
            usage = chunk["usage"]
    conn.close()
    return ttft, node, usage


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hearth", default=os.path.join(ROOT, "build", "hearth"))
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="engine threads per node")
    ap.add_argument("--id-max", type=int, default=30000, help="prompt token ids are < this")
    ap.add_argument("--no-redis", action="store_true")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="hearth-scale-out-ttft.")
    procs = []
    try:
        redis_url = None
        if not args.no_redis:
            rport = free_port()
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--dir", work,
                 "--save", "", "--appendonly", "no", "--maxmemory", "2gb",
                 "--maxmemory-policy", "allkeys-lru"],
                stdout=open(os.path.join(work, "redis.log"), "w"), stderr=subprocess.STDOUT))
            wait_for(lambda: redis_ping(rport), 20, "redis-server")
            redis_url = f"redis://127.0.0.1:{rport}/0"
        nodes = []
        for i in (1, 2):
            cfg = os.path.join(work, f"node{i}.toml")
            with open(cfg, "w") as f:
                f.write(f'[[models]]\nid = "m"\npath = "{args.model}"\n'
                        f"context = {args.tokens + 64}\nn_seq_max = 2\nthreads = {args.threads}\n")
            cmd = [args.hearth, "serve", "--port", "0", "--config", cfg, "--node-id", f"node{i}",
                   "-q"] + (["--redis", redis_url] if redis_url else [])
            out = open(os.path.join(work, f"node{i}.out"), "w+")
            procs.append(subprocess.Popen(cmd, stdout=out,
                                          stderr=open(os.path.join(work, f"node{i}.log"), "w")))

            def listening(out=out):
                out.seek(0)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", out.read())
                if m:
                    nodes.append(int(m.group(1)))
                return m is not None
            wait_for(listening, 300, f"node{i}")
        front, stats = free_port(), free_port()
        with open(os.path.join(ROOT, "deploy", "haproxy.cfg")) as f:
            cfg = rewrite_ports(f.read(), {8080: front, 8404: stats, 8081: nodes[0], 8082: nodes[1]})
        with open(os.path.join(work, "haproxy.cfg"), "w") as f:
            f.write(cfg)
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        procs.append(subprocess.Popen([haproxy, "-db", "-f", os.path.join(work, "haproxy.cfg")],
                                      stdout=open(os.path.join(work, "haproxy.log"), "w"),
                                      stderr=subprocess.STDOUT))
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", front)) == 0, 20, "haproxy")

        name_to_port = {"node1": nodes[0], "node2": nodes[1]}
        cold, warm, hits = [], [], []
        for r in range(args.rounds):
            rng = random.Random(1000 + r)
            ids = [rng.randrange(100, args.id_max) for _ in range(args.tokens)]
            turn2 = ids + [rng.randrange(100, args.id_max) for _ in range(16)]
            _, node_a, _ = post(front, {"model": "m", "prompt": ids, "max_tokens": 1,
                                        "temperature": 0}, {"X-Session-Id": f"ttft-{r}"})
            time.sleep(2)  # let A's finish save reach its tiers (and Redis)
            b = name_to_port[node_a] if args.no_redis else \
                [p for n, p in name_to_port.items() if n != node_a][0]
            body = {"model": "m", "prompt": turn2, "max_tokens": 2, "temperature": 0}
            # Warm first: a cold run first would leave turn 2's cells resident on B, and
            # the warm run would hit them (`sticky`) instead of the shared tier.
            for kind in ("warm", "cold"):
                extra = {"cache_prompt": False} if kind == "cold" else {}
                ttft, _, usage = post(b, dict(body, **extra), stream=True)
                (cold if kind == "cold" else warm).append(ttft)
                if kind == "warm":
                    hits.append({"cache_hit": usage.get("hearth", {}).get("cache_hit"),
                                 "cached_tokens":
                                     usage.get("prompt_tokens_details", {}).get("cached_tokens")})
        result = {
            "model": os.path.basename(args.model), "tokens": args.tokens, "rounds": args.rounds,
            "mode": "same-node (no redis)" if args.no_redis else "cross-node via redis",
            "cold_ttft_ms": round(statistics.median(cold), 1),
            "warm_ttft_ms": round(statistics.median(warm), 1),
            "cold_over_warm": round(statistics.median(cold) / statistics.median(warm), 2),
            "cold_all_ms": [round(x, 1) for x in cold], "warm_all_ms": [round(x, 1) for x in warm],
            "warm_hits": hits, "loadavg": os.getloadavg(),
        }
        print(json.dumps(result))
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
