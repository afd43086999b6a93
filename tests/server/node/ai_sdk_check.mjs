// Drives a running `hearth serve` (a model whose chat template supports tools) with the
// Vercel AI SDK (`ai`) through `@ai-sdk/openai-compatible` (chat completions):
// generateText with an executed tool and a second step that sends its result back,
// generateObject with a zod schema (strict json_schema), streamText (text, finish
// reason, usage), and a streamed tool call.
// Usage: node ai_sdk_check.mjs BASE_URL API_KEY MODEL
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { args, check, person, printVersions, run, valid, weatherArgs } from './client_util.mjs';

const { baseUrl, apiKey, model: modelId } = args();
printVersions('ai', '@ai-sdk/openai-compatible', 'zod');
const hearth = createOpenAICompatible({
  name: 'hearth', baseURL: `${baseUrl}/v1`, apiKey, includeUsage: true, supportsStructuredOutputs: true,
});
const model = hearth.chatModel(modelId);
// Extra body fields go through providerOptions under the provider's name.
const oneCall = { hearth: { parallel_tool_calls: false } };

await run(async () => {
  // generateText: a required tool call, executed, its result sent back in step 2.
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
    model, tools, toolChoice: 'required', stopWhen: stepCountIs(2), maxRetries: 0,
    prompt: 'What is the weather in Paris?', maxOutputTokens: 120, temperature: 0, providerOptions: oneCall,
  });
  check(gen.steps.length === 2, 'generateText: two steps (call, then with the result)', gen.steps.map((s) => s.finishReason));
  const s0 = gen.steps[0];
  check(s0.finishReason === 'tool-calls' && s0.toolCalls.length === 1 && s0.toolCalls[0].toolName === 'get_weather',
        'generateText: step 1 made one get_weather call', { finish: s0.finishReason, calls: s0.toolCalls });
  check(valid(weatherArgs, s0.toolCalls[0].input) && executed[0] === s0.toolCalls[0].input.city,
        'generateText: the call validated and the tool executed', { input: s0.toolCalls[0].input, executed });
  check(s0.toolResults.length === 1 && s0.toolResults[0].output.temperature === 21,
        'generateText: step 1 has the tool result', s0.toolResults);
  const body1 = typeof gen.steps[1].request.body === 'string' ? JSON.parse(gen.steps[1].request.body) : gen.steps[1].request.body;
  const toolMsg = body1.messages.find((m) => m.role === 'tool');
  check(toolMsg?.tool_call_id === s0.toolCalls[0].toolCallId && /21/.test(toolMsg.content) &&
        body1.messages.some((m) => m.role === 'assistant' && m.tool_calls?.[0]?.id === s0.toolCalls[0].toolCallId),
        'generateText: step 2 sent the call and its result back', body1.messages);
  check(gen.steps[1].usage.inputTokens > s0.usage.inputTokens + 10 && gen.totalUsage.outputTokens > 0,
        'generateText: step 2 prompt holds the result; usage', { s0: s0.usage, s1: gen.steps[1].usage });

  // generateObject: the SDK sends response_format json_schema and validates with zod.
  const obj = await generateObject({
    model, schema: person, schemaName: 'person', prompt: 'Describe a person.', maxOutputTokens: 120,
    temperature: 0, maxRetries: 0,
  });
  check(valid(person, obj.object) && obj.finishReason === 'stop', 'generateObject: a valid object', obj.object);
  check(obj.usage.outputTokens > 0 && obj.usage.inputTokens > 0, 'generateObject: usage', obj.usage);
  const sentFormat = obj.request.body && (typeof obj.request.body === 'string' ? JSON.parse(obj.request.body) : obj.request.body).response_format;
  check(sentFormat?.type === 'json_schema' && sentFormat.json_schema.strict === true,
        'generateObject: sent as strict json_schema', sentFormat);

  // streamText: text, finish reason, usage; the same text as generateText with the same
  // seed (sampled: this random model's greedy text is whitespace, held back to the end).
  const prompt = 'Tell me a story about a fox.';
  const sampling = { maxOutputTokens: 12, temperature: 0.8, seed: 7, maxRetries: 0 };
  const st = streamText({ model, prompt, ...sampling });
  let streamed = '';
  let parts = 0;
  for await (const t of st.textStream) {
    streamed += t;
    parts++;
  }
  const finish = await st.finishReason;
  const usage = await st.usage;
  check(streamed.length > 0 && parts >= 2, 'streamText: text in several parts', { streamed, parts });
  check(finish === 'length' || finish === 'stop', 'streamText: finishReason', finish);
  check(usage.outputTokens > 0 && usage.inputTokens > 0, 'streamText: usage (stream_options.include_usage)', usage);
  const whole = await generateText({ model, prompt, ...sampling });
  check(whole.text === streamed && whole.usage.outputTokens === usage.outputTokens,
        'streamText: same seeded text as generateText', { streamed, whole: whole.text });

  // streamText with a tool: the streamed call is assembled and executed.
  executed.length = 0;
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
  check(calls.length === 1 && valid(weatherArgs, calls[0].input) && deltas >= 1 && executed.length === 1,
        'streamText: a streamed tool call, valid and executed', { calls, deltas, executed });
  check(JSON.stringify(calls[0].input) === JSON.stringify(s0.toolCalls[0].input) && (await sc.finishReason) === 'tool-calls',
        'streamText: same greedy call as generateText', { streamed: calls[0].input, whole: s0.toolCalls[0].input });
});
