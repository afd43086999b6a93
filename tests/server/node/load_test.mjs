// Load test (manual, not part of `make test`; scripts/load-test.sh runs it): N
// concurrent streaming chat clients against a running `hearth serve` for D seconds.
// Prints one JSON object: requests, errors (by kind, with the first message),
// p50/p99 time to first token, and the server's RSS (from /proc, when its pid is
// given) at start, after the warm-up, at most after the warm-up, and at the end.
// Exits 1 when any request failed or none completed.
// Usage: node load_test.mjs BASE_URL MODEL [clients=32] [seconds=120] [server_pid] [warmup_s=20]
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const [baseUrl, model, clientsArg, secondsArg, pidArg, warmupArg] = process.argv.slice(2);
const clients = Number(clientsArg ?? 32);
const seconds = Number(secondsArg ?? 120);
const warmup = Math.min(Number(warmupArg ?? 20), seconds);
const openai = new OpenAI({
  baseURL: `${baseUrl}/v1`, apiKey: process.env.HEARTH_API_KEY ?? 'none', maxRetries: 0, timeout: 120000,
});

const ttft = [];
let requests = 0, errors = 0, fragments = 0;
const errorKinds = {};
let firstError = null;
const rss = () => {
  if (!pidArg) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pidArg}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;  // the server is gone: the requests fail and say so
  }
};
const t0 = Date.now();
const startRss = rss();
let warmRss = null, maxRssAfterWarmup = 0;
const sampler = setInterval(() => {
  const r = rss();
  if ((Date.now() - t0) / 1000 >= warmup) {
    if (warmRss === null) warmRss = r;
    maxRssAfterWarmup = Math.max(maxRssAfterWarmup, r);
  }
}, 1000);
const end = t0 + seconds * 1000;
const topics = ['a fox', 'the sea', 'a hearth', 'winter', 'a lighthouse', 'bread', 'a clock', 'rain'];

async function client(i) {
  let turn = 0;
  while (Date.now() < end) {
    const start = performance.now();
    let first = null;
    try {
      const stream = await openai.chat.completions.create({
        model, stream: true, max_tokens: 48, temperature: 0.8, seed: i * 1000 + turn,
        messages: [{ role: 'system', content: 'You are a storyteller.' },
                   { role: 'user', content: `Tell a story about ${topics[(i + turn) % topics.length]}.` }],
      });
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta?.content;
        if (!text) continue;
        if (first === null) first = performance.now() - start;
        fragments++;
      }
      if (first !== null) ttft.push(first);
      requests++;
    } catch (e) {
      errors++;
      const k = String(e.status ?? e.code ?? e.name);
      errorKinds[k] = (errorKinds[k] ?? 0) + 1;
      firstError ??= String(e.message ?? e).slice(0, 300);
    }
    turn++;
  }
}

await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
clearInterval(sampler);
const endRss = rss();
const wall = (Date.now() - t0) / 1000;
ttft.sort((a, b) => a - b);
const pct = (p) => (ttft.length ? +ttft[Math.min(ttft.length - 1, Math.floor((p / 100) * ttft.length))].toFixed(1) : null);
const mb = (b) => +(b / 2 ** 20).toFixed(1);
console.log(JSON.stringify({
  clients, seconds: wall, warmup_s: warmup, requests, errors, errorKinds, firstError, fragments,
  fragments_per_s: +(fragments / wall).toFixed(1),
  ttft_ms: { p50: pct(50), p99: pct(99), max: ttft.length ? +ttft[ttft.length - 1].toFixed(1) : null },
  rss_mb: { start: mb(startRss), after_warmup: mb(warmRss ?? endRss),
            max_after_warmup: mb(Math.max(maxRssAfterWarmup, endRss)), end: mb(endRss) },
}, null, 1));
process.exit(errors === 0 && requests > 0 ? 0 : 1);
