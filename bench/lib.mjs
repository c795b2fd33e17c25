// What the side-by-side benchmark scripts share: running `memwall bench` and llama.cpp's
// llama-bench (native) or node-llama-cpp on one model, and reading a GGUF header for the
// multiply-accumulates one prompt token costs (to put prefill speed against the int8 peak).
import {execFileSync} from "node:child_process";
import {closeSync, openSync, readSync} from "node:fs";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));

export function run(cmd, args, env) {
    return execFileSync(cmd, args, {encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 26,
                                    env: env ? {...process.env, ...env} : process.env});
}

// memwall bench: {pp, tg} in tok/s and the bytes one decoded token reads. isa: MEMWALL_ISA or null.
export function memwallBench(bin, model, {threads, p, n, r, d = 0, isa = null}) {
    const args = ["bench", "-m", model, "-p", String(p), "-n", String(n), "-t", String(threads), "-r", String(r),
                  "--json", "--no-bandwidth"];
    if (d > 0) args.push("-d", String(d));
    const out = JSON.parse(run(bin, args, isa ? {MEMWALL_ISA: isa} : null));
    return {pp: out[0].pp_tok_s, tg: out[0].tg_tok_s, bytesPerToken: out[0].bytes_per_token, isa: out[0].isa};
}

// A native llama-bench build: {pp, tg} in tok/s.
export function llamaBench(bin, model, {threads, p, n, r, d = 0}) {
    const args = ["-m", model, "-p", String(p), "-n", String(n), "-t", String(threads), "-r", String(r), "-o", "json"];
    if (d > 0) args.push("-d", String(d));
    const out = JSON.parse(run(bin, args));
    const get = (nP, nG) => out.find(x => x.n_prompt === nP && x.n_gen === nG)?.avg_ts ?? 0;
    return {pp: p > 0 ? get(p, 0) : 0, tg: n > 0 ? get(0, n) : 0};
}

// node-llama-cpp's prebuilt llama.cpp (bench/llamacpp-bench.mjs): {pp, tg} in tok/s.
export function llamaNode(model, {threads, p, n, r}) {
    const out = run(process.execPath, [join(here, "llamacpp-bench.mjs"), "-m", model, "-p", String(p),
                                       "-n", String(n), "-t", String(threads), "-r", String(r)]);
    const res = JSON.parse(out.trim().split("\n").pop());
    return {pp: res.pp_tok_s, tg: res.tg_tok_s};
}

export const median = xs => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// ---- GGUF header ---------------------------------------------------------------------------

class Reader {
    constructor(path) { this.fd = openSync(path, "r"); this.pos = 0; this.buf = Buffer.alloc(0); this.base = 0; }
    need(n) {
        if (this.pos + n <= this.base + this.buf.length) return;
        const size = Math.max(n, 1 << 22);
        const b = Buffer.alloc(size);
        const got = readSync(this.fd, b, 0, size, this.pos);
        if (got < n) throw new Error("GGUF: truncated header");
        this.buf = b.subarray(0, got);
        this.base = this.pos;
    }
    u32() { this.need(4); const v = this.buf.readUInt32LE(this.pos - this.base); this.pos += 4; return v; }
    u64() { this.need(8); const v = Number(this.buf.readBigUInt64LE(this.pos - this.base)); this.pos += 8; return v; }
    str() { const n = this.u64(); this.need(n); const s = this.buf.toString("utf8", this.pos - this.base, this.pos - this.base + n); this.pos += n; return s; }
    skip(n) { this.pos += n; }
    close() { closeSync(this.fd); }
}

const scalarBytes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8};

function readValue(r, type) {
    if (type === 8) return r.str();
    if (type === 9) {
        const t = r.u32(), count = r.u64();
        if (t === 8) { for (let i = 0; i < count; i++) r.str(); return null; }
        if (t === 9) throw new Error("GGUF: nested arrays");
        r.skip(scalarBytes[t] * count);
        return null;
    }
    if (type === 4 || type === 5) return r.u32();
    if (type === 10 || type === 11) return r.u64();
    r.skip(scalarBytes[type]);
    return null;
}

// Multiply-accumulates per prompt token: every weight matrix of the layers once (experts: the
// ones a token is routed to), without the token embedding (a lookup) and the output matrix
// (prefill computes the logits of the last token only).
export function prefillMacsPerToken(path) {
    const r = new Reader(path);
    try {
        if (r.u32() !== 0x46554747) throw new Error(`${path}: not a GGUF file`);
        r.u32();
        const nTensors = r.u64(), nKv = r.u64();
        const kv = {};
        for (let i = 0; i < nKv; i++) {
            const key = r.str(), type = r.u32();
            kv[key] = readValue(r, type);
        }
        const arch = kv["general.architecture"];
        const nExpert = kv[`${arch}.expert_count`] || 0, nUsed = kv[`${arch}.expert_used_count`] || 0;
        let macs = 0;
        for (let i = 0; i < nTensors; i++) {
            const name = r.str(), nDims = r.u32();
            const dims = [];
            for (let k = 0; k < nDims; k++) dims.push(r.u64());
            r.u32();
            r.u64();
            if (!name.startsWith("blk.") || nDims < 2) continue;
            let m = dims[0] * dims[1];
            if (nDims === 3) m *= nExpert > 0 ? nUsed : dims[2];
            macs += m;
        }
        return macs;
    } finally {
        r.close();
    }
}
