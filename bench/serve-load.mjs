// memwall serve against llama.cpp's llama-server, side by side on one GGUF file with the same
// threads and slots, driven by the same requests (issue 11's targets):
//   - decode tok/s of one stream, and of N concurrent streams in all (aggregate);
//   - a chat's second turn (same history + one new user message): time to first token against
//     the first turn's;
//   - idle RSS after start-up against the plan memwall prints (memwall only).
// Servers run one at a time, alternating, for --rounds rounds; the medians are reported, with
// ratios. Usage (bench/serve-load wraps it):
//   node bench/serve-load.mjs --memwall build/release/bin/memwall --llama-server PATH
//     [--model FILE.gguf] [-t 2] [--parallel 4] [-n 128] [--rounds 3] [--json]
import { spawn, execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
}
const memwall = option("--memwall", "build/release/bin/memwall");
const llamaServer = option("--llama-server", "");
const threads = Number(option("-t", "2"));
const parallel = Number(option("--parallel", "4"));
const nGen = Number(option("-n", "128"));
const rounds = Number(option("--rounds", "3"));
const perSlotCtx = 4096;
let model = option("--model", "");
if (!model) {
  model = join(tmpdir(), "memwall-serve-load-llama-3.2-1b-q4_k_m.gguf");
  if (!existsSync(model)) {
    console.error(`serve-load: writing ${model} (memwall synth --preset llama-3.2-1b --type Q4_K_M)`);
    execFileSync(memwall, ["synth", "--preset", "llama-3.2-1b", "--type", "Q4_K_M", "-o", model], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
}

// The same 200-word user message for every server (a chat history worth caching).
const words = "the memory wall caps decode speed at bandwidth over bytes read per token so".split(" ");
const longText = Array.from({ length: 200 }, (_, i) => words[(i * 7) % words.length]).join(" ");

function start(kind) {
  const common = ["-m", model, "-t", String(threads), "--port", String(kind === "memwall" ? 18431 : 18432),
    "-c", String(perSlotCtx * parallel)];
  const [bin, argv] = kind === "memwall"
    ? [memwall, ["serve", ...common, "--parallel", String(parallel), "--chat-template", "chatml"]]
    : [llamaServer, [...common, "--parallel", String(parallel), "--chat-template", "chatml",
      "--no-webui", "-b", "512"]];
  const child = spawn(bin, argv, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const url = `http://127.0.0.1:${kind === "memwall" ? 18431 : 18432}`;
  return new Promise((resolve, reject) => {
    const onData = (d) => { log += d; };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`${kind} exited with ${code}:\n${log.slice(-3000)}`)));
    const poll = async () => {
      try {
        const r = await fetch(`${url}/health`);
        if (r.status === 200) return resolve({ kind, child, url, log: () => log });
      } catch {}
      setTimeout(poll, 200);
    };
    poll();
  });
}

async function stop(server) {
  server.child.removeAllListeners("exit");
  const done = new Promise((r) => server.child.on("exit", r));
  server.child.kill("SIGTERM");
  await done;
}

// One streamed request; returns {ttft_ms, tokens, decode_s} (decode: after the first token).
async function stream(server, path, body) {
  const t0 = performance.now();
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true, temperature: 0 }),
  });
  if (res.status !== 200) throw new Error(`${server.kind} ${path}: ${res.status} ${await res.text()}`);
  let first = 0, last = 0, chunks = 0, buf = "";
  const decoder = new TextDecoder();
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const j = JSON.parse(ev.slice(6));
      const c = j.choices?.[0];
      const text = c?.text ?? c?.delta?.content ?? "";
      if (text === "" && !c?.finish_reason) continue;
      const now = performance.now();
      if (!first) first = now;
      last = now;
      chunks++;
    }
  }
  return { ttft_ms: first - t0, tokens: chunks, first, last };
}

const completion = (i) => ({ prompt: `Story ${i}: once upon a time`, max_tokens: nGen });

