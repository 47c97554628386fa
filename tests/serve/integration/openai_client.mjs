// The official `openai` npm client against a running `tessera serve` (see run.sh): completions and
// chat, streaming and not, usage, and the client's typed errors. Env: BASE, API_KEY, MODEL_NAME.
// argv[2]: path of the installed package's index.mjs.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const { default: OpenAI } = await import(pathToFileURL(resolve(process.argv[2])).href);
const { BASE, API_KEY, MODEL_NAME } = process.env;
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: API_KEY, maxRetries: 0 });
let failures = 0;

async function test(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

await test('models.list', async () => {
  const page = await client.models.list();
  assert.ok(page.data.some((m) => m.id === MODEL_NAME), JSON.stringify(page.data));
});

await test('completions.create', async () => {
  const r = await client.completions.create({ model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(typeof r.choices[0].text, 'string');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 6);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 6);
});

await test('completions stream equals non-stream (greedy)', async () => {
  const args = { model: MODEL_NAME, prompt: 'The quick brown fox', max_tokens: 8, temperature: 0 };
  const whole = await client.completions.create(args);
  const stream = await client.completions.create({ ...args, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 8);
});

await test('chat.completions.create', async () => {
  const r = await client.chat.completions.create({
    model: MODEL_NAME,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }],
    max_tokens: 5,
    seed: 7,
    temperature: 0.8,
    logprobs: true,
    top_logprobs: 2,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.usage.prompt_tokens > 0);
  const lp = r.choices[0].logprobs.content;
  assert.ok(lp.length >= 1);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
  }
});

await test('chat stream with usage', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL_NAME,
    messages: [{ role: 'user', content: 'Count to three.' }],
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = '';
  let usage = null;
  let sawRole = false;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) sawRole = true;
      if (c.delta.content) content += c.delta.content;
    }
  }
  assert.ok(sawRole);
  assert.equal(typeof content, 'string');
  assert.ok(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= 6);
});

await test('seeded sampling repeats', async () => {
  const args = { model: MODEL_NAME, prompt: 'Seed test', max_tokens: 8, temperature: 1.0, seed: 42 };
  const a = await client.completions.create(args);
  const b = await client.completions.create(args);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

await test('errors are typed', async () => {
  await assert.rejects(client.completions.create({ model: 'no-such-model', prompt: 'x' }), OpenAI.NotFoundError);
  await assert.rejects(client.completions.create({ model: MODEL_NAME, prompt: 'x', temperature: -3 }), OpenAI.BadRequestError);
  const bad = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
});

await test('concurrent requests', async () => {
  const args = { model: MODEL_NAME, max_tokens: 6, temperature: 0 };
  const prompts = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
  const alone = [];
  for (const p of prompts) alone.push((await client.completions.create({ ...args, prompt: p })).choices[0].text);
  const together = await Promise.all(prompts.map((p) => client.completions.create({ ...args, prompt: p })));
  assert.deepEqual(together.map((r) => r.choices[0].text), alone);
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    // Closed choices: random weights never end a free-text string, so the call stays short.
    parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Oslo', 'Rome'] }, celsius: { type: 'boolean' } }, required: ['city'], additionalProperties: false },
  },
};

await test('tools: a forced function call (random weights still write a valid call)', async () => {
  const r = await client.chat.completions.create({
    model: MODEL_NAME,
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [weatherTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    max_tokens: 200,
    temperature: 0.7,
    seed: 3,
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.ok(call.id.startsWith('call_'));
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  assert.ok(['Paris', 'Oslo', 'Rome'].includes(args.city), call.function.arguments);
  for (const k of Object.keys(args)) assert.ok(k === 'city' || k === 'celsius', call.function.arguments);
  if ('celsius' in args) assert.equal(typeof args.celsius, 'boolean');
});

await test('tools: auto, streamed, and a tool result turn', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL_NAME,
    messages: [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '3 C, snow' },
    ],
    tools: [weatherTool],
    max_tokens: 6,
    temperature: 0,
    stream: true,
  });
  let finish = null;
  let pieces = 0;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.delta.content || c.delta.tool_calls) pieces++;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(['length', 'stop', 'tool_calls'].includes(finish), String(finish));
  assert.ok(pieces >= 1);
});

