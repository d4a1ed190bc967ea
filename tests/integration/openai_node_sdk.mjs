// The checks of openai_node_sdk.sh: what the official `openai` package hands
// back from xftctl's server. Arguments: the plain server's base URL, the
// scripted (tool-calling) server's. OPENAI_SDK_DIR: where npm installed it.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.OPENAI_SDK_DIR}/`);
const OpenAI = require('openai');
const [plainUrl, scriptedUrl] = process.argv.slice(2);
const model = 'qwen-test';
const client = new OpenAI({ baseURL: plainUrl, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const scripted = new OpenAI({ baseURL: scriptedUrl, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
// The stream helper moved out of `beta` in openai 5.
const streamHelper = (c) => (c.chat.completions.stream ? c.chat.completions : c.beta.chat.completions);

const ok = (name) => console.log(`ok ${name}`);
const user = (content) => [{ role: 'user', content }];
const assertUsage = (usage, completionTokens) => {
  assert.ok(usage.prompt_tokens > 0);
  if (completionTokens !== undefined) assert.equal(usage.completion_tokens, completionTokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
};

// Models.
{
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0].id, model);
  assert.equal(models[0].object, 'model');
  assert.equal(models[0].owned_by, 'xftctl');
  assert.equal(typeof models[0].created, 'number');
  ok('models.list');
}

// Chat, whole and streamed with usage: the same greedy answer.
const plain = await client.chat.completions.create({ model, messages: user('Hello'), max_tokens: 12, temperature: 0 });
{
  assert.equal(plain.object, 'chat.completion');
  assert.equal(plain.model, model);
  assert.match(plain.id, /^chatcmpl-/);
  assert.equal(plain.choices.length, 1);
  const [choice] = plain.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(choice.message.content.length > 0);
  assert.equal(choice.message.tool_calls, undefined);
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  assertUsage(plain.usage);
  ok('chat');
}
{
  const stream = await client.chat.completions.create({
    model, messages: user('Hello'), max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let content = '';
  let finish = null;
  let usage = null;
  let role = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0);
      usage = chunk.usage;
      continue;
    }
    const [choice] = chunk.choices;
    role ??= choice.delta.role ?? null;
    content += choice.delta.content ?? '';
    finish = choice.finish_reason ?? finish;
  }
  assert.equal(role, 'assistant');
  assert.equal(content, plain.choices[0].message.content);
  assert.equal(finish, plain.choices[0].finish_reason);
  assert.deepEqual(usage, plain.usage);
  ok('chat stream with include_usage');
}

// Completions with logprobs.
{
  const c = await client.completions.create({
    model, prompt: 'The capital of France is', max_tokens: 6, temperature: 0, logprobs: 2,
  });
  assert.equal(c.object, 'text_completion');
  const [choice] = c.choices;
  assert.equal(typeof choice.text, 'string');
  const lp = choice.logprobs;
  assert.equal(lp.tokens.length, c.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  assert.equal(lp.text_offset[0], 0);
  lp.token_logprobs.forEach((logprob, i) => {
    assert.ok(logprob <= 0);
    const top = Object.values(lp.top_logprobs[i]);
    assert.ok(top.length >= 1 && top.length <= 2);
    assert.equal(logprob, Math.max(...top));  // greedy: the chosen token is the likeliest
  });
  assertUsage(c.usage);
  ok('completions with logprobs');
}

// n = 2: two distinct, reproducible samples; a stream interleaves them by index.
{
  const request = { model, messages: user('Tell me a story'), n: 2, max_tokens: 8, temperature: 1, seed: 3, ignore_eos: true };
  const whole = await client.chat.completions.create(request);
  assert.deepEqual(whole.choices.map((c) => c.index), [0, 1]);
  assert.notEqual(whole.choices[0].message.content, whole.choices[1].message.content);
  assertUsage(whole.usage, 16);
  const again = await client.chat.completions.create(request);
  assert.deepEqual(again.choices, whole.choices);
  const texts = ['', ''];
  let usage = null;
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? '';
  }
  assert.deepEqual(texts, whole.choices.map((c) => c.message.content));
  assert.deepEqual(usage, whole.usage);
  const completions = await client.completions.create({ model, prompt: 'Once', n: 2, max_tokens: 4, seed: 1, ignore_eos: true });
  assert.deepEqual(completions.choices.map((c) => c.index), [0, 1]);
  assertUsage(completions.usage, 8);
  ok('n = 2');
}

// Tool calls (scripted server): streamed, assembled by the SDK's stream helper.
const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
];
const expectedCalls = [
  { name: 'get_weather', arguments: { city: 'München', days: 3, units: { temp: 'C' } } },
  { name: 'get_time', arguments: { zone: 'Europe/Berlin' } },
];
{
  const stream = streamHelper(scripted).stream({ model, messages: user('Weather and time in Munich?'), tools });
  let argumentChunks = 0;
  for await (const chunk of stream) {
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) if (call.function?.arguments) ++argumentChunks;
  }
  const final = await stream.finalChatCompletion();
  const [choice] = final.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, 'Checking both.');
  const calls = choice.message.tool_calls;
  assert.equal(calls.length, 2);
  calls.forEach((call, i) => {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, expectedCalls[i].name);
    assert.deepEqual(JSON.parse(call.function.arguments), expectedCalls[i].arguments);
  });
  assert.notEqual(calls[0].id, calls[1].id);
  assert.ok(argumentChunks > 2, `arguments came in ${argumentChunks} fragments`);
  // The whole answer says the same.
  const whole = await scripted.chat.completions.create({ model, messages: user('Weather and time in Munich?'), tools });
  assert.deepEqual(whole.choices[0].message.tool_calls.map((c) => c.function), calls.map((c) => c.function));
  assert.equal(whole.choices[0].finish_reason, 'tool_calls');
  ok('tools, streamed and assembled by the SDK');
}
{
  const one = await scripted.chat.completions.create({
    model, messages: user('Weather?'), tools, parallel_tool_calls: false,
  });
  assert.equal(one.choices[0].message.tool_calls.length, 1);
  assert.equal(one.choices[0].message.tool_calls[0].function.name, 'get_weather');
  ok('parallel_tool_calls: false');
}

