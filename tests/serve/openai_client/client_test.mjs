// The official OpenAI client against `mnemo serve` (started by run.sh): models, chat completions
// streamed and not, completions, embeddings, and an error reply as the client's APIError.
// Usage: node client_test.mjs BASE_URL QUESTION ANSWER
import assert from "node:assert/strict";
import OpenAI from "openai";

const [baseURL, question, answer] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: process.env.MNEMO_TEST_API_KEY ?? "none", maxRetries: 0, timeout: 60_000 });
let checks = 0;
const check = async (name, f) => {
  await f();
  checks++;
  console.log(`ok ${checks} - ${name}`);
};

await check("models.list", async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0].object, "model");
});

let whole;
await check("chat.completions.create", async () => {
  const r = await client.chat.completions.create({
    model: "mnemo-default", messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 24,
  });
  whole = r.choices[0].message.content;
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(whole, answer);
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  assert.ok(Array.isArray(r.references) && r.references.some((ref) => ref.text.includes(answer)),
            "the references extension names a memory that holds the answer");
});

await check("chat.completions.create stream with include_usage", async () => {
  const stream = await client.chat.completions.create({
    model: "mnemo-default", messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 24,
    stream: true, stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    for (const c of chunk.choices) {
      text += c.delta?.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(chunks >= 3);
  assert.equal(text, whole);
  assert.equal(finish, "stop");
  assert.ok(usage && usage.completion_tokens > 0);
});

await check("chat.completions.stream helper (finalChatCompletion)", async () => {
  const runner = client.chat.completions.stream({
    model: "mnemo-default", messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 24,
  });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, whole);
});

await check("chat.completions.create logprobs", async () => {
  const r = await client.chat.completions.create({
    model: "mnemo-default", messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 24,
    logprobs: true, top_logprobs: 2,
  });
  const lp = r.choices[0].logprobs.content;
  assert.ok(lp.length > 0);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
  }
});

await check("completions.create, streamed and not", async () => {
  const prompt = "The birthplace of Quear Mousaim is";
  const r = await client.completions.create({ model: "mnemo-default", prompt, max_tokens: 6, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.ok(r.choices[0].text.length > 0);
  let text = "";
  const stream = await client.completions.create({ model: "mnemo-default", prompt, max_tokens: 6, temperature: 0, stream: true });
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.equal(text, r.choices[0].text);
});

await check("embeddings.create (base64, the client's default)", async () => {
  const r = await client.embeddings.create({ model: "mnemo-default", input: ["Quear Mousaim", "a baker"] });
  assert.equal(r.data.length, 2);
  const v = r.data[0].embedding;
  assert.ok(v.length > 0);
  const norm = v.reduce((s, x) => s + x * x, 0);
  assert.ok(Math.abs(norm - 1) < 1e-4, `L2 norm^2 ${norm}`);
  const f = await client.embeddings.create({ model: "mnemo-default", input: "Quear Mousaim", encoding_format: "float" });
  assert.deepEqual(f.data[0].embedding.map((x) => x.toFixed(5)), v.map((x) => x.toFixed(5)));
});

await check("a bad request is an APIError with status 400 and the field", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "mnemo-default", messages: [{ role: "user", content: "x" }], temperature: 7 }),
    (e) => e instanceof OpenAI.APIError && e.status === 400 && e.param === "temperature");
});

console.log(`all ${checks} checks passed`);
