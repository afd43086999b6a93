// Drives a running `hearth serve` (a model whose chat template supports tools) with the
// official OpenAI and Anthropic SDKs' agent flows: tool calls under tool_choice
// required / any (grammar-constrained, so they parse even with random weights), a
// tool-result round trip, strict json_schema structured output through the SDK's zod
// helpers, and streamed tool calls assembled by the SDKs' stream helpers.
// Usage: node sdk_tools_check.mjs BASE_URL API_KEY MODEL
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import Anthropic from '@anthropic-ai/sdk';
import { args, check, person, personJsonSchema, printVersions, run, valid, weatherArgs, weatherJsonSchema } from './client_util.mjs';

const { baseUrl, apiKey, model } = args();
printVersions('openai', '@anthropic-ai/sdk', 'zod');
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
const anthropic = new Anthropic({ baseURL: baseUrl, apiKey, maxRetries: 0, timeout: 60000 });

const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather of a city', parameters: weatherJsonSchema },
};

await run(async () => {
  // ---- OpenAI: a required call, arguments valid against the schema.
  const first = await openai.chat.completions.create({
    model, messages: ask, tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false,
    max_tokens: 120, temperature: 0,
  });
  const msg = first.choices[0].message;
  check(first.choices[0].finish_reason === 'tool_calls', 'openai: finish_reason tool_calls', first.choices[0]);
  check(msg.tool_calls?.length === 1 && msg.tool_calls[0].type === 'function' &&
        msg.tool_calls[0].function.name === 'get_weather' && msg.tool_calls[0].id.length > 0,
        'openai: one get_weather call with an id', msg);
  const callArgs = JSON.parse(msg.tool_calls[0].function.arguments);
  check(valid(weatherArgs, callArgs), 'openai: call arguments validate against the schema', callArgs);

  // The SDK's zod helpers: a strict function tool, arguments parsed by the SDK.
  const parsedCall = await openai.beta.chat.completions.parse({
    model, messages: ask, max_tokens: 120, temperature: 0, parallel_tool_calls: false,
    tools: [zodFunction({ name: 'get_weather', parameters: weatherArgs, description: 'Current weather of a city' })],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const pc = parsedCall.choices[0].message.tool_calls?.[0];
  check(pc?.function.parsed_arguments && valid(weatherArgs, pc.function.parsed_arguments),
        'openai: zodFunction strict tool, a named tool_choice -> parsed_arguments', parsedCall.choices[0]);

  // Round trip: the assistant's call and the tool's result go back; the reply is text.
  const tool = msg.tool_calls[0];
  const history = [
    ...ask,
    { role: 'assistant', content: null, tool_calls: [tool] },
    { role: 'tool', tool_call_id: tool.id, content: JSON.stringify({ temperature: 21, sky: 'clear' }) },
  ];
  const second = await openai.chat.completions.create({
    model, messages: history, tools: [weatherTool], tool_choice: 'none', max_tokens: 6, temperature: 0,
  });
  check(typeof second.choices[0].message.content === 'string' && !second.choices[0].message.tool_calls,
        'openai: tool-result round trip -> a text reply', second.choices[0]);
  check(second.usage.prompt_tokens > first.usage.prompt_tokens + 10,
        'openai: the call and its result are in the second prompt', { first: first.usage, second: second.usage });

  // Strict json_schema through zodResponseFormat: the SDK parses and we validate.
  const structured = await openai.beta.chat.completions.parse({
    model, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 120, temperature: 0,
    response_format: zodResponseFormat(person, 'person'),
  });
  const parsed = structured.choices[0].message.parsed;
  check(structured.choices[0].finish_reason === 'stop' && valid(person, parsed),
        'openai: response_format json_schema (strict) -> parsed, valid', structured.choices[0]);
  // The same schema as a plain create: JSON.parse + validate.
  const plain = await openai.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 120, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personJsonSchema } },
  });
  check(valid(person, JSON.parse(plain.choices[0].message.content)),
        'openai: json_schema content JSON.parses and validates', plain.choices[0]);

  // Streaming tool calls: the SDK's ChatCompletionStream assembles the deltas.
  let argDeltas = 0;
  let doneArgs = null;
  const stream = openai.beta.chat.completions.stream({
    model, messages: ask, tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false,
    max_tokens: 120, temperature: 0, stream_options: { include_usage: true },
  });
  stream.on('tool_calls.function.arguments.delta', () => { argDeltas++; });
  stream.on('tool_calls.function.arguments.done', (e) => { doneArgs = e.arguments; });
  const final = await stream.finalChatCompletion();
  const sc = final.choices[0].message.tool_calls?.[0];
  check(sc?.function.name === 'get_weather' && valid(weatherArgs, JSON.parse(sc.function.arguments)),
        'openai stream: the assembled call validates', final.choices[0]);
  check(argDeltas >= 1 && doneArgs === sc.function.arguments, 'openai stream: argument deltas assembled', { argDeltas, doneArgs });
  check(final.choices[0].finish_reason === 'tool_calls' && final.usage?.completion_tokens > 0,
        'openai stream: finish_reason tool_calls, usage', { finish: final.choices[0].finish_reason, usage: final.usage });
  check(sc.function.arguments === tool.function.arguments, 'openai stream: same greedy call as non-streaming',
        { streamed: sc.function.arguments, whole: tool.function.arguments });

  // ---- Anthropic: tool_choice any -> a tool_use block whose input validates.
  const aTool = { name: 'get_weather', description: 'Current weather of a city', input_schema: weatherJsonSchema };
  const amsg = await anthropic.messages.create({
    model, max_tokens: 120, temperature: 0, messages: ask, tools: [aTool],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
  });
  const use = amsg.content.find((b) => b.type === 'tool_use');
  check(amsg.stop_reason === 'tool_use' && use?.name === 'get_weather' && use.id.length > 0,
        'anthropic: stop_reason tool_use, a get_weather tool_use block', amsg);
  check(valid(weatherArgs, use.input), 'anthropic: tool_use input validates', use.input);

  // tool_result round trip.
  const areply = await anthropic.messages.create({
    model, max_tokens: 6, temperature: 0, tools: [aTool], tool_choice: { type: 'none' },
    messages: [
      ...ask,
      { role: 'assistant', content: amsg.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 C, clear' }] },
    ],
  });
  check(areply.content.every((b) => b.type === 'text') && areply.stop_reason !== 'tool_use',
        'anthropic: tool_result round trip -> text', areply);
  // Anthropic's input_tokens counts only what was not read from (or written to) the cache.
  const promptOf = (u) => u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
  check(promptOf(areply.usage) > promptOf(amsg.usage) + 10, 'anthropic: the result is in the prompt',
        { first: amsg.usage, second: areply.usage });

  // Streaming: the SDK's stream helper assembles input_json_delta into the input.
  let partial = '';
  let snapshot = null;
  const astream = anthropic.messages.stream({
    model, max_tokens: 120, temperature: 0, messages: ask, tools: [aTool],
    tool_choice: { type: 'tool', name: 'get_weather' },
  });
  astream.on('inputJson', (delta, snap) => { partial += delta; snapshot = snap; });
  const afinal = await astream.finalMessage();
  const suse = afinal.content.find((b) => b.type === 'tool_use');
  check(afinal.stop_reason === 'tool_use' && valid(weatherArgs, suse?.input),
        'anthropic stream: the assembled tool_use input validates', afinal);
  check(JSON.stringify(JSON.parse(partial)) === JSON.stringify(suse.input) &&
        JSON.stringify(snapshot) === JSON.stringify(suse.input),
        'anthropic stream: input_json_delta pieces join to the input', { partial, snapshot, input: suse.input });
  check(JSON.stringify(suse.input) === JSON.stringify(use.input), 'anthropic stream: same greedy call as non-streaming',
        { streamed: suse.input, whole: use.input });
});
