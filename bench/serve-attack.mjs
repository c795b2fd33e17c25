// memwall serve (and llama-server, or an older memwall, beside it) under the attacks of issue 39,
// on loopback, one server at a time on the same model, threads and slots:
//   - keep-alive GET /health at one client: requests per second (target >= 5 000; was 37);
//   - 16 normal clients (short non-streamed completions): p50/p99 latency, unattacked and with
//     200 connections sending their header a byte a second (target: p99 <= 2x unattacked);
//   - chat throughput (requests/s) at 16 and 64 connections, unattacked.
// Usage (bench/serve-load --attack runs it):
//   node bench/serve-attack.mjs --memwall build/release/bin/memwall [--llama-server PATH]
//     [--baseline OLD_MEMWALL] [--model FILE.gguf] [-t 2] [--parallel 4] [--seconds 10]
//     [--rounds 3] [--json]
import { spawn } from "node:child_process";
import http from "node:http";
import { connect } from "node:net";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const memwall = option("--memwall", "build/release/bin/memwall");
const llamaServer = option("--llama-server", "");
const baseline = option("--baseline", "");
const threads = option("-t", "2");
const parallel = option("--parallel", "4");
const seconds = Number(option("--seconds", "10"));
const rounds = Number(option("--rounds", "3"));
const model = option("--model", new URL("../../shared/models/stories260K.gguf", import.meta.url).pathname);
const port = 18441;

function start(kind, bin) {
  const common = ["-m", model, "-t", threads, "--port", String(port), "-c", String(1024 * Number(parallel)),
    "--parallel", parallel, "--chat-template", "chatml"];
  const argv = kind === "llama-server" ? [...common, "--no-webui"] : ["serve", ...common];
  const child = spawn(bin, argv, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => { log += d; });
  child.stderr.on("data", (d) => { log += d; });
  const url = `http://127.0.0.1:${port}`;
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`${kind} exited with ${code}:\n${log.slice(-2000)}`)));
    const poll = async () => {
      try {
        if ((await fetch(`${url}/health`)).status === 200) return resolve({ kind, child, url });
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

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
};

// One client, one kept-alive connection, one request at a time (node:http: fetch's own
// overhead would be what is measured).
async function healthRate(server, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () => new Promise((resolve, reject) => {
    http.get(`${server.url}/health`, { agent }, (res) => {
      res.on("data", () => {});
      res.on("end", resolve);
    }).on("error", reject);
  });
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    await get();
    n++;
  }
  agent.destroy();
  return n / (ms / 1000);
}

// `clients` loops of short requests for `ms`; latencies of those answered 200, and the failures.
async function load(server, clients, ms, chat) {
  const lat = [];
  let failed = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; performance.now() < end; i++) {
      const body = chat
        ? { messages: [{ role: "user", content: `Story ${c}-${i}` }], max_tokens: 16 }
        : { prompt: `Once upon a time ${c}-${i}`, max_tokens: 8 };
      const t0 = performance.now();
      try {
        const r = await fetch(`${server.url}${chat ? "/v1/chat/completions" : "/v1/completions"}`, {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
          signal: AbortSignal.timeout(30000),
        });
        await r.arrayBuffer();
        if (r.status === 200) lat.push(performance.now() - t0); else failed++;
      } catch {
        failed++;
      }
    }
  }));
  return { lat, failed, rate: lat.length / (ms / 1000) };
}

// Connections that send a header a byte a second, reopened when the server closes them.
function slowloris(count) {
  const sockets = new Set();
  let stopped = false;
  const open = () => {
    if (stopped) return;
    const s = connect(port, "127.0.0.1", () => s.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    s.on("error", () => {});
    s.on("close", () => { sockets.delete(s); setTimeout(open, 100); });
    sockets.add(s);
  };
  for (let i = 0; i < count; i++) open();
  const timer = setInterval(() => { for (const s of sockets) s.write("a"); }, 1000);
  return () => { stopped = true; clearInterval(timer); for (const s of sockets) s.destroy(); };
}

async function measure(kind, bin) {
  const server = await start(kind, bin);
  try {
    await load(server, 4, 1000, false);  // warm-up
    const health = await healthRate(server, 3000);
    const calm = await load(server, 16, seconds * 1000, false);
    const end = slowloris(200);
    await new Promise((r) => setTimeout(r, 1000));
    const attacked = await load(server, 16, seconds * 1000, false);
    end();
    const chat16 = await load(server, 16, seconds * 1000, true);
    const chat64 = await load(server, 64, seconds * 1000, true);
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, "utf8"))[1]) * 1024;
    return {
      health_req_s: health,
      p50_ms: pct(calm.lat, 0.5), p99_ms: pct(calm.lat, 0.99), failed: calm.failed,
      attacked_p50_ms: pct(attacked.lat, 0.5), attacked_p99_ms: pct(attacked.lat, 0.99),
      attacked_failed: attacked.failed,
      chat16_req_s: chat16.rate, chat64_req_s: chat64.rate, rss_after_bytes: rss,
    };
  } finally {
    await stop(server);
  }
}

const servers = [["memwall", memwall]];
if (baseline) servers.push(["memwall (baseline)", baseline]);
if (llamaServer) servers.push(["llama-server", llamaServer]);
// Rounds alternate the servers' order (a shared machine drifts); each figure is the median.
const runs = Object.fromEntries(servers.map(([kind]) => [kind, []]));
for (let r = 0; r < rounds; r++) {
  for (const [kind, bin] of r % 2 ? [...servers].reverse() : servers) {
    const m = await measure(kind === "llama-server" ? kind : "memwall", bin);
    runs[kind].push(m);
    console.error(`round ${r + 1} ${kind}: ${JSON.stringify(m)}`);
  }
}
const results = {};
for (const [kind] of servers) {
  results[kind] = Object.fromEntries(Object.keys(runs[kind][0]).map((k) => [k, pct(runs[kind].map((m) => m[k]), 0.5)]));
}
console.log(`model ${model}, ${threads} threads, ${parallel} slots, ${seconds} s per phase, ${rounds} rounds (medians)`);
console.log("| server | /health keep-alive req/s | p99 ms | p99 under 200 slow conns ms | attacked / calm p99 | failed under attack | chat req/s at 16 | at 64 |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const [kind] of servers) {
  const r = results[kind];
  console.log(`| ${kind} | ${r.health_req_s.toFixed(0)} | ${r.p99_ms.toFixed(1)} | ${r.attacked_p99_ms.toFixed(1)} | ` +
    `${(r.attacked_p99_ms / r.p99_ms).toFixed(2)}x | ${r.attacked_failed} | ${r.chat16_req_s.toFixed(1)} | ${r.chat64_req_s.toFixed(1)} |`);
}
if (args.includes("--json")) console.log(JSON.stringify(results));