await test('n choices share one prompt', async () => {
  const r = await client.chat.completions.create({
    model: MODEL_NAME, messages: [{ role: 'user', content: 'Tell me a story.' }], n: 3, max_tokens: 4, seed: 11,
  });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(r.usage.completion_tokens, 12);
});

await test('embeddings (the client asks for base64)', async () => {
  const r = await client.embeddings.create({ model: MODEL_NAME, input: ['first text', 'second'] });
  assert.equal(r.data.length, 2);
  for (const [i, d] of r.data.entries()) {
    assert.equal(d.index, i);
    assert.ok(d.embedding.length > 0);
    const norm = Math.sqrt(d.embedding.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-3, `norm ${norm}`);
  }
  assert.equal(r.data[0].embedding.length, r.data[1].embedding.length);
  assert.ok(r.usage.prompt_tokens > 0);
});

// Structured output through the client's own helper: a zod schema shaped like what Pydantic and
// Zod users send (nested models, one reused so the helper emits definitions and $ref, nullable
// fields as anyOf with null, an enum, a list of models, integers), parsed and checked by zod.
await test('structured output: beta.chat.completions.parse with zodResponseFormat', async () => {
  const require = createRequire(resolve(process.argv[2]));
  const { z } = require('zod');
  const { zodResponseFormat } = require('openai/helpers/zod');
  const Address = z.object({ street: z.string(), city: z.string(), zip: z.string().nullable() });
  const Pet = z.object({ name: z.string(), age: z.number().int() });
  const User = z.object({
    id: z.number().int(), role: z.enum(['admin', 'user', 'guest']), home: Address,
    work: Address.nullable(), pets: z.array(Pet), score: z.number(),
  });
  const format = zodResponseFormat(User, 'user');
  const text = JSON.stringify(format.json_schema.schema);
  assert.ok(text.includes('$ref') && text.includes('anyOf'), text);  // the shapes under test
  for (const seed of [1, 2, 3]) {
    const r = await client.beta.chat.completions.parse({
      model: MODEL_NAME, messages: [{ role: 'user', content: 'Describe a user.' }],
      response_format: format, max_tokens: 300, temperature: 0.8, seed,
    });
    assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
    User.parse(r.choices[0].message.parsed);  // throws unless it validates
  }
});

// A discriminated union (zod's discriminatedUnion, Pydantic's Union of models with a Literal
// tag): anyOf of objects told apart by a const property, which the matcher writes first.
await test('structured output: zod discriminatedUnion', async () => {
  const require = createRequire(resolve(process.argv[2]));
  const { z } = require('zod');
  const { zodResponseFormat } = require('openai/helpers/zod');
  const Cat = z.object({ kind: z.literal('cat'), lives: z.number().int() });
  const Dog = z.object({ kind: z.literal('dog'), name: z.string(), good: z.boolean() });
  const Owner = z.object({ pet: z.discriminatedUnion('kind', [Cat, Dog]), spare: z.union([Cat, Dog]).nullable() });
  const format = zodResponseFormat(Owner, 'owner');
  const text = JSON.stringify(format.json_schema.schema);
  assert.ok(text.includes('anyOf') && (text.includes('"const"') || text.includes('"enum"')), text);
  for (const seed of [1, 2, 3]) {
    const r = await client.beta.chat.completions.parse({
      model: MODEL_NAME, messages: [{ role: 'user', content: 'Describe a pet owner.' }],
      response_format: format, max_tokens: 200, temperature: 0.8, seed,
    });
    assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
    Owner.parse(r.choices[0].message.parsed);  // throws unless it validates
  }
});

console.log(`openai client: ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