// Structured output on the plain server: the random model's answer is held to the schema.
{
  const schema = {
    type: 'object',
    properties: {
      city: { type: 'string', maxLength: 12 },
      days: { type: 'integer' },
      unit: { enum: ['C', 'F'] },
      tags: { type: 'array', items: { type: 'boolean' }, maxItems: 3 },
    },
    required: ['city', 'days', 'unit'],
    additionalProperties: false,
  };
  const answer = await client.chat.completions.create({
    model, messages: user('Weather as JSON'), max_tokens: 120, seed: 3, temperature: 0.8,
    response_format: { type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } },
  });
  const [choice] = answer.choices;
  assert.equal(choice.finish_reason, 'stop');
  const value = JSON.parse(choice.message.content);
  assert.deepEqual(Object.keys(value).filter((k) => !(k in schema.properties)), []);
  assert.equal(typeof value.city, 'string');
  assert.ok([...value.city].length <= 12);
  assert.ok(Number.isInteger(value.days));
  assert.ok(['C', 'F'].includes(value.unit));
  if ('tags' in value) {
    assert.ok(Array.isArray(value.tags) && value.tags.length <= 3);
    value.tags.forEach((t) => assert.equal(typeof t, 'boolean'));
  }
  ok('json_schema');

  const object = await client.chat.completions.create({
    model, messages: user('Any JSON object'), max_tokens: 60, seed: 4, response_format: { type: 'json_object' },
  });
  const parsed = JSON.parse(object.choices[0].message.content);
  assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed));
  ok('json_object');

  const forced = await client.chat.completions.create({
    model, messages: user('Weather?'), tools, tool_choice: { type: 'function', function: { name: 'get_time' } },
    max_tokens: 80, seed: 5,
  });
  assert.equal(forced.choices[0].finish_reason, 'tool_calls');
  const [call] = forced.choices[0].message.tool_calls;
  assert.equal(call.function.name, 'get_time');
  const args = JSON.parse(call.function.arguments);
  assert.ok(args !== null && typeof args === 'object' && !Array.isArray(args));
  ok('tool_choice naming a function');
}

// Errors reach the SDK as its APIError with OpenAI's fields.
{
  await assert.rejects(client.chat.completions.create({ model, messages: user('x'), n: 9 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    assert.equal(e.type, 'invalid_request_error');
    return true;
  });
  ok('errors');
}
console.log('all checks passed');
