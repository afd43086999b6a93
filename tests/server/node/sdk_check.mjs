// Drives a running `hearth serve` with the official OpenAI and Anthropic SDKs.
// Usage: node sdk_check.mjs BASE_URL API_KEY MODEL
// Prints one line per check and exits non-zero on the first failure.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';

const [baseUrl, apiKey, model] = process.argv.slice(2);
const version = (pkg) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
console.log(`node ${process.version}, openai ${version('openai')}, @anthropic-ai/sdk ${version('@anthropic-ai/sdk')}`);
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 30000 });
const anthropic = new Anthropic({ baseURL: baseUrl, apiKey, maxRetries: 0, timeout: 30000 });

function check(cond, what, detail) {
  if (!cond) {
    console.log(`FAIL ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Tell me a short story about a fox and a hearth.' },
];

// Models.
const models = await openai.models.list();
check(models.data.some((m) => m.id === model), 'openai models.list has the model', models.data);

// Non-streaming chat.
const first = await openai.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
const reply = first.choices[0].message.content;
check(typeof reply === 'string' && first.choices[0].message.role === 'assistant', 'chat non-streaming', first);
check(first.usage.completion_tokens > 0 && first.usage.prompt_tokens > 0, 'chat usage', first.usage);

// Streaming chat: same greedy text, usage chunk at the end.
const stream = await openai.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let streamed = '';
let streamUsage = null;
let finish = null;
for await (const chunk of stream) {
  if (chunk.choices.length > 0) {
    streamed += chunk.choices[0].delta?.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  if (chunk.usage) streamUsage = chunk.usage;
}
check(streamed === reply, 'streaming text equals non-streaming greedy text', { streamed, reply });
check(finish === 'length' || finish === 'stop', 'streaming finish_reason', finish);
check(streamUsage && streamUsage.completion_tokens > 0, 'streaming usage chunk', streamUsage);

// Second turn: the shared prefix comes from the cache.
const second = await openai.chat.completions.create({
  model,
  messages: [...messages, { role: 'assistant', content: reply }, { role: 'user', content: 'And then?' }],
  max_tokens: 8,
  temperature: 0,
});
const cached = second.usage.prompt_tokens_details?.cached_tokens ?? 0;
check(cached > 0, 'second turn reports cached_tokens > 0', second.usage);

// Completions.
const comp = await openai.completions.create({ model, prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
check(typeof comp.choices[0].text === 'string' && comp.usage.completion_tokens > 0, 'completions', comp);

// Embeddings (the SDK asks for base64 and decodes it).
const emb = await openai.embeddings.create({ model, input: ['hello world', 'fox'] });
check(emb.data.length === 2 && emb.data[0].embedding.length > 0 &&
      emb.data[0].embedding.every((x) => Number.isFinite(x)), 'embeddings', emb.data.map((d) => d.embedding.length));

// Bad requests surface as typed SDK errors.
try {
  await openai.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 4 });
  check(false, 'unknown model rejected', 'no error');
} catch (e) {
  check(e.status === 404 && /no-such-model/.test(e.message), 'unknown model -> 404 naming it', e.message);
}

// Anthropic non-streaming.
const amsg = await anthropic.messages.create({
  model, max_tokens: 10, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hi to the fox.' }],
});
check(amsg.type === 'message' && amsg.content[0].type === 'text', 'anthropic messages.create', amsg);
check(typeof amsg.usage.cache_read_input_tokens === 'number', 'anthropic usage.cache_read_input_tokens', amsg.usage);

// Anthropic streaming, same request again: text identical, prompt read from the cache.
const astream = anthropic.messages.stream({
  model, max_tokens: 10, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hi to the fox.' }],
  temperature: 0,
});
let atext = '';
astream.on('text', (t) => { atext += t; });
const afinal = await astream.finalMessage();
check(afinal.content[0].text === atext && atext.length > 0, 'anthropic streaming text', { atext, afinal });
check(afinal.usage.cache_read_input_tokens > 0, 'anthropic repeat reads the cache', afinal.usage);
check(['end_turn', 'max_tokens', 'stop_sequence'].includes(afinal.stop_reason), 'anthropic stop_reason', afinal.stop_reason);

// Auth: a wrong key is refused by both SDKs.
if (apiKey !== 'none') {
  const bad = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'wrong', maxRetries: 0 });
  try {
    await bad.models.list();
    check(false, 'wrong key rejected (openai)', 'no error');
  } catch (e) {
    check(e.status === 401, 'wrong key -> 401 (openai)', e.status);
  }
  const badA = new Anthropic({ baseURL: baseUrl, apiKey: 'wrong', maxRetries: 0 });
  try {
    await badA.messages.create({ model, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] });
    check(false, 'wrong key rejected (anthropic)', 'no error');
  } catch (e) {
    check(e.status === 401, 'wrong key -> 401 (anthropic)', e.status);
  }
}
console.log('ALL OK');
