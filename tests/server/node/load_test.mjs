// Load test (manual, not part of `make test`; scripts/load-test.sh runs it): N
// concurrent streaming chat clients against a running `hearth serve` for D seconds.
// Prints one JSON object: requests, errors (by kind, with the first message),
// p50/p99 time to first token, and the server's RSS (from /proc, when its pid is
// given) at start, after the warm-up, at most after the warm-up, and at the end.
// Exits 1 when any request failed or none completed.
// Usage: node load_test.mjs BASE_URL MODEL [clients=32] [seconds=120] [server_pid] [warmup_s=20]
// Soak options (environment):
//   HEARTH_LOAD_CANCEL_EVERY=N      every Nth request of a client aborts its stream after
//                                   the first text chunk (a deliberate cancel, not an error)
//   HEARTH_LOAD_RESTART_EVERY_S=S   every S seconds the model is unloaded and loaded again
//                                   (DELETE + POST /hearth/models; HEARTH_LOAD_MODEL_PATH is
//                                   its path); requests refused while it is away (404/503)
//                                   count as restart refusals, not errors
// After the load the server must be idle again: no active sequence, no pinned cache row.
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const [baseUrl, model, clientsArg, secondsArg, pidArg, warmupArg] = process.argv.slice(2);
const clients = Number(clientsArg ?? 32);
const seconds = Number(secondsArg ?? 120);
const warmup = Math.min(Number(warmupArg ?? 20), seconds);
const openai = new OpenAI({
  baseURL: `${baseUrl}/v1`, apiKey: process.env.HEARTH_API_KEY ?? 'none', maxRetries: 0, timeout: 120000,
});

const cancelEvery = Number(process.env.HEARTH_LOAD_CANCEL_EVERY ?? 0);
const restartEvery = Number(process.env.HEARTH_LOAD_RESTART_EVERY_S ?? 0);
const modelPath = process.env.HEARTH_LOAD_MODEL_PATH ?? '';
const headers = { 'content-type': 'application/json',
                  authorization: `Bearer ${process.env.HEARTH_API_KEY ?? 'none'}` };
const ttft = [];
let requests = 0, errors = 0, fragments = 0, cancels = 0, restarts = 0, restartRefusals = 0;
let restarting = false, lastRestartEnd = 0;
// A request that fails because the model was unloaded under it (an in-flight stream is
// ended with "unavailable"; a new one gets 404/503 until the reload): not an error.
const restartCasualty = (e) => restarting || (Date.now() - lastRestartEnd < 5000 &&
  ([404, 503].includes(e.status) || /unavailable|unloading|not found/i.test(String(e.code ?? e.message))));
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
    const cancel = cancelEvery > 0 && turn % cancelEvery === cancelEvery - 1;
    const abort = new AbortController();
    try {
      const stream = await openai.chat.completions.create({
        model, stream: true, max_tokens: 48, temperature: 0.8, seed: i * 1000 + turn,
        messages: [{ role: 'system', content: 'You are a storyteller.' },
                   { role: 'user', content: `Tell a story about ${topics[(i + turn) % topics.length]}.` }],
      }, { signal: abort.signal });
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta?.content;
        if (!text) continue;
        if (first === null) first = performance.now() - start;
        fragments++;
        if (cancel) {
          abort.abort();
          break;
        }
      }
      if (first !== null) ttft.push(first);
      if (cancel) cancels++; else requests++;
    } catch (e) {
      if (cancel && abort.signal.aborted) {
        cancels++;
        turn++;
        continue;
      }
      if (restartCasualty(e)) {
        restartRefusals++;
        await new Promise((r) => setTimeout(r, 50));
        turn++;
        continue;
      }
      errors++;
      const k = String(e.status ?? e.code ?? e.name);
      errorKinds[k] = (errorKinds[k] ?? 0) + 1;
      firstError ??= String(e.message ?? e).slice(0, 300);
    }
    turn++;
  }
}

// Unloads and reloads the model every restartEvery seconds while the clients run.
async function restarter() {
  if (restartEvery <= 0) return;
  while (Date.now() + restartEvery * 1000 < end) {
    await new Promise((r) => setTimeout(r, restartEvery * 1000));
    restarting = true;
    restarts++;
    try {
      const del = await fetch(`${baseUrl}/hearth/models/${model}`, { method: 'DELETE', headers });
      if (!del.ok) throw new Error(`unload: ${del.status} ${await del.text()}`);
      const add = await fetch(`${baseUrl}/hearth/models`, {
        method: 'POST', headers, body: JSON.stringify({ id: model, path: modelPath }) });
      if (add.status !== 201) throw new Error(`reload: ${add.status} ${await add.text()}`);
    } catch (e) {
      errors++;
      errorKinds.restart = (errorKinds.restart ?? 0) + 1;
      firstError ??= String(e.message ?? e).slice(0, 300);
    }
    restarting = false;
    lastRestartEnd = Date.now();
  }
}

await Promise.all([restarter(), ...Array.from({ length: clients }, (_, i) => client(i))]);
clearInterval(sampler);

// Idle again: every sequence freed and no cache row pinned by a leaked lease (bounded
// wait: a cancelled stream is freed within a scheduler tick).
let idle = null;
for (let tries = 0; tries < 100 && idle === null; tries++) {
  try {
    const models = await (await fetch(`${baseUrl}/hearth/models`, { headers })).json();
    const rows = await (await fetch(`${baseUrl}/hearth/cache/rows`, { headers })).json();
    const active = models.models.reduce((n, m) => n + (m.active_sequences ?? 0), 0);
    const pinned = rows.rows.reduce((n, r) => n + (r.refcount ?? 0), 0);
    if (active === 0 && pinned === 0) idle = { active_sequences: 0, pinned_rows: 0 };
    else if (tries === 99) idle = { active_sequences: active, pinned_rows: pinned, leaked: true };
  } catch (e) {
    if (tries === 99) idle = { error: String(e.message ?? e) };
  }
  if (idle === null) await new Promise((r) => setTimeout(r, 100));
}
const endRss = rss();
const wall = (Date.now() - t0) / 1000;
ttft.sort((a, b) => a - b);
const pct = (p) => (ttft.length ? +ttft[Math.min(ttft.length - 1, Math.floor((p / 100) * ttft.length))].toFixed(1) : null);
const mb = (b) => +(b / 2 ** 20).toFixed(1);
console.log(JSON.stringify({
  clients, seconds: wall, warmup_s: warmup, requests, errors, errorKinds, firstError, fragments,
  cancels, restarts, restart_refusals: restartRefusals, idle,
  fragments_per_s: +(fragments / wall).toFixed(1),
  ttft_ms: { p50: pct(50), p99: pct(99), max: ttft.length ? +ttft[ttft.length - 1].toFixed(1) : null },
  rss_mb: { start: mb(startRss), after_warmup: mb(warmRss ?? endRss),
            max_after_warmup: mb(Math.max(maxRssAfterWarmup, endRss)), end: mb(endRss) },
}, null, 1));
const idleOk = idle && !idle.leaked && !idle.error;
process.exit(errors === 0 && requests > 0 && idleOk ? 0 : 1);
