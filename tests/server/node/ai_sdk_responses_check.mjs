// Drives a running `hearth serve` (a model whose chat template supports tools) with the
// Vercel AI SDK's default OpenAI provider: `@ai-sdk/openai`'s createOpenAI({ baseURL })
// and `openai(model)`, which speaks the Responses API (POST /v1/responses; the SDK's
// own zod schemas check every response and stream event). Flows: generateText and
// streamText (same greedy text, finish reason, usage), previous_response_id chaining
// (served from the KV cache: cached input tokens), generateText with an executed tool
// (function_call, then function_call_output sent back), a streamed function call, and
// generateObject (text.format json_schema, strict).
// Usage: node ai_sdk_responses_check.mjs BASE_URL API_KEY MODEL
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { args, check, person, printVersions, run, valid, weatherArgs } from './client_util.mjs';

const { baseUrl, apiKey, model: modelId } = args();
printVersions('ai', '@ai-sdk/openai', 'zod');
const openai = createOpenAI({ baseURL: `${baseUrl}/v1`, apiKey });
const model = openai(modelId);  // the default: the Responses API
const bodyOf = (req) => (typeof req.body === 'string' ? JSON.parse(req.body) : req.body);
const cacheRead = (usage) => usage.inputTokenDetails?.cacheReadTokens ?? 0;
const oneCall = { openai: { parallelToolCalls: false } };

await run(async () => {
  // generateText: output_text, incomplete_details max_output_tokens -> 'length', usage.
  const prompt = 'Tell me a story about a fox.';
  const first = await generateText({ model, prompt, maxOutputTokens: 12, temperature: 0, maxRetries: 0 });
  check(bodyOf(first.request).input?.[0]?.role === 'user', 'generateText: sent as Responses input items', bodyOf(first.request));
  const responseId = first.providerMetadata?.openai?.responseId;
  check(typeof responseId === 'string' && responseId.length > 0, 'generateText: a response id', first.providerMetadata);
  // (This random model's greedy text may be all blank: its bytes are compared below.)
  check(typeof first.text === 'string' && first.content.some((p) => p.type === 'text'),
        'generateText: an output_text part', first.content);
  check(first.finishReason === 'length' || first.finishReason === 'stop', 'generateText: finishReason', first.finishReason);
  check(first.usage.outputTokens > 0 && first.usage.outputTokens <= 12 && first.usage.inputTokens > 0,
        'generateText: usage', first.usage);

  // streamText: the same greedy text through the streaming events.
  const st = streamText({ model, prompt, maxOutputTokens: 12, temperature: 0, maxRetries: 0 });
  let streamed = '';
  for await (const part of st.fullStream) {
    if (part.type === 'text-delta') streamed += part.text;
    if (part.type === 'error') throw part.error;
  }
  check(streamed === first.text, 'streamText: same greedy text as generateText', { streamed, whole: first.text });
  check((await st.finishReason) === first.finishReason && (await st.usage).outputTokens === first.usage.outputTokens,
        'streamText: finishReason and usage from response.completed / incomplete', { finish: await st.finishReason, usage: await st.usage });
  const streamedId = (await st.providerMetadata)?.openai?.responseId;
  check(typeof streamedId === 'string' && streamedId !== responseId, 'streamText: its own response id', streamedId);

  // previous_response_id: only the new turn is sent; the history comes from the cache.
  const chained = await generateText({
    model, prompt: 'And then?', maxOutputTokens: 6, temperature: 0, maxRetries: 0,
    providerOptions: { openai: { previousResponseId: responseId } },
  });
  check(bodyOf(chained.request).previous_response_id === responseId && bodyOf(chained.request).input.length === 1,
        'previousResponseId: sent with only the new turn', bodyOf(chained.request));
  check(chained.usage.inputTokens > first.usage.inputTokens && cacheRead(chained.usage) > 0,
        'previousResponseId: the earlier turn is in the prompt, read from the cache', chained.usage);

  // Tools: a function_call under toolChoice required, executed, its output sent back.
  const executed = [];
  const tools = {
    get_weather: tool({
      description: 'Current weather of a city',
      inputSchema: weatherArgs,
      execute: async ({ city, unit }) => {
        executed.push(city);
        return { city, unit, temperature: 21 };
      },
    }),
  };
  const gen = await generateText({
    model, tools, toolChoice: 'required', stopWhen: stepCountIs(2), prompt: 'What is the weather in Paris?',
    maxOutputTokens: 120, temperature: 0, maxRetries: 0, providerOptions: oneCall,
  });
  const s0 = gen.steps[0];
  check(gen.steps.length === 2 && s0.finishReason === 'tool-calls' && s0.toolCalls.length === 1,
        'tools: step 1 made one call, step 2 ran', gen.steps.map((s) => ({ finish: s.finishReason, calls: s.toolCalls })));
  check(valid(weatherArgs, s0.toolCalls[0].input) && executed[0] === s0.toolCalls[0].input.city,
        'tools: the function_call arguments validate; the tool ran', { input: s0.toolCalls[0].input, executed });
  const input1 = bodyOf(gen.steps[1].request).input;
  const output = input1.find((i) => i.type === 'function_call_output');
  check(output?.call_id === s0.toolCalls[0].toolCallId && /21/.test(output.output) &&
        input1.some((i) => i.type === 'function_call' && i.call_id === s0.toolCalls[0].toolCallId),
        'tools: step 2 sent the function_call and its function_call_output', input1);

  // A streamed function call: argument deltas assembled by the SDK.
  const sc = streamText({
    model, tools, toolChoice: 'required', prompt: 'What is the weather in Paris?', maxOutputTokens: 120,
    temperature: 0, maxRetries: 0, providerOptions: oneCall,
  });
  let deltas = 0;
  for await (const part of sc.fullStream) {
    if (part.type === 'tool-input-delta') deltas++;
    if (part.type === 'error') throw part.error;
  }
  const calls = await sc.toolCalls;
  check(calls.length === 1 && deltas >= 1 && JSON.stringify(calls[0].input) === JSON.stringify(s0.toolCalls[0].input),
        'streamText: a streamed function call, the same greedy call', { calls, deltas, whole: s0.toolCalls[0].input });

  // generateObject: text.format json_schema (strict), validated by the SDK and here.
  const obj = await generateObject({
    model, schema: person, schemaName: 'person', prompt: 'Describe a person.', maxOutputTokens: 120,
    temperature: 0, maxRetries: 0,
  });
  const format = bodyOf(obj.request).text?.format;
  check(format?.type === 'json_schema' && format.strict === true, 'generateObject: sent as text.format json_schema', format);
  check(valid(person, obj.object) && obj.finishReason === 'stop', 'generateObject: a valid object', obj.object);
});
