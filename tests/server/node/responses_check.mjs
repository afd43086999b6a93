// Drives a running `hearth serve` through the official OpenAI SDK's Responses API:
// responses.create whole and streamed (the SDK's stream helper), previous_response_id
// served from the KV cache, a function-call round trip, retrieve and delete.
// Usage: node responses_check.mjs BASE_URL API_KEY MODEL
// The model's chat template must support tools. Prints one line per check and exits
// non-zero on the first failure.
import OpenAI from 'openai';

const [baseUrl, apiKey, model] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 30000 });

function check(cond, what, detail) {
  if (!cond) {
    console.log(`FAIL ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

const input = 'Tell me a short story about a fox and a hearth.';

// Whole reply: the SDK computes output_text from the message items.
const first = await openai.responses.create({
  model, input, instructions: 'You are terse.', max_output_tokens: 12, temperature: 0,
});
check(first.object === 'response' && first.id.startsWith('resp_'), 'responses.create shape', first);
check(typeof first.output_text === 'string' && first.output_text.length > 0, 'output_text', first);
check(first.output[0].type === 'message' && first.output[0].content[0].type === 'output_text',
      'a message item with output_text', first.output);
check(['completed', 'incomplete'].includes(first.status), 'status', first.status);
if (first.status === 'incomplete') {
  check(first.incomplete_details.reason === 'max_output_tokens', 'incomplete_details', first.incomplete_details);
}
check(first.usage.input_tokens > 0 && first.usage.output_tokens > 0 &&
      first.usage.total_tokens === first.usage.input_tokens + first.usage.output_tokens, 'usage', first.usage);

// Streamed through the SDK's helper: same greedy text, typed events, a final response.
const stream = openai.responses.stream({
  model, input, instructions: 'You are terse.', max_output_tokens: 12, temperature: 0,
});
let streamed = '';
const types = [];
stream.on('event', (e) => types.push(e.type));
stream.on('response.output_text.delta', (e) => { streamed += e.delta; });
const final = await stream.finalResponse();
check(streamed === first.output_text, 'streamed text equals the whole reply', { streamed, text: first.output_text });
check(types[0] === 'response.created' && types.includes('response.output_item.added') &&
      types.includes('response.content_part.added') && types.includes('response.output_text.done') &&
      ['response.completed', 'response.incomplete'].includes(types[types.length - 1]),
      'stream event order', types);
// The helper's final response is its snapshot of the events (4.104 replaces it only on
// response.completed; an incomplete reply keeps the accumulated items).
const finalText = final.output.filter((o) => o.type === 'message').map((o) => o.content[0].text).join('');
check(finalText === streamed, 'stream finalResponse message text', final.output);

// previous_response_id: the first turn's prompt and reply come from the cache.
const second = await openai.responses.create({
  model, previous_response_id: first.id, input: 'And then?', instructions: 'You are terse.',
  max_output_tokens: 8, temperature: 0,
});
check(second.previous_response_id === first.id, 'previous_response_id echoed', second.previous_response_id);
check(second.usage.input_tokens_details.cached_tokens > 0 && second.usage.input_tokens > first.usage.input_tokens,
      'chained turn reads the cache', second.usage);

// A function call (a named tool_choice: sampled under the tool-call grammar), its output
// sent back, the next turn.
const tools = [{
  type: 'function', name: 'get_weather', description: 'Weather of a city', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false },
}];
const call = await openai.responses.create({
  model, input: 'Weather in Paris?', tools, tool_choice: { type: 'function', name: 'get_weather' },
  max_output_tokens: 100, temperature: 0,
});
const fc = call.output.find((o) => o.type === 'function_call');
check(fc && fc.name === 'get_weather' && fc.call_id.length > 0, 'function_call item', call.output);
const args = JSON.parse(fc.arguments);
check(typeof args.city === 'string', 'function_call arguments parse', fc.arguments);
const after = await openai.responses.create({
  model, previous_response_id: call.id, tools,
  input: [{ type: 'function_call_output', call_id: fc.call_id, output: JSON.stringify({ sky: 'sunny' }) }],
  max_output_tokens: 8, temperature: 0,
});
check(after.output.length > 0 && after.usage.input_tokens > call.usage.input_tokens,
      'function_call_output round trip', after.usage);

// Retrieve and delete; a deleted id is a 404 for previous_response_id.
const got = await openai.responses.retrieve(first.id);
check(got.id === first.id && got.output[0].content[0].text === first.output_text, 'responses.retrieve', got);
await openai.responses.del(first.id);
try {
  await openai.responses.create({ model, previous_response_id: first.id, input: 'x', max_output_tokens: 2 });
  check(false, 'deleted response refused', 'no error');
} catch (e) {
  check(e.status === 404 && e.code === 'previous_response_not_found', 'deleted id -> 404 previous_response_not_found',
        { status: e.status, code: e.code, message: e.message });
}

// A refused field surfaces as a typed 400 naming it.
try {
  await openai.responses.create({ model, input: 'x', tools: [{ type: 'web_search_preview' }] });
  check(false, 'web_search tool refused', 'no error');
} catch (e) {
  check(e.status === 400 && e.param === 'tools', 'built-in tool -> 400 naming tools', { status: e.status, param: e.param });
}
console.log('ALL OK');
