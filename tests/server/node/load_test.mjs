// Load test (manual, not part of `make test`): N concurrent streaming chat clients
// against a running `hearth serve` for D seconds. Reports requests, errors, p50/p99
// time-to-first-token and the server's RSS (from /proc, when the pid is given).
// Usage: node load_test.mjs BASE_URL MODEL [clients=32] [seconds=120] [server_pid]
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const [baseUrl, model, clientsArg, secondsArg, pidArg] = process.argv.slice(2);
const clients = Number(clientsArg ?? 32);
const seconds = Number(secondsArg ?? 120);
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: process.env.HEARTH_API_KEY ?? 'none', maxRetries: 0, timeout: 120000 });

const ttft = [];
let requests = 0, errors = 0, tokens = 0;
const errorKinds = {};
let maxRss = 0;
const rss = () => {
  if (!pidArg) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pidArg}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
};
const sampler = setInterval(() => { maxRss = Math.max(maxRss, rss()); }, 1000);
const end = Date.now() + seconds * 1000;
const topics = ['a fox', 'the sea', 'a hearth', 'winter', 'a lighthouse', 'bread', 'a clock', 'rain'];

async function client(i) {
  let turn = 0;
  while (Date.now() < end) {
    const t0 = performance.now();
    let first = null;
    try {
      const stream = await openai.chat.completions.create({
        model, stream: true, max_tokens: 48, temperature: 0.8, seed: i * 1000 + turn,
        messages: [{ role: 'system', content: 'You are a storyteller.' },
                   { role: 'user', content: `Tell a story about ${topics[(i + turn) % topics.length]}.` }],
      });
      for await (const chunk of stream) {
        if (first === null && chunk.choices[0]?.delta?.content) first = performance.now() - t0;
        if (chunk.choices[0]?.delta?.content) tokens++;
      }
      if (first !== null) ttft.push(first);
      requests++;
    } catch (e) {
      errors++;
      const k = String(e.status ?? e.code ?? e.name);
      errorKinds[k] = (errorKinds[k] ?? 0) + 1;
    }
    turn++;
  }
}

const startRss = rss();
const t0 = Date.now();
await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
clearInterval(sampler);
maxRss = Math.max(maxRss, rss());
const wall = (Date.now() - t0) / 1000;
ttft.sort((a, b) => a - b);
const pct = (p) => (ttft.length ? ttft[Math.min(ttft.length - 1, Math.floor((p / 100) * ttft.length))].toFixed(1) : 'n/a');
console.log(JSON.stringify({
  clients, seconds: wall, requests, errors, errorKinds, fragments: tokens,
  fragments_per_s: +(tokens / wall).toFixed(1),
  ttft_ms: { p50: pct(50), p99: pct(99), max: ttft.length ? ttft[ttft.length - 1].toFixed(1) : 'n/a' },
  rss_mb: { start: +(startRss / 2 ** 20).toFixed(1), max: +(maxRss / 2 ** 20).toFixed(1), end: +(rss() / 2 ** 20).toFixed(1) },
}, null, 1));
