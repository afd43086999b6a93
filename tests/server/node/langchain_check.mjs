// Drives a running `hearth serve` (a model whose chat template supports tools) with
// LangChain JS (`@langchain/openai` ChatOpenAI on chat completions): bindTools + invoke
// (tool_calls parsed), a ToolMessage round trip, withStructuredOutput with a zod schema
// (json_schema and function calling), stream (chunks concatenated, a streamed tool call).
// Usage: node langchain_check.mjs BASE_URL API_KEY MODEL
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { args, check, person, printVersions, run, valid, weatherArgs } from './client_util.mjs';

const { baseUrl, apiKey, model } = args();
printVersions('@langchain/openai', '@langchain/core', 'zod');
const llm = new ChatOpenAI({
  model, apiKey, configuration: { baseURL: `${baseUrl}/v1` }, temperature: 0, maxTokens: 120, maxRetries: 0,
  timeout: 60000,
});
const weatherTool = { name: 'get_weather', description: 'Current weather of a city', schema: weatherArgs };
const ask = [new HumanMessage('What is the weather in Paris?')];

await run(async () => {
  // bindTools + invoke: tool_choice "any" is sent as required.
  const withTools = llm.bindTools([weatherTool], { tool_choice: 'any', parallel_tool_calls: false });
  const ai = await withTools.invoke(ask);
  check(ai.tool_calls?.length === 1 && ai.tool_calls[0].name === 'get_weather' && ai.tool_calls[0].id,
        'bindTools: invoke -> one parsed get_weather call', { tool_calls: ai.tool_calls, invalid: ai.invalid_tool_calls });
  check(valid(weatherArgs, ai.tool_calls[0].args), 'bindTools: the call arguments validate', ai.tool_calls[0].args);
  check(ai.response_metadata?.finish_reason === 'tool_calls' && ai.usage_metadata?.output_tokens > 0,
        'bindTools: finish_reason tool_calls, usage_metadata', { meta: ai.response_metadata, usage: ai.usage_metadata });

  // The tool's result goes back as a ToolMessage; the reply is text.
  const next = await llm.bindTools([weatherTool], { tool_choice: 'none' }).invoke(
    [...ask, ai, new ToolMessage({ tool_call_id: ai.tool_calls[0].id, content: '21 C, clear' })],
    { max_tokens: 6 },
  );
  check(typeof next.content === 'string' && (next.tool_calls ?? []).length === 0,
        'ToolMessage round trip -> a text reply', next);
  check(next.usage_metadata.input_tokens > ai.usage_metadata.input_tokens + 10,
        'ToolMessage round trip: the call and result are in the prompt', { first: ai.usage_metadata, next: next.usage_metadata });

  // withStructuredOutput: json_schema (the default for this model name) and a forced tool.
  for (const method of ['jsonSchema', 'functionCalling']) {
    const structured = llm.withStructuredOutput(person, { name: 'person', method, includeRaw: true });
    const out = await structured.invoke('Describe a person.');
    check(valid(person, out.parsed), `withStructuredOutput (${method}): a valid object`, out.parsed);
    const sent = out.raw.response_metadata;
    check(sent?.finish_reason === (method === 'jsonSchema' ? 'stop' : 'tool_calls'),
          `withStructuredOutput (${method}): finish_reason`, sent);
  }

  // stream: chunks concatenated equal invoke's text (same seed).
  const sampled = new ChatOpenAI({
    model, apiKey, configuration: { baseURL: `${baseUrl}/v1` }, temperature: 0.8, maxTokens: 12, maxRetries: 0,
    streamUsage: true,
  });
  const prompt = [new HumanMessage('Tell me a story about a fox.')];
  let text = '';
  let chunks = 0;
  let full = null;
  for await (const chunk of await sampled.stream(prompt, { seed: 7 })) {
    text += chunk.content;
    chunks++;
    full = full ? full.concat(chunk) : chunk;
  }
  const whole = await sampled.invoke(prompt, { seed: 7 });
  check(chunks >= 3 && text.length > 0 && text === whole.content, 'stream: chunks concatenate to invoke\'s text',
        { text, whole: whole.content, chunks });
  check(full.usage_metadata?.output_tokens === whole.usage_metadata.output_tokens,
        'stream: usage_metadata (stream_options.include_usage)', { streamed: full.usage_metadata, whole: whole.usage_metadata });

  // A streamed tool call: tool_call_chunks merge into the same call as invoke's.
  let merged = null;
  for await (const chunk of await withTools.stream(ask)) merged = merged ? merged.concat(chunk) : chunk;
  check(merged.tool_calls?.length === 1 && JSON.stringify(merged.tool_calls[0].args) === JSON.stringify(ai.tool_calls[0].args),
        'stream: tool_call_chunks merge into the same call', { streamed: merged.tool_calls, whole: ai.tool_calls });
});
