// Starts `memwall serve` on loopback with a tiny model and runs one suite of client tests
// against it: `openai` (the official client), `load` (8 clients, over 1,000 requests, some
// cancelled mid-stream) or `page` (the chat page in headless Chromium). Then stops the server
// with SIGTERM, which must exit 0.
//
//   node tests/server/run.mjs SUITE MEMWALL_BINARY SHARED_DIR [ARTIFACT_DIR]
//
// Exits 77 (CTest's "skipped") with the reason when what a suite needs is not installed.
import { spawn } from "node:child_process";
import { readFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const [suite, binary, shared, artifacts = "."] = process.argv.slice(2);
if (!suite || !binary || !shared) {
  console.error("usage: node run.mjs openai|load|page MEMWALL_BINARY SHARED_DIR [ARTIFACT_DIR]");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));

function skip(why) {
  console.log(`SKIPPED: ${why}`);
  process.exit(77);
}

async function need(pkg) {
  try {
    return await import(pkg);
  } catch {
    skip(`the npm package ${pkg} is not installed (npm ci --prefix ${here}; scripts/install-deps --test does it)`);
  }
}

// Starts the server; resolves with {url, child} once it listens.
function startServer(extra = []) {
  const args = ["serve", "-m", join(shared, "models/stories260K.gguf"), "--port", "0",
    "--parallel", "4", "-c", "4096", "--chat-template", "chatml", "-t", "2", ...extra];
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 60 s:\n${log}`)), 60000);
    child.stderr.on("data", (d) => {
      log += d;
      const m = /http:\/\/([0-9.]+):(\d+)\//.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({ url: `http://${m[1]}:${m[2]}`, child, log: () => log });
      }
    });
    child.on("exit", (code) => reject(new Error(`memwall serve exited with ${code}:\n${log}`)));
  });
}

function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

async function stopServer(server) {
  server.child.removeAllListeners("exit");  // the start-up's "exited early" rejection
  const exited = new Promise((resolve) => server.child.on("exit", (code, signal) => resolve({ code, signal })));
  server.child.kill("SIGTERM");
  const { code, signal } = await exited;
  assert.equal(code, 0, `memwall serve should exit 0 on SIGTERM, got ${code} ${signal}\n${server.log()}`);
}

// ---- Suites ------------------------------------------------------------------------------

async function openaiSuite(server) {
  const { default: OpenAI } = await need("openai");
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });

  const models = await client.models.list();
  assert.equal(models.data[0].id, "memwall");

  // Chat, not streamed.
  const chat = await client.chat.completions.create({
    model: "memwall",
    messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Tell one." }],
    max_tokens: 16, temperature: 0,
  });
  assert.equal(chat.object, "chat.completion");
  assert.equal(chat.choices[0].message.role, "assistant");
  assert.equal(typeof chat.choices[0].message.content, "string");
  assert.equal(chat.usage.completion_tokens, 16);
  assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + 16);

  // The same, streamed: the same text, usage in the last chunk.
  const stream = await client.chat.completions.create({
    model: "memwall",
    messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Tell one." }],
    max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, chat.choices[0].message.content);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 16);
  assert.equal(usage.prompt_tokens, chat.usage.prompt_tokens);

  // Completions, streamed and not.
  const comp = await client.completions.create({ model: "memwall", prompt: "Once upon a time", max_tokens: 20, temperature: 0 });
  assert.equal(comp.object, "text_completion");
  assert.equal(comp.usage.prompt_tokens, 5);
  let streamed = "";
  for await (const chunk of await client.completions.create({ model: "memwall", prompt: "Once upon a time", max_tokens: 20, temperature: 0, stream: true })) {
    streamed += chunk.choices[0]?.text ?? "";
  }
  assert.equal(streamed, comp.choices[0].text);

  // Stop strings end the text before them.
  const cut = comp.choices[0].text.slice(10, 14);
  const stopped = await client.completions.create({ model: "memwall", prompt: "Once upon a time", max_tokens: 20, temperature: 0, stop: [cut] });
  assert.equal(stopped.choices[0].text, comp.choices[0].text.slice(0, comp.choices[0].text.indexOf(cut)));
  assert.equal(stopped.choices[0].finish_reason, "stop");

  // Same seed, same text; another seed, (almost surely) another.
  const sampled = async (seed) => (await client.completions.create({ model: "memwall", prompt: "Once upon a time", max_tokens: 40, temperature: 1, seed })).choices[0].text;
  const a = await sampled(7), b = await sampled(7), c = await sampled(8);
  assert.equal(a, b);
  assert.notEqual(a, c);

  // The client's error for a bad request: a 400 with the field named.
  await assert.rejects(
    client.chat.completions.create({ model: "memwall", messages: [{ role: "user", content: "x" }], temperature: -3 }),
    (e) => e.status === 400 && /temperature/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: "memwall", messages: [{ role: "wizard", content: "x" }] }),
    (e) => e.status === 400 && /wizard/.test(e.message));
  console.log("openai suite: models, chat (streamed and not), completions, stop, seeds, usage, errors: ok");
}

async function apiKeySuite() {
  const { default: OpenAI } = await need("openai");
  const server = await startServer(["--api-key", "sesame"]);
  try {
    const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "wrong" });
    await assert.rejects(bad.models.list(), (e) => e.status === 401);
    const good = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "sesame" });
    assert.equal((await good.models.list()).data.length, 1);
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
  } finally {
    await stopServer(server);
  }
  console.log("api key: 401 for a wrong key, 200 for the right one, /health open: ok");
}

