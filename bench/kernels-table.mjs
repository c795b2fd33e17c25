// The kernel layer's side-by-side table (issue 14) in one run: memwall against native llama.cpp
// and, with MEMWALL_ISA pinning the AVX2 (and AVX-VNNI) set, against llama.cpp built for AVX2
// only; decode at depth; the 8B shape's decode against the probe's read bandwidth; prefill
// against the probe's int8 peak. Engines alternate within each round (memwall, llama.cpp, ...),
// medians over the rounds; ratios are memwall / llama.cpp.
//
// usage: node kernels-table.mjs --llama-native BIN [--llama-avx2 BIN] [--models DIR]
//            [--memwall BIN] [-t 1,2] [-r 3] [--rounds 2] [--skip 8b,depth,avx2,native] [--json]
import {existsSync, mkdtempSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";

import {here, llamaBench, median, memwallBench, prefillMacsPerToken, run} from "./lib.mjs";

const opt = {memwall: join(here, "..", "build", "release", "bin", "memwall"), native: null, avx2: null,
             models: "/work/models", t: "1,2", r: 3, rounds: 2, skip: new Set(), json: false};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === "--memwall") { opt.memwall = v; i++; }
    else if (a === "--llama-native") { opt.native = v; i++; }
    else if (a === "--llama-avx2") { opt.avx2 = v; i++; }
    else if (a === "--models") { opt.models = v; i++; }
    else if (a === "-t") { opt.t = v; i++; }
    else if (a === "-r") { opt.r = Number(v); i++; }
    else if (a === "--rounds") { opt.rounds = Number(v); i++; }
    else if (a === "--skip") { opt.skip = new Set(v.split(",")); i++; }
    else if (a === "--json") { opt.json = true; }
    else { console.error(`kernels-table: unknown argument ${a}`); process.exit(2); }
}
if (!opt.native) {
    console.error("usage: bench/kernels-table --llama-native BIN [--llama-avx2 BIN] [--models DIR] [-t 1,2] [-r 3] [--rounds 2] [--skip 8b,depth,avx2,native]");
    process.exit(2);
}
const threadCounts = opt.t.split(",").map(Number);
const log = s => process.stderr.write(s + "\n");

// ---- Models (synthesized on first use) -------------------------------------------------------

const oneB = ["Q4_K_M", "Q4_0", "Q8_0", "Q6_K", "Q5_K_M"].map(type => ({
    label: `1B-shape ${type}`, preset: "llama-3.2-1b", type, file: `l1b-${type.toLowerCase()}.gguf`}));
const moe = {label: "8x top-2 MoE Q4_K_M", preset: "mixtral-small-moe", type: "Q4_K_M", file: "moe-q4_k_m.gguf"};
const eightB = {label: "8B-shape Q4_K_M", preset: "llama-3.1-8b", type: "Q4_K_M", file: "l8b-q4_k_m.gguf"};

function ensure(m) {
    const path = join(opt.models, m.file);
    if (!existsSync(path)) {
        log(`synthesizing ${path} (${m.preset} ${m.type})`);
        run(opt.memwall, ["synth", "--preset", m.preset, "--type", m.type, "-o", path]);
    }
    return {...m, path, macs: prefillMacsPerToken(path)};
}

// ---- The machine: read bandwidth and int8 peak per thread count ------------------------------

const cacheDir = mkdtempSync(join(tmpdir(), "memwall-table-"));
const probe = {};
for (const t of threadCounts) {
    const p = JSON.parse(run(opt.memwall, ["probe", "--json", "-t", String(t), "--seconds", "4"], {XDG_CACHE_HOME: cacheDir}));
    probe[t] = {bw: p.read_bandwidth_bytes_per_s, peak: (p.int8_peak_gmacs ?? 0) * 1e9, set: p.kernel_set ?? "?",
                buffer: p.bandwidth_buffer_bytes};
    log(`probe t=${t}: read ${(probe[t].bw / 1e9).toFixed(1)} GB/s (${(probe[t].buffer / 2 ** 20).toFixed(0)} MiB arrays), int8 peak ${(probe[t].peak / 1e9).toFixed(1)} GMAC/s (${probe[t].set})`);
}

// ---- Measurements ---------------------------------------------------------------------------

