// Keep-alive latency through the official openai SDK, for scripts/latency.sh (issue #22
// item 1): requests one after another from one client (the SDK keeps its connection
// alive), per kind a JSON line with p50/p99/max milliseconds. A failed request fails the run.
// Usage: node latency_sdk.mjs URL REQUESTS
import OpenAI from "openai";

const [url, n] = [process.argv[2], Number(process.argv[3] || 200)];
const client = new OpenAI({ baseURL: url + "/v1", apiKey: "unused", maxRetries: 0 });

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const r3 = (x) => Math.round(x * 1000) / 1000;

async function measure(call, count) {
  const times = [];
  let cached = 0;
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const reply = await call();
    times.push(performance.now() - t0);
    cached += (reply.usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0 ? 1 : 0;
  }
  times.sort((a, b) => a - b);
  return { p50_ms: r3(pct(times, 50)), p99_ms: r3(pct(times, 99)), max_ms: r3(times.at(-1)),
           requests: count, with_cached_tokens: cached };
}

const completion = () =>
  client.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 1 });
const chat = () =>
  client.chat.completions.create({
    model: "m", max_tokens: 1, temperature: 0,
    messages: [{ role: "user",
                 content: "Tell me a story about a cat and a dog who lived in a small house by the sea." }],
  });

await measure(completion, 5);  // warm-up: the connection, the first run
console.log(JSON.stringify({ kind: "openai SDK: completion, 1 token", ...(await measure(completion, n)) }));
await measure(chat, 2);  // the first one saves the row
console.log(JSON.stringify({ kind: "openai SDK: chat, exact cache hit, 1 token", ...(await measure(chat, n)) }));
