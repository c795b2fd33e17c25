// Side-by-side speed of memwall and llama.cpp on the same GGUF files and thread counts. The
// engines run alternately (memwall, llama.cpp, memwall, ...), each in its own process, so both see
// the same machine state; the ratios of each round's pair are reported (this machine is noisy:
// compare ratios, not absolute numbers from different moments).
//
// usage: node compare.mjs [--memwall BIN] [--llama-bench BIN] [--no-node] [--isa ISA] [-p 512]
//                         [-n 128] [-d 0] [-t 1,2] [-r 3] [--rounds 3] [--json] [--plot FILE.svg]
//                         MODEL.gguf...
// --no-node leaves out node-llama-cpp (then --llama-bench names the only peer); --isa sets
// MEMWALL_ISA for memwall's runs; -d is the context depth the measurement starts at.
// --plot draws the medians as bars with `memwall plot` (the chart code is the library's).
import {mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {basename, join} from "node:path";
import {here, llamaBench, llamaNode, median, memwallBench, run} from "./lib.mjs";

const opt = {memwall: join(here, "..", "build", "release", "bin", "memwall"), llamaBench: null,
             p: 512, n: 128, d: 0, t: "1,2", r: 3, rounds: 3, json: false, plot: null, node: true, isa: null,
             models: []};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === "--memwall") { opt.memwall = v; i++; }
    else if (a === "--llama-bench") { opt.llamaBench = v; i++; }
    else if (a === "--no-node") { opt.node = false; }
    else if (a === "--isa") { opt.isa = v; i++; }
    else if (a === "-p") { opt.p = Number(v); i++; }
    else if (a === "-n") { opt.n = Number(v); i++; }
    else if (a === "-d") { opt.d = Number(v); i++; }
    else if (a === "-t") { opt.t = v; i++; }
    else if (a === "-r") { opt.r = Number(v); i++; }
    else if (a === "--rounds") { opt.rounds = Number(v); i++; }
    else if (a === "--json") { opt.json = true; }
    else if (a === "--plot") { opt.plot = v; i++; }
    else if (a.startsWith("-")) { console.error(`compare: unknown option ${a}`); process.exit(2); }
    else opt.models.push(a);
}
if (opt.models.length === 0) {
    console.error("usage: bench/compare [--memwall BIN] [--llama-bench BIN] [--no-node] [--isa ISA] [-p N] [-d N] [-n N] [-t 1,2] [-r N] [--rounds N] [--json] [--plot FILE.svg] MODEL.gguf...");
    process.exit(2);
}

const peers = [];
if (opt.node) peers.push(["llama.cpp (node-llama-cpp 3.21.1)", (m, o) => llamaNode(m, o)]);
if (opt.llamaBench) peers.push(["llama.cpp (native llama-bench)", (m, o) => llamaBench(opt.llamaBench, m, o)]);
if (peers.length === 0) {
    console.error("compare: no peer to compare with (--no-node without --llama-bench)");
    process.exit(2);
}

