// Shared by the client-matrix scripts (sdk_tools_check.mjs, ai_sdk_check.mjs,
// langchain_check.mjs, ai_sdk_responses_check.mjs): argument parsing, the pinned
// versions actually loaded, one line per check, and the schemas the flows use.
// The model behind the server has random weights: every tool call and object must come
// from the grammar hearth derives from these schemas, so strings are bounded
// (maxLength) and numbers ranged, which keeps each generation a few dozen tokens.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export function args() {
  const [baseUrl, apiKey, model] = process.argv.slice(2);
  if (!baseUrl || !apiKey || !model) {
    console.log(`usage: node ${process.argv[1]} BASE_URL API_KEY MODEL`);
    process.exit(2);
  }
  return { baseUrl, apiKey, model };
}

export function version(pkg) {
  const url = new URL(`./node_modules/${pkg}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url)).version;
}

export function printVersions(...pkgs) {
  console.log(`node ${process.version}, ${pkgs.map((p) => `${p} ${version(p)}`).join(', ')}`);
}

// Prints `ok WHAT`, or `FAIL WHAT: DETAIL` and exits 1.
export function check(cond, what, detail) {
  if (!cond) {
    console.log(`FAIL ${what}: ${JSON.stringify(detail, null, 1)?.slice(0, 2000)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

// Runs main(), turning an exception (an SDK error, a failed schema parse) into a FAIL
// line, and prints ALL OK at the end.
export async function run(main) {
  try {
    await main();
  } catch (e) {
    const body = e?.responseBody ?? e?.error ?? e?.cause ?? '';
    console.log(`FAIL ${e?.name ?? 'error'}: ${e?.message}\n${JSON.stringify(body)?.slice(0, 2000)}`);
    console.log(e?.stack);
    process.exit(1);
  }
  console.log('ALL OK');
}

// The tool: a city (1-8 characters) and a unit.
export const weatherArgs = z.object({
  city: z.string().min(1).max(8),
  unit: z.enum(['celsius', 'fahrenheit']),
});
export const weatherJsonSchema = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1, maxLength: 8 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};

// The structured output: a person with a bounded name, an age and a few tags.
export const person = z.object({
  name: z.string().min(1).max(8),
  age: z.number().int().min(0).max(120),
  tags: z.array(z.enum(['fox', 'hearth', 'tea'])).max(3),
});
export const personJsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    tags: { type: 'array', items: { type: 'string', enum: ['fox', 'hearth', 'tea'] }, maxItems: 3 },
  },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};

// zod's verdict on `value`, for check(): true, or the issues.
export function valid(schema, value) {
  const r = schema.safeParse(value);
  return r.success;
}