const rows = [];
function measure(section, m, peerName, peerBin, {isa = null, p = 512, n = 128, d = 0} = {}) {
    for (const threads of threadCounts) {
        const o = {threads, p, n, r: opt.r, d, isa};
        const rounds = [];
        for (let k = 0; k < opt.rounds; k++) {
            const mw = memwallBench(opt.memwall, m.path, o);
            const peer = llamaBench(peerBin, m.path, o);
            rounds.push({mw, peer});
            log(`  ${section} ${m.label} t=${threads} round ${k + 1}: memwall pp ${mw.pp.toFixed(1)} tg ${mw.tg.toFixed(2)} | ${peerName} pp ${peer.pp.toFixed(1)} tg ${peer.tg.toFixed(2)}`);
        }
        const mwPp = median(rounds.map(x => x.mw.pp)), mwTg = median(rounds.map(x => x.mw.tg));
        const bytes = rounds[0].mw.bytesPerToken;
        // The peak was measured with the best set; a pinned set is compared with its own peak
        // only when it is the best set (else the column stays empty).
        const peakSet = isa === null || isa === probe[threads].set;
        rows.push({section, model: m.label, threads, isa: isa ?? probe[threads].set, peer: peerName, depth: d,
                   memwall_pp: mwPp, peer_pp: median(rounds.map(x => x.peer.pp)),
                   pp_ratio: p > 0 ? median(rounds.map(x => x.mw.pp / x.peer.pp)) : null,
                   memwall_tg: mwTg, peer_tg: median(rounds.map(x => x.peer.tg)),
                   tg_ratio: n > 0 ? median(rounds.map(x => x.mw.tg / x.peer.tg)) : null,
                   pp_of_peak: p > 0 && peakSet && probe[threads].peak > 0 ? mwPp * m.macs / probe[threads].peak : null,
                   tg_gb_s: mwTg * bytes / 1e9,
                   tg_of_bw: n > 0 ? mwTg * bytes / probe[threads].bw : null});
    }
}

const models = [...oneB, moe].map(ensure);
if (!opt.skip.has("native")) {
    for (const m of models) measure("native", m, "llama.cpp native", opt.native);
}
if (!opt.skip.has("avx2") && opt.avx2) {
    const cpu = JSON.parse(run(opt.memwall, ["probe", "--json", "--no-measure"], {XDG_CACHE_HOME: cacheDir})).system.simd;
    for (const m of models) measure("avx2", m, "llama.cpp AVX2", opt.avx2, {isa: "avx2"});
    if (cpu.includes("AVX_VNNI")) {
        for (const m of models) measure("avxvnni", m, "llama.cpp AVX2", opt.avx2, {isa: "avxvnni"});
    }
}
if (!opt.skip.has("depth")) {
    for (const m of models.slice(0, 2)) {
        measure("depth", m, "llama.cpp native", opt.native, {p: 0, n: 128, d: 4096});
    }
}
if (!opt.skip.has("8b")) {
    measure("8b", ensure(eightB), "llama.cpp native", opt.native, {p: 128, n: 64});
}

// ---- Report -----------------------------------------------------------------------------------

if (opt.json) {
    console.log(JSON.stringify({probe, rows}, null, 2));
    process.exit(0);
}
const f = (v, d = 1) => v === null || v === undefined || !isFinite(v) ? "—" : v.toFixed(d);
const pct = v => v === null || v === undefined ? "—" : `${(100 * v).toFixed(0)} %`;
for (const t of threadCounts) {
    console.log(`probe, ${t} thread(s): read bandwidth ${(probe[t].bw / 1e9).toFixed(1)} GB/s, int8 peak ${(probe[t].peak / 1e9).toFixed(1)} GMAC/s (${probe[t].set})`);
}
console.log("");
console.log("| section | model | thr | set | memwall pp | llama.cpp pp | ratio | memwall tg | llama.cpp tg | ratio | pp % of int8 peak | tg GB/s (% of read bw) |");
console.log("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) {
    const sec = r.depth > 0 ? `${r.section} (-d ${r.depth})` : r.section;
    console.log(`| ${sec} | ${r.model} | ${r.threads} | ${r.isa} | ${f(r.memwall_pp)} | ${f(r.peer_pp)} | ${f(r.pp_ratio, 2)} | ${f(r.memwall_tg, 2)} | ${f(r.peer_tg, 2)} | ${f(r.tg_ratio, 2)} | ${pct(r.pp_of_peak)} | ${f(r.tg_gb_s)} (${pct(r.tg_of_bw)}) |`);
}
console.log(`\nmedians over ${opt.rounds} alternating rounds of -r ${opt.r}; ratios memwall / llama.cpp (> 1: memwall faster)`);
