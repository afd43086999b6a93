#!/usr/bin/env python3
"""Driver for scripts/attack-test.sh (issue #19): a streaming chat load, a /health
prober and, optionally, slowloris and idle connections held against one `hearth serve`
on loopback. Prints one JSON line. Standard library only; every loop ends at its
deadline and every socket has a timeout."""
import http.client
import json
import socket
import sys
import threading
import time

host, port, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seconds, streams = float(sys.argv[4]), int(sys.argv[5])
slowloris, idle = int(sys.argv[6]), int(sys.argv[7])
deadline = time.monotonic() + seconds
lock = threading.Lock()
stats = {"completions": 0, "tokens_chunks": 0, "load_errors": 0, "health_ms": [],
         "health_errors": 0, "attack_reconnects": 0}


def load_client():
    body = json.dumps({"model": model, "stream": True, "max_tokens": 64, "temperature": 0.8,
                       "messages": [{"role": "user", "content": "Tell me a story."}]})
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection(host, port, timeout=30)
            c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            chunks = 0
            done = False
            for line in r:
                if line.startswith(b"data: "):
                    if line.strip() == b"data: [DONE]":
                        done = True
                        break
                    chunks += 1
            c.close()
            with lock:
                if r.status == 200 and done:
                    stats["completions"] += 1
                    stats["tokens_chunks"] += chunks
                else:
                    stats["load_errors"] += 1
        except Exception:
            with lock:
                stats["load_errors"] += 1


def health_prober():
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection(host, port, timeout=5)
            c.request("GET", "/health")
            ok = c.getresponse().status == 200
            c.close()
        except Exception:
            ok = False
        ms = (time.monotonic() - t0) * 1000
        with lock:
            if ok:
                stats["health_ms"].append(ms)
            else:
                stats["health_errors"] += 1
        time.sleep(0.05)


def open_conn(first_bytes):
    s = socket.create_connection((host, port), timeout=2)
    s.setblocking(False)
    if first_bytes:
        s.send(first_bytes)
    return s


def attacker():
    # Slowloris: a request head trickled one byte per connection per second, never
    # finished; idle: connections that send nothing. Each is reopened once the server
    # closes it, so the attack holds its count for the whole run.
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    slow = [None] * slowloris
    quiet = [None] * idle
    while time.monotonic() < deadline:
        for conns, first in ((slow, head), (quiet, b"")):
            for i, s in enumerate(conns):
                try:
                    if s is None:
                        conns[i] = open_conn(first)
                        continue
                    if first:
                        s.send(b"x")
                    else:
                        if s.recv(1, socket.MSG_PEEK) == b"":
                            raise ConnectionError("closed")
                except BlockingIOError:
                    pass
                except Exception:
                    if s is not None:
                        s.close()
                        with lock:
                            stats["attack_reconnects"] += 1
                    conns[i] = None
        time.sleep(1.0)
    for s in slow + quiet:
        if s is not None:
            s.close()


threads = [threading.Thread(target=load_client) for _ in range(streams)]
threads.append(threading.Thread(target=health_prober))
if slowloris or idle:
    threads.append(threading.Thread(target=attacker))
    time.sleep(0)  # the attacker opens its connections while the load starts
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=seconds + 60)
h = sorted(stats["health_ms"])
pct = lambda p: round(h[min(len(h) - 1, int(len(h) * p))], 1) if h else None
print(json.dumps({
    "seconds": seconds, "streams": streams, "slowloris": slowloris, "idle": idle,
    "completions": stats["completions"],
    "completions_per_s": round(stats["completions"] / seconds, 2),
    "load_errors": stats["load_errors"],
    "health_requests": len(h), "health_errors": stats["health_errors"],
    "health_p50_ms": pct(0.50), "health_p99_ms": pct(0.99), "health_max_ms": pct(1.0),
    "attack_reconnects": stats["attack_reconnects"],
}))
