// Decode tok/s against the memory budget (docs/memory-budget.md): for each budget (a fraction of
// the file size), `memwall bench --mem-budget` runs inside a memory cgroup limited to that budget,
// alternating round by round with the unlimited run outside it; the page cache of the file is
// dropped before every run. Prints the table (ratios to the unlimited run, expert-cache hit rate,
// bytes read per token, the group's peak memory, OOM kills) and writes it as an SVG with
// `memwall plot`. Needs root (it makes a child of its own memory cgroup, and removes it).
//
//   bench/budget-curve [--memwall BIN] [-p 32] [-n 32] [-t 2] [--rounds 2] [--fractions 25,50,75,100]
//                      [--mmap-baseline] [--llamacpp] [--json] [--plot FILE.svg] MODEL.gguf
//
// Beside each measurement it prints what `memwall plan --device this --mem-budget` predicts for
// the same budget and context (plan/budget_plan.h), and the measured / predicted ratios: run
// `memwall probe --save --storage-dir DIR` first (DIR: the model's folder) so that the plan uses
// this machine's storage figure rather than an assumed one. In brackets: the plan's formula fed the
// bytes the run read per token instead of its uniform-routing hit rate, which separates the
// hit-rate model's error from the rest.
//
// --mmap-baseline adds, per budget, memwall without --mem-budget in the same cgroup (the mmap'd
// experts paged by the kernel: what the budget replaces). --llamacpp adds llama.cpp (node-llama-
// cpp's prebuilt library, bench/llamacpp-bench.mjs; `npm i` in bench/ first) in the same cgroup
// and unlimited, alternating with the others: the peer a user would otherwise run.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const opt = {memwall: "build/release/bin/memwall", p: 32, n: 32, t: "2", rounds: 2,
             fractions: [25, 50, 75, 100], baseline: false, llamacpp: false, json: false, plot: null, model: null};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
    const a = args[i], v = args[i + 1];
    if (a === "--memwall") { opt.memwall = v; i++; }
    else if (a === "-n") { opt.n = Number(v); i++; }
    else if (a === "-p") { opt.p = Number(v); i++; }
    else if (a === "-t") { opt.t = v; i++; }
    else if (a === "--rounds") { opt.rounds = Number(v); i++; }
    else if (a === "--fractions") { opt.fractions = v.split(",").map(Number); i++; }
    else if (a === "--mmap-baseline") opt.baseline = true;
    else if (a === "--llamacpp") opt.llamacpp = true;
    else if (a === "--json") opt.json = true;
    else if (a === "--plot") { opt.plot = v; i++; }
    else if (!a.startsWith("-") && !opt.model) opt.model = a;
    else { usage(); }
}
function usage() {
    console.error("usage: bench/budget-curve [--memwall BIN] [-p N] [-n N] [-t T] [--rounds N] [--fractions 25,50,75,100] [--mmap-baseline] [--llamacpp] [--json] [--plot FILE.svg] MODEL.gguf");
    process.exit(2);
}
if (!opt.model || opt.fractions.some(f => !(f > 0 && f <= 100)) || !(opt.n > 0) || !(opt.p > 0)) usage();
const size = statSync(opt.model).size;

// The memory cgroup this process is in (v1 memory controller, else v2), and a child of it.
function cgroupDir() {
    const lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
    for (const l of lines) {
        const [, ctrl, path] = l.match(/^\d+:([^:]*):(.*)$/) ?? [];
        if (ctrl?.split(",").includes("memory") && existsSync(`/sys/fs/cgroup/memory${path}`))
            return {dir: `/sys/fs/cgroup/memory${path}`, limit: "memory.limit_in_bytes", peak: "memory.max_usage_in_bytes", reset: "memory.max_usage_in_bytes", events: "memory.oom_control"};
    }
    const v2 = lines.find(l => l.startsWith("0::"));
    if (v2 && existsSync("/sys/fs/cgroup/cgroup.controllers"))
        return {dir: `/sys/fs/cgroup${v2.slice(3)}`, limit: "memory.max", peak: "memory.peak", reset: null, events: "memory.events"};
    throw new Error("no memory cgroup found in /proc/self/cgroup");
}
const parent = cgroupDir();
const group = join(parent.dir, `memwall-budget-curve-${process.pid}`);
mkdirSync(group);
process.on("exit", () => { try { rmdirSync(group); } catch {} });
process.on("SIGINT", () => process.exit(130));
const cg = (f) => join(group, f);
const readNum = (f) => { try { return Number(readFileSync(cg(f), "utf8").trim().split("\n")[0]); } catch { return 0; } };
const oomKills = () => { try { return Number(readFileSync(cg(parent.events), "utf8").match(/oom_kill (\d+)/)?.[1] ?? 0); } catch { return 0; } };