async function measure(server) {
  // Warm-up: one short request (pages in the weights).
  await stream(server, "/v1/completions", { prompt: "Hello", max_tokens: 8 });
  const rss_idle = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, "utf8"))[1]) * 1024;

  const one = await stream(server, "/v1/completions", completion(0));
  const single = (one.tokens - 1) / ((one.last - one.first) / 1000);

  const many = await Promise.all(Array.from({ length: parallel }, (_, i) => stream(server, "/v1/completions", completion(i + 1))));
  const startAll = Math.max(...many.map((m) => m.first));  // every stream decoding from here
  const endAll = Math.min(...many.map((m) => m.last));     // until the first one ends
  // Tokens each stream produced inside the window, assuming a steady rate within a stream.
  let inWindow = 0;
  for (const m of many) inWindow += (m.tokens - 1) * (endAll - startAll) / (m.last - m.first);
  const aggregate = inWindow / ((endAll - startAll) / 1000);

  const history = [
    { role: "system", content: "You are a helpful assistant." },
    { role: "user", content: longText },
  ];
  const turn1 = await stream(server, "/v1/chat/completions", { messages: history, max_tokens: 16 });
  // The reply as the server produced it is not needed: any assistant text works as long as
  // both servers get the same one, and the history's tokens are what is cached.
  const turn2 = await stream(server, "/v1/chat/completions", {
    messages: [...history, { role: "assistant", content: "Noted." }, { role: "user", content: "Say more." }],
    max_tokens: 16,
  });
  return { single, aggregate, ttft1: turn1.ttft_ms, ttft2: turn2.ttft_ms, rss_idle, log: server.log() };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kinds = ["memwall", ...(llamaServer ? ["llama-server"] : [])];
const results = Object.fromEntries(kinds.map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  for (const kind of r % 2 ? [...kinds].reverse() : kinds) {
    const server = await start(kind);
    try {
      const m = await measure(server);
      results[kind].push(m);
      console.error(`round ${r + 1} ${kind}: 1 stream ${m.single.toFixed(1)} tok/s, ${parallel} streams ` +
        `${m.aggregate.toFixed(1)} tok/s, TTFT ${m.ttft1.toFixed(0)} -> ${m.ttft2.toFixed(0)} ms, ` +
        `idle RSS ${(m.rss_idle / 2 ** 20).toFixed(1)} MiB`);
    } finally {
      await stop(server);
    }
  }
}

const summary = {};
for (const kind of kinds) {
  const rs = results[kind];
  summary[kind] = {
    single_tok_s: median(rs.map((m) => m.single)),
    aggregate_tok_s: median(rs.map((m) => m.aggregate)),
    ttft_first_ms: median(rs.map((m) => m.ttft1)),
    ttft_second_ms: median(rs.map((m) => m.ttft2)),
    idle_rss_bytes: median(rs.map((m) => m.rss_idle)),
  };
}
const mw = summary.memwall;
const unit = { KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 };
const planned = /planned peak ([0-9.]+) (KiB|MiB|GiB)/.exec(results.memwall[0].log);
if (planned) mw.planned_bytes = Number(planned[1]) * unit[planned[2]];
// The plan without the KV cache: its pages are taken only as slots hold tokens.
const idle = /idle ([0-9.]+) (KiB|MiB|GiB)/.exec(results.memwall[0].log);
if (idle) mw.planned_idle_bytes = Number(idle[1]) * unit[idle[2]];
console.log(`model ${model}, ${threads} threads, ${parallel} slots, ${nGen} tokens per request, ${rounds} rounds (medians)`);
console.log("| server | 1 stream tok/s | " + parallel + " streams tok/s | aggregate / single | TTFT turn 1 ms | turn 2 ms | turn 2 / turn 1 | idle RSS MiB |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const kind of kinds) {
  const s = summary[kind];
  console.log(`| ${kind} | ${s.single_tok_s.toFixed(1)} | ${s.aggregate_tok_s.toFixed(1)} | ` +
    `${(s.aggregate_tok_s / s.single_tok_s).toFixed(2)}x | ${s.ttft_first_ms.toFixed(0)} | ` +
    `${s.ttft_second_ms.toFixed(0)} | ${(100 * s.ttft_second_ms / s.ttft_first_ms).toFixed(0)} % | ` +
    `${(s.idle_rss_bytes / 2 ** 20).toFixed(1)} |`);
}
if (summary["llama-server"]) {
  console.log(`memwall / llama-server aggregate: ${(mw.aggregate_tok_s / summary["llama-server"].aggregate_tok_s).toFixed(2)}x, ` +
    `single: ${(mw.single_tok_s / summary["llama-server"].single_tok_s).toFixed(2)}x`);
}
if (mw.planned_idle_bytes) {
  console.log(`memwall idle RSS / planned idle: ${(mw.idle_rss_bytes / mw.planned_idle_bytes).toFixed(3)} ` +
    `(${(mw.idle_rss_bytes / 2 ** 20).toFixed(1)} MiB, planned ${(mw.planned_idle_bytes / 2 ** 20).toFixed(1)} MiB; ` +
    `planned peak with every slot's context full ${(mw.planned_bytes / 2 ** 20).toFixed(1)} MiB)`);
}
if (args.includes("--json")) console.log(JSON.stringify(summary));
