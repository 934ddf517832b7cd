// The official openai JS client against a bulkhead server (run by
// jsclient_test.go). Usage:
//   node client.mjs fake BASE_URL MODEL          the API's fake engine, which echoes the prompt
//   node client.mjs copy BASE_URL MODEL CASES    the real engine on the built-in copy model;
//                                                CASES is JSON [{prompt, want}], want the canary it copies
// Prints "ok NAME" per check and exits non-zero on the first failure.
import assert from "node:assert/strict";
import OpenAI from "openai";

const [mode, baseURL, model, casesJSON] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

const fakeChecks = {
  async completion() {
    const r = await client.completions.create({ model, prompt: "hello", max_tokens: 3 });
    assert.equal(r.object, "text_completion");
    assert.equal(r.choices[0].text, "hel");
    assert.equal(r.choices[0].finish_reason, "length");
    assert.equal(r.usage.completion_tokens, 3);
  },
  async chat() {
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    assert.equal(r.object, "chat.completion");
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(r.choices[0].message.content, "[us"); // the template renders "<s>[user]hi[assistant]"
  },
  async completionStream() {
    const stream = await client.completions.create({ model, prompt: "hello", stream: true, stream_options: { include_usage: true } });
    let text = "", finish = null, usage = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.text;
        finish = c.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, "hello");
    assert.equal(finish, "stop");
    assert.equal(usage.completion_tokens, 6); // five bytes and the end token
  },
  async chatStream() {
    const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, "[use");
  },
  async completionN() {
    const r = await client.completions.create({ model, prompt: ["ab", "cd"], n: 2, max_tokens: 8 });
    assert.deepEqual(r.choices.map((c) => [c.index, c.text]), [[0, "ab"], [1, "ab"], [2, "cd"], [3, "cd"]]);
    assert.equal(r.usage.prompt_tokens, 6); // each prompt (BOS + 2) counted once
  },
  async chatNStream() {
    const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], n: 2, max_tokens: 3, stream: true });
    const text = {};
    for await (const chunk of stream) {
      for (const c of chunk.choices) text[c.index] = (text[c.index] ?? "") + (c.delta?.content ?? "");
    }
    assert.deepEqual(text, { 0: "[us", 1: "[us" });
  },
  async modelNotFound() {
    await assert.rejects(client.completions.create({ model: "no-such-model", prompt: "x" }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `got ${e?.constructor?.name}`);
      assert.equal(e.status, 404);
      assert.equal(e.code, "model_not_found");
      assert.equal(e.param, "model");
      return true;
    });
  },
};

const cases = casesJSON ? JSON.parse(casesJSON) : [];
const greedy = { model, max_tokens: 8, temperature: 0 };

const copyChecks = {
  async copyCompletionN() {
    const r = await client.completions.create({ ...greedy, prompt: cases[0].prompt, n: 3 });
    assert.deepEqual(r.choices.map((c) => [c.index, c.text]), [[0, cases[0].want], [1, cases[0].want], [2, cases[0].want]]);
  },
  async copyPromptList() {
    const r = await client.completions.create({ ...greedy, prompt: cases.map((c) => c.prompt) });
    assert.deepEqual(r.choices.map((c) => c.text), cases.map((c) => c.want));
  },
  async copyStreamN() {
    const stream = await client.completions.create({ ...greedy, prompt: cases[1].prompt, n: 2, stream: true });
    const text = {};
    for await (const chunk of stream) {
      for (const c of chunk.choices) text[c.index] = (text[c.index] ?? "") + c.text;
    }
    assert.deepEqual(text, { 0: cases[1].want, 1: cases[1].want });
  },
  modelNotFound: fakeChecks.modelNotFound,
};

const checks = mode === "copy" ? copyChecks : fakeChecks;
for (const [name, check] of Object.entries(checks)) {
  await check();
  console.log("ok " + name);
}