function dropCache() {
    // GNU dd: iflag=nocache with count=0 drops the whole file from the page cache.
    spawnSync("dd", [`if=${opt.model}`, "iflag=nocache", "count=0", "status=none"]);
}

// Runs `cmd args` (the page cache of the model dropped first), inside the group limited to `limit`
// when it is set; the group's OOM kills and peak memory of that run beside spawnSync's result.
function spawnInGroup(limit, cmd, args, options) {
    dropCache();
    let argv = args;
    if (limit) {
        writeFileSync(cg(parent.limit), String(limit));
        if (parent.reset) writeFileSync(cg(parent.reset), "0");
        argv = ["-c", `echo $$ > ${cg("cgroup.procs")} && exec "$0" "$@"`, cmd, ...args];
        cmd = "sh";
    }
    const before = limit ? oomKills() : 0;
    const r = spawnSync(cmd, argv, {encoding: "utf8", maxBuffer: 1 << 26, ...options});
    return {r, oom: limit ? oomKills() - before : 0, peak: limit ? readNum(parent.peak) : 0};
}

// One `memwall bench` decode run: in the group when `limit`, with --mem-budget when `budget`.
function bench(limit, budget) {
    // A prompt of -p tokens: bench decodes them in turn (one repeated token would route to the
    // same experts every step).
    const a = ["bench", "-m", opt.model, "-p", String(opt.p), "-n", String(opt.n), "-t", opt.t, "-r", "1", "--json", "--no-bandwidth"];
    if (budget) a.push("--mem-budget", String(budget));
    const {r, oom, peak} = spawnInGroup(limit, opt.memwall, a);
    const out = {ok: r.status === 0, status: r.status, signal: r.signal, oom, peak, tg: 0, hit: null, read_per_token: null};
    if (out.ok) {
        const j = JSON.parse(r.stdout)[0];
        out.tg = j.tg_tok_s;
        out.peak_rss = j.peak_rss_bytes;
        // The expert cache of a MoE model, or a dense model's stream of layers: the same counters.
        const c = j.expert_cache ?? j.layer_stream;
        if (c) {
            out.hit = c.tg_acquires ? (c.tg_hits + c.tg_prefetched) / c.tg_acquires : null;
            out.prefetch = c.tg_acquires ? c.tg_prefetched / c.tg_acquires : null;
            if (j.expert_cache) out.guess = c.tg_predictable ? c.tg_predicted / c.tg_predictable : null;
            out.read_per_token = c.tg_bytes_read_per_token;
            out.slots = c.slots;
            out.experts = c.experts_total ?? c.n_layer;
        }
    } else {
        out.err = (r.stderr ?? "").trim().split("\n").slice(-1)[0];
    }
    return out;
}

// One llama.cpp decode run of the same shape (first thread count only), in the group when `limit`.
function llamacpp(limit) {
    const script = new URL("./llamacpp-bench.mjs", import.meta.url).pathname;
    const a = [script, "-m", opt.model, "-p", String(opt.p), "-n", String(opt.n), "-t", opt.t.split(",")[0], "-r", "1"];
    const {r, oom, peak} = spawnInGroup(limit, process.execPath, a, {timeout: 600e3});
    const out = {ok: r.status === 0, oom, peak, tg: 0};
    if (out.ok) out.tg = JSON.parse(r.stdout.trim().split("\n").pop()).tg_tok_s;
    else out.err = (r.stderr ?? "").trim().split("\n").slice(-1)[0] || `status ${r.status} ${r.signal ?? ""}`;
    return out;
}

