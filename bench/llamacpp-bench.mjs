// Measures llama.cpp (the prebuilt library shipped by node-llama-cpp) the way `memwall bench`
// measures memwall: prompt processing of P tokens as one batch from an empty cache, then N
// single-token decode steps, R repetitions, CPU only. Prints one JSON object per thread count.
//
// usage: node llamacpp-bench.mjs -m MODEL [-p 512] [-n 128] [-t 1,2] [-r 3]
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

function parseArgs(argv) {
    const args = {p: 512, n: 128, t: [1], r: 3, m: null};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i], v = argv[i + 1];
        if (a === "-m") { args.m = v; i++; }
        else if (a === "-p") { args.p = Number(v); i++; }
        else if (a === "-n") { args.n = Number(v); i++; }
        else if (a === "-t") { args.t = v.split(",").map(Number); i++; }
        else if (a === "-r") { args.r = Number(v); i++; }
        else throw new Error(`unknown argument ${a}`);
    }
    if (!args.m) throw new Error("-m MODEL is required");
    return args;
}

function stats(xs) {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
    return {mean, sd};
}

const args = parseArgs(process.argv.slice(2));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: args.m, gpuLayers: 0});
for (const threads of args.t) {
    const context = await model.createContext({
        contextSize: args.p + args.n + 16,
        batchSize: Math.max(args.p, 1),
        threads: {ideal: threads, min: threads},
        sequences: 1,
    });
    const seq = context.getSequence();
    // Prompt tokens: deterministic pseudo-random ids in [3, 500), valid in every vocabulary (the
    // same ids memwall bench uses; which ids does not change the speed).
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const prompt = Array.from({length: args.p}, () => 3 + Math.floor(rand() * 497));
    const pp = [], tg = [];
    for (let rep = -1; rep < args.r; rep++) {  // rep -1: warm-up
        await seq.clearHistory();
        let t0 = process.hrtime.bigint();
        await seq.evaluateWithoutGeneratingNewTokens(prompt);
        const ppMs = Number(process.hrtime.bigint() - t0) / 1e6;
        await seq.clearHistory();
        // Decode: start from one token, then N single-token steps (greedy).
        let generated = 0;
        t0 = process.hrtime.bigint();
        for await (const token of seq.evaluate([prompt[0]], {temperature: 0})) {
            void token;
            if (++generated >= args.n) break;
        }
        const tgMs = Number(process.hrtime.bigint() - t0) / 1e6;
        if (rep >= 0) {
            pp.push(args.p / ppMs * 1000);
            tg.push(args.n / tgMs * 1000);
        }
    }
    const ps = stats(pp), ts = stats(tg);
    console.log(JSON.stringify({
        engine: "llama.cpp (node-llama-cpp 3.21.1)", model: args.m, threads,
        n_prompt: args.p, n_gen: args.n, reps: args.r,
        pp_tok_s: ps.mean, pp_tok_s_sd: ps.sd, tg_tok_s: ts.mean, tg_tok_s_sd: ts.sd,
    }));
    await context.dispose();
}
await model.dispose();
await llama.dispose();