async function loadSuite(server) {
  const clients = 8, perClient = 130;  // 1,040 requests
  const pid = server.child.pid;
  const body = (i) => {
    const chat = i % 2 === 0;
    const req = { max_tokens: 8 + (i % 17), temperature: i % 3 === 0 ? 0 : 0.8, seed: i };
    if (chat) req.messages = [{ role: "user", content: `Story number ${i % 50}` }];
    else req.prompt = `Once upon a time ${i % 50}`;
    return { path: chat ? "/v1/chat/completions" : "/v1/completions", req, chat };
  };
  const stats = { done: 0, streamed: 0, cancelled: 0, fivexx: 0, incomplete: 0, other: 0 };
  async function one(i) {
    const { path, req, chat } = body(i);
    const stream = i % 3 !== 1;
    const cancel = stream && i % 10 === 5;  // about 7 % hang up after the first chunk
    req.stream = stream;
    const ctrl = new AbortController();
    const res = await fetch(server.url + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(req), signal: ctrl.signal });
    if (res.status >= 500) { stats.fivexx++; return; }
    if (res.status !== 200) { stats.other++; return; }
    if (!stream) {
      const j = await res.json();
      const c = j.choices[0];
      if (!c.finish_reason || (chat ? typeof c.message.content !== "string" : typeof c.text !== "string")) stats.incomplete++;
      stats.done++;
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "", finished = false, sawDone = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        if (cancel) { ctrl.abort(); stats.cancelled++; return; }
        let at;
        while ((at = buf.indexOf("\n\n")) >= 0) {
          const ev = buf.slice(0, at); buf = buf.slice(at + 2);
          if (!ev.startsWith("data: ")) continue;
          const data = ev.slice(6);
          if (data === "[DONE]") { sawDone = true; continue; }
          const j = JSON.parse(data);
          if (j.error) { stats.fivexx++; return; }
          if (j.choices[0]?.finish_reason) finished = true;
        }
      }
    } catch (e) {
      if (e.name === "AbortError") return;
      throw e;
    }
    if (!finished || !sawDone) stats.incomplete++;
    stats.streamed++;
    stats.done++;
  }
  // Warm-up with the same load (every connection thread, allocator arena and cache page the
  // run will use), then the RSS the run must stay within 5 % of.
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let k = 0; k < 20; k++) await one(100000 + c * 20 + k);
  }));
  // And a burst of 96 requests at once (some answered 503), so that every HTTP thread of the
  // server's pool (slots + queue + 4) has run once: a thread's stack pages stay resident after
  // its first request, and over a long run every thread gets one.
  await Promise.all(Array.from({ length: 96 }, () =>
    fetch(`${server.url}/v1/completions`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "warm", max_tokens: 4 }),
    }).then((r) => r.text())));
  await new Promise((r) => setTimeout(r, 300));
  const warm = rssKiB(pid);
  for (const k of Object.keys(stats)) stats[k] = 0;
  const started = Date.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let k = 0; k < perClient; k++) await one(c * perClient + k);
  }));
  const seconds = (Date.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 500));
  const after = rssKiB(pid);
  const health = await fetch(`${server.url}/health`);
  assert.equal(health.status, 200);
  const h = await health.json();
  console.log(`load: ${clients * perClient} requests in ${seconds.toFixed(1)} s by ${clients} clients:`,
    JSON.stringify(stats), `RSS after warm-up ${warm} KiB, after the run ${after} KiB`,
    `(${(100 * (after - warm) / warm).toFixed(2)} %)`);
  assert.equal(stats.fivexx, 0, "no 5xx");
  assert.equal(stats.other, 0, "no other status");
  assert.equal(stats.incomplete, 0, "every reply complete");
  assert.ok(stats.cancelled > 50, "some requests were cancelled mid-stream");
  assert.equal(stats.done + stats.cancelled, clients * perClient);
  if (process.env.MEMWALL_SANITIZED) {
    // AddressSanitizer quarantines freed memory: RSS measures its allocator, not memwall's.
    console.log("load: RSS check skipped in the sanitizer build");
  } else {
    assert.ok(Math.abs(after - warm) / warm <= 0.05, `RSS within 5 % of warm-up (${warm} -> ${after} KiB)`);
  }
  assert.equal(h.slots_processing, 0, "every slot is free again");
}

async function pageSuite(server) {
  const { chromium } = await need("playwright-core");
  const executablePath = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => {
    try { readFileSync(p); return true; } catch { return false; }
  });
  if (!executablePath) skip("Debian's chromium is not installed (scripts/install-deps --test installs it)");
  const browser = await chromium.launch({
    executablePath, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(server.url + "/");
    await page.fill("#input", "Tell me a story about a cat.");
    await page.click("#send");
    const reply = page.locator(".msg.assistant").last();
    await reply.locator(".text").filter({ hasText: /\S/ }).waitFor({ timeout: 30000 });
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: 30000 });
    const text = await reply.locator(".text").innerText();
    assert.ok(text.trim().length > 0, "the streamed reply appears");
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, "chat-page.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`page: reply of ${text.length} characters streamed; screenshot ${shot}`);
  } finally {
    await browser.close();
  }
}

// ---- Main ----------------------------------------------------------------------------------

const suites = { openai: openaiSuite, load: loadSuite, page: pageSuite };
if (!suites[suite]) {
  console.error(`unknown suite ${suite}`);
  process.exit(2);
}
if (suite === "page") await need("playwright-core");
else await need("openai");
const server = await startServer();
try {
  await suites[suite](server);
  if (suite === "openai") await apiKeySuite();
} catch (e) {
  console.error(e);
  console.error(server.log());
  server.child.kill("SIGKILL");
  process.exit(1);
}
await stopServer(server);
console.log(`${suite}: passed, and memwall serve exited 0 on SIGTERM`);