const results = [];
for (const model of opt.models) {
    for (const threads of opt.t.split(",").map(Number)) {
        const o = {threads, p: opt.p, n: opt.n, r: opt.r, d: opt.d, isa: opt.isa};
        const rounds = [];
        for (let k = 0; k < opt.rounds; k++) {
            const round = {memwall: memwallBench(opt.memwall, model, o)};
            for (const [name, fn] of peers) round[name] = fn(model, o);
            rounds.push(round);
            if (!opt.json) process.stderr.write(`  ${model} t=${threads} round ${k + 1}/${opt.rounds}: memwall pp ${round.memwall.pp.toFixed(1)} tg ${round.memwall.tg.toFixed(2)}` +
                peers.map(([name]) => ` | ${name.split(" ")[0]} pp ${round[name].pp.toFixed(1)} tg ${round[name].tg.toFixed(2)}`).join("") + "\n");
        }
        for (const [name] of peers) {
            const r = {model, threads, peer: name, isa: opt.isa, n_prompt: opt.p, n_gen: opt.n, n_depth: opt.d, rounds: opt.rounds,
                       memwall_pp: median(rounds.map(x => x.memwall.pp)), memwall_tg: median(rounds.map(x => x.memwall.tg)),
                       peer_pp: median(rounds.map(x => x[name].pp)), peer_tg: median(rounds.map(x => x[name].tg)),
                       pp_ratio: median(rounds.map(x => x.memwall.pp / x[name].pp)),
                       tg_ratio: median(rounds.map(x => x.memwall.tg / x[name].tg))};
            results.push(r);
        }
    }
}
if (opt.json) {
    console.log(JSON.stringify(results, null, 2));
} else {
    const pad = (s, n) => String(s).padStart(n);
    console.log(`\n${"model".padEnd(44)} ${pad("thr", 3)} ${pad("memwall pp", 11)} ${pad("peer pp", 9)} ${pad("ratio", 6)} ${pad("memwall tg", 11)} ${pad("peer tg", 9)} ${pad("ratio", 6)}  peer`);
    for (const r of results) {
        const m = r.model.length > 44 ? "..." + r.model.slice(-41) : r.model;
        console.log(`${m.padEnd(44)} ${pad(r.threads, 3)} ${pad(r.memwall_pp.toFixed(1), 11)} ${pad(r.peer_pp.toFixed(1), 9)} ${pad(r.pp_ratio.toFixed(2), 6)} ${pad(r.memwall_tg.toFixed(2), 11)} ${pad(r.peer_tg.toFixed(2), 9)} ${pad(r.tg_ratio.toFixed(2), 6)}  ${r.peer}`);
    }
    console.log(`\nratios are medians over ${opt.rounds} alternating rounds (memwall / peer; > 1 means memwall is faster)`);
}

// Bars of the medians: prompt and decode tok/s per model and thread count, memwall beside each peer.
function plot(file) {
    const groups = [];
    const keys = [];
    for (const r of results) {
        const key = `${r.model}|${r.threads}`;
        if (!keys.includes(key)) { keys.push(key); groups.push(`${basename(r.model, ".gguf")}\nt=${r.threads}`); }
    }
    const value = (peer, field) => keys.map(k => results.find(r => `${r.model}|${r.threads}` === k && (peer === null || r.peer === peer))?.[field] ?? null);
    const panel = (title, y, mine, theirs) => ({title, y_label: y, groups,
        series: [{name: "memwall", values: value(null, mine)}, ...peers.map(([name]) => ({name, values: value(name, theirs)}))]});
    const ratios = results.map(r => `${basename(r.model, ".gguf")} t=${r.threads}: pp x${r.pp_ratio.toFixed(2)}, tg x${r.tg_ratio.toFixed(2)} vs ${r.peer.match(/\((.*)\)/)?.[1] ?? r.peer}`);
    const spec = {chart: "bars", title: "memwall against llama.cpp, same files, same threads",
        subtitle: [`median of ${opt.rounds} alternating rounds of ${opt.r} repetitions; prompt pp${opt.p} d0, decode tg${opt.n} d0, kv f16, no sampler`],
        footer: ["ratio memwall / peer (> 1: memwall faster): " + ratios.join("; ")],
        panels: [panel(`prompt processing (pp${opt.p})`, "prompt (tok/s)", "memwall_pp", "peer_pp"),
                 panel(`decode (tg${opt.n})`, "decode (tok/s)", "memwall_tg", "peer_tg")]};
    const dir = mkdtempSync(join(tmpdir(), "memwall-compare-"));
    try {
        writeFileSync(join(dir, "bars.json"), JSON.stringify(spec));
        run(opt.memwall, ["plot", join(dir, "bars.json"), "-o", file]);
    } finally {
        rmSync(dir, {recursive: true, force: true});
    }
    if (!opt.json) console.log(`chart: ${file}`);
}
if (opt.plot) plot(opt.plot);