const median = (xs) => { const s = xs.filter(x => x != null).sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : null; };
const rows = [];
for (const f of opt.fractions) {
    const limit = Math.floor(size * f / 100);
    const runs = {unlimited: [], budget: [], mmap: [], llama: [], llama_unlimited: []};
    for (let round = 0; round < opt.rounds; round++) {
        runs.unlimited.push(bench(0, 0));
        runs.budget.push(bench(limit, limit));
        if (opt.baseline) runs.mmap.push(bench(limit, 0));
        if (opt.llamacpp) {
            runs.llama_unlimited.push(llamacpp(0));
            runs.llama.push(llamacpp(limit));
        }
    }
    const ok = (rs) => rs.filter(r => r.ok);
    const row = {fraction: f, limit, file: size,
        unlimited_tg: median(ok(runs.unlimited).map(r => r.tg)),
        budget_tg: median(ok(runs.budget).map(r => r.tg)),
        budget_failures: runs.budget.filter(r => !r.ok).map(r => r.err ?? `status ${r.status} ${r.signal ?? ""}`),
        oom_kills: runs.budget.reduce((s, r) => s + r.oom, 0),
        peak: Math.max(...runs.budget.map(r => r.peak)),
        hit: median(ok(runs.budget).map(r => r.hit)),
        prefetch: median(ok(runs.budget).map(r => r.prefetch)),
        guess: median(ok(runs.budget).map(r => r.guess)),
        read_per_token: median(ok(runs.budget).map(r => r.read_per_token)),
        slots: ok(runs.budget)[0]?.slots, experts: ok(runs.budget)[0]?.experts};
    if (opt.baseline) {
        row.mmap_tg = median(ok(runs.mmap).map(r => r.tg));
        row.mmap_oom_kills = runs.mmap.reduce((s, r) => s + r.oom, 0);
    }
    if (opt.llamacpp) {
        row.llama_unlimited_tg = median(ok(runs.llama_unlimited).map(r => r.tg));
        row.llama_tg = median(ok(runs.llama).map(r => r.tg));
        row.llama_oom_kills = runs.llama.reduce((s, r) => s + r.oom, 0);
        row.llama_failures = runs.llama.filter(r => !r.ok).map(r => r.err);
        row.llama_peak = Math.max(...runs.llama.map(r => r.peak));
        row.vs_llama = row.budget_tg && row.llama_tg ? row.budget_tg / row.llama_tg : null;
    }
    row.ratio = row.budget_tg && row.unlimited_tg ? row.budget_tg / row.unlimited_tg : null;
    rows.push(row);
}

// The plan's prediction for a budget, with bench's context (prompt + generated + 8), batch (the
// prompt) and threads.
function planFor(limit) {
    const a = ["plan", "-m", opt.model, "--device", "this", "--mem-budget", String(limit), "--best",
               "-c", String(opt.p + opt.n + 8), "-b", String(opt.p), "--json"];
    if (opt.t !== "auto") a.push("-t", opt.t);
    const r = spawnSync(opt.memwall, a, {encoding: "utf8", maxBuffer: 1 << 26});
    if (r.status !== 0) return {err: (r.stderr ?? "").trim().split("\n").slice(-1)[0]};
    const plan = JSON.parse(r.stdout);
    const b = plan.budget_rows[0];
    return {fits: b.fits, refusal: b.refusal, tg: b.decode_tok_s, in_ram_tg: b.in_ram_decode_tok_s,
            hit: b.hit_rate, read_per_token: b.storage_bytes_per_token, slots: b.cache_slots,
            storage_assumed: b.storage_assumed, storage: b.storage_source,
            ram_s: b.ram_seconds_per_token, storage_rate: b.storage_bytes_per_s, layers: b.streams_layers};
}
// The plan's speed formula fed the reads the run measured instead of its uniform-routing guess:
// what is left of the gap is the formula's (and the storage rate's), not the hit-rate model's.
function planAtMeasuredReads(row) {
    const p = row.plan;
    if (!p.fits || row.read_per_token == null || !(p.ram_s > 0)) return null;
    const read_s = p.storage_rate > 0 ? row.read_per_token / p.storage_rate : 0;
    return 1 / (p.layers ? Math.max(p.ram_s, read_s) : p.ram_s + read_s);
}
for (const row of rows) {
    row.plan = planFor(row.limit);
    row.measured_vs_plan = row.budget_tg && row.plan.tg ? row.budget_tg / row.plan.tg : null;
    row.unlimited_vs_plan = row.unlimited_tg && row.plan.in_ram_tg ? row.unlimited_tg / row.plan.in_ram_tg : null;
    row.plan_at_measured_reads = planAtMeasuredReads(row);
    row.measured_vs_plan_at_reads = row.budget_tg && row.plan_at_measured_reads ? row.budget_tg / row.plan_at_measured_reads : null;
}

