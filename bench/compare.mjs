// Side-by-side speed of memwall and llama.cpp on the same GGUF files and thread counts. The
// engines run alternately (memwall, llama.cpp, memwall, ...), each in its own process, so both see
// the same machine state; the ratios of each round's pair are reported (this machine is noisy:
// compare ratios, not absolute numbers from different moments).
//
// usage: node compare.mjs [--memwall BIN] [--llama-bench BIN] [--no-node] [--isa SET] [-p 512]
//                         [-n 128] [-d 0] [-t 1,2] [-r 3] [--rounds 3] [--json] MODEL.gguf...
//   --llama-bench BIN  also (or with --no-node: only) a native llama-bench build as the peer
//   --isa SET          MEMWALL_ISA for memwall (avx2, avxvnni, avx512, ...: pin its kernel set)
//   -d N               N tokens already in the cache (llama-bench -d, memwall bench -d)
import {join} from "node:path";

import {here, llamaBench, llamaNode, median, memwallBench} from "./lib.mjs";

const opt = {memwall: join(here, "..", "build", "release", "bin", "memwall"), llamaBench: null, node: true,
             isa: null, p: 512, n: 128, d: 0, t: "1,2", r: 3, rounds: 3, json: false, models: []};
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
    else if (a.startsWith("-")) { console.error(`compare: unknown option ${a}`); process.exit(2); }
    else opt.models.push(a);
}
if (opt.models.length === 0 || (!opt.node && !opt.llamaBench)) {
    console.error("usage: bench/compare [--memwall BIN] [--llama-bench BIN] [--no-node] [--isa SET] [-p N] [-n N] [-d N] [-t 1,2] [-r N] [--rounds N] MODEL.gguf...");
    process.exit(2);
}

const peers = [];
if (opt.node) peers.push(["llama.cpp (node-llama-cpp 3.21.1)", (m, o) => llamaNode(m, o)]);
if (opt.llamaBench) peers.push(["llama.cpp (native llama-bench)", (m, o) => llamaBench(opt.llamaBench, m, o)]);

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
