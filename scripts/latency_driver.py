"""Keep-alive latency driver for scripts/latency.sh (standard library only).

Sends requests one after another on one HTTP/1.1 connection and prints, per kind, a
JSON line with p50/p99/max milliseconds. A non-200 reply fails the run.
"""
import http.client
import json
import sys
import time
import urllib.parse


def percentile(sorted_ms, p):
    return sorted_ms[min(len(sorted_ms) - 1, int(p / 100.0 * len(sorted_ms)))]


def measure(conn, path, body, n):
    payload = json.dumps(body)
    times = []
    cached = 0
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("POST", path, payload, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        data = reply.read()
        times.append((time.perf_counter() - t0) * 1000.0)
        if reply.status != 200:
            raise SystemExit(f"latency: {path} answered {reply.status}: {data[:200]!r}")
        usage = json.loads(data).get("usage", {})
        cached += usage.get("prompt_tokens_details", {}).get("cached_tokens", 0) > 0
    times.sort()
    return {"p50_ms": round(percentile(times, 50), 3), "p99_ms": round(percentile(times, 99), 3),
            "max_ms": round(times[-1], 3), "requests": n, "with_cached_tokens": cached}


def main():
    url = urllib.parse.urlparse(sys.argv[1])
    n = int(sys.argv[2])
    conn = http.client.HTTPConnection(url.hostname, url.port)
    completion = {"prompt": "Once upon a time", "max_tokens": 1}
    chat = {"messages": [{"role": "user", "content": "Tell me a story about a cat and a dog "
                          "who lived in a small house by the sea."}], "max_tokens": 1,
            "temperature": 0}
    measure(conn, "/v1/completions", completion, 5)  # warm-up: first connection, first run
    result = measure(conn, "/v1/completions", completion, n)
    print(json.dumps({"kind": "completion, 1 token", **result}))
    measure(conn, "/v1/chat/completions", chat, 2)  # the first one saves the row
    result = measure(conn, "/v1/chat/completions", chat, n)
    print(json.dumps({"kind": "chat, exact cache hit, 1 token", **result}))


if __name__ == "__main__":
    main()