const mib = (b) => (b / 1048576).toFixed(0);
const pct = (x) => x == null ? "-" : (100 * x).toFixed(0) + " %";
if (opt.json) {
    console.log(JSON.stringify(rows, null, 2));
} else {
    console.log(`${basename(opt.model)}: ${mib(size)} MiB; decode tg${opt.n}, -t ${opt.t}, median of ${opt.rounds} alternating rounds; page cache dropped before each run`);
    console.log("budget       limit   unlimited   budget  ratio  slots      hit  prefetch  guess  read/token  peak (cgroup)  OOM" + (opt.baseline ? "  mmap in cgroup" : ""));
    for (const r of rows) {
        const fails = r.budget_failures.length ? `  FAILED: ${r.budget_failures.join("; ")}` : "";
        console.log(`${String(r.fraction).padStart(4)} %  ${mib(r.limit).padStart(7)} MiB ${(r.unlimited_tg ?? 0).toFixed(2).padStart(9)} ${(r.budget_tg ?? 0).toFixed(2).padStart(8)} ${(r.ratio ?? 0).toFixed(2).padStart(6)} ${String(r.slots ?? "-").padStart(3)}/${String(r.experts ?? "-").padEnd(4)} ${pct(r.hit).padStart(6)} ${pct(r.prefetch).padStart(9)} ${pct(r.guess).padStart(6)} ${r.read_per_token == null ? "-" : (mib(r.read_per_token) + " MiB").padStart(10)} ${(mib(r.peak) + " MiB").padStart(14)} ${String(r.oom_kills).padStart(4)}` +
                    (opt.baseline ? `  ${(r.mmap_tg ?? 0).toFixed(2)} tok/s, ${r.mmap_oom_kills} OOM` : "") + fails);
    }
    if (opt.llamacpp) {
        console.log("\nllama.cpp in the same cgroup (no budget flag: it maps the file and the kernel pages it):");
        console.log("budget   llama.cpp unlimited  llama.cpp in cgroup  OOM  peak (cgroup)  memwall --mem-budget / llama.cpp in cgroup");
        for (const r of rows) {
            const fails = r.llama_failures.length ? `  FAILED: ${r.llama_failures.join("; ")}` : "";
            console.log(`${String(r.fraction).padStart(4)} %  ${(r.llama_unlimited_tg ?? 0).toFixed(2).padStart(19)} ${(r.llama_tg ?? 0).toFixed(2).padStart(20)} ${String(r.llama_oom_kills).padStart(4)} ${(mib(r.llama_peak) + " MiB").padStart(14)}  ${r.vs_llama == null ? "-" : r.vs_llama.toFixed(2) + "x"}${fails}`);
        }
    }
    console.log("ratio = budget run / unlimited run (decode tok/s); hit = experts found in the cache (incl. prefetched); guess = experts used that the next-layer router prediction named");
    console.log("\nplan's prediction (memwall plan --device this --mem-budget LIMIT, the same context and threads):");
    console.log("budget   plan slots  plan hit  plan read/token  plan tok/s  measured/plan  (unlimited: plan, measured/plan)  [at the measured reads: plan, measured/plan]");
    for (const r of rows) {
        const p = r.plan;
        if (p.err || !p.fits) {
            console.log(`${String(r.fraction).padStart(4)} %  ${p.err ? "plan failed: " + p.err : "refused: " + p.refusal}`);
            continue;
        }
        console.log(`${String(r.fraction).padStart(4)} %  ${String(p.slots).padStart(10)} ${pct(p.hit).padStart(9)} ${(mib(p.read_per_token) + " MiB").padStart(16)} ${p.tg.toFixed(2).padStart(11)} ${(r.measured_vs_plan ?? 0).toFixed(2).padStart(14)}  (${p.in_ram_tg.toFixed(2)}, ${(r.unlimited_vs_plan ?? 0).toFixed(2)})` +
                    (r.plan_at_measured_reads ? `  [${r.plan_at_measured_reads.toFixed(2)}, ${r.measured_vs_plan_at_reads.toFixed(2)}]` : ""));
    }
    if (rows[0]?.plan?.storage) console.log(`storage: ${rows[0].plan.storage_assumed ? "" : ""}${rows[0].plan.storage}`);
}

if (opt.plot) {
    const groups = rows.map(r => `${r.fraction} %\n${mib(r.limit)} MiB`);
    const series = [{name: "unlimited", values: rows.map(r => r.unlimited_tg)},
                    {name: "--mem-budget, in a cgroup of it", values: rows.map(r => r.budget_tg)}];
    if (opt.baseline) series.push({name: "no budget, same cgroup", values: rows.map(r => r.mmap_tg)});
    if (opt.llamacpp) series.push({name: "llama.cpp, same cgroup", values: rows.map(r => r.llama_tg)});
    const spec = {chart: "bars", title: `decode tok/s against the memory budget: ${basename(opt.model)}`,
        subtitle: [`${mib(size)} MiB file; tg${opt.n}, -t ${opt.t}, median of ${opt.rounds} alternating rounds, page cache dropped before each run`],
        footer: ["budget / unlimited: " + rows.map(r => `${r.fraction} % x${(r.ratio ?? 0).toFixed(2)} (hit ${pct(r.hit)})`).join("; ")],
        panels: [{title: "decode", y_label: "decode (tok/s)", groups, series}]};
    const dir = mkdtempSync(join(tmpdir(), "memwall-budget-curve-"));
    try {
        writeFileSync(join(dir, "bars.json"), JSON.stringify(spec));
        execFileSync(opt.memwall, ["plot", join(dir, "bars.json"), "-o", opt.plot], {stdio: "inherit"});
    } finally {
        rmSync(dir, {recursive: true, force: true});
    }
    if (!opt.json) console.log(`chart: ${opt.plot}`);
}
