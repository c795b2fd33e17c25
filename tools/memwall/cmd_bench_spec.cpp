// memwall bench --spec-type mtp|ngram runs the same comparison with a real drafter (its
// acceptance measured; "expected" is what that acceptance would give if independent per token).
// memwall bench --draft-oracle P: the speed-up speculative decoding gives the engine at a given
// acceptance, measured on any model (random weights too, where real drafts accept nothing). A
// measurement device, not a way to decode: each repetition first decodes n tokens greedily
// without speculation (the baseline, timed), then decodes them again with the oracle drafter,
// which knows that text and proposes each next token with probability P (a wrong one
// otherwise). Baseline and speculative runs alternate, so a busy machine slows both alike.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "common.h"
#include "spec_options.h"

namespace cli {

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Pass {
    double ms = 0.0;
    std::vector<mw_token> text;  // prompt + generated
    mw_spec_stats stats{};
};

// Greedy: the prompt, then n tokens, plain (spec null) or speculative. Decode time only.
Pass decode_run(mw_context* ctx, int32_t n_vocab, const std::vector<mw_token>& prompt, int n,
                const mw_spec_params* spec) {
    mw_seq_truncate(ctx, 0, 0);
    mw_sampler_params sp = mw_sampler_default_params();
    sp.temperature = 0.0f;
    SamplerPtr sampler(mw_sampler_create(&sp));
    SpeculatorPtr s;
    if (spec) {
        // Before the prompt: an MTP head follows the target from its first token.
        mw_speculator* raw = nullptr;
        if (mw_status st = mw_speculator_create(ctx, nullptr, spec, &raw); st != MW_OK)
            fail_status(st, "bench (speculative decoding)");
        s.reset(raw);
    }
    if (mw_status st = mw_decode(ctx, prompt.data(), int32_t(prompt.size()), false); st != MW_OK)
        fail_status(st, "bench");
    Pass r;
    r.text = prompt;
    mw_token tok = mw_sampler_sample(sampler.get(), mw_get_logits(ctx, -1), n_vocab);
    mw_sampler_accept(sampler.get(), tok);
    std::vector<mw_token> out(size_t(spec ? spec->draft_max : 0) + 1);
    const double t0 = now_ms();
    while (int(r.text.size() - prompt.size()) < n) {
        r.text.push_back(tok);
        if (int(r.text.size() - prompt.size()) >= n) break;
        if (s) {
            int32_t n_out = 0;
            const int32_t left = n - int32_t(r.text.size() - prompt.size());
            if (mw_status st = mw_speculator_step(s.get(), sampler.get(), tok,
                                                  std::min<int32_t>(left, int32_t(out.size())),
                                                  out.data(), &n_out);
                st != MW_OK)
                fail_status(st, "bench");
            r.text.insert(r.text.end(), out.begin(), out.begin() + n_out - 1);
            tok = out[size_t(n_out) - 1];
        } else {
            if (mw_status st = mw_decode(ctx, &tok, 1, false); st != MW_OK)
                fail_status(st, "bench");
            tok = mw_sampler_sample(sampler.get(), mw_get_logits(ctx, -1), n_vocab);
            mw_sampler_accept(sampler.get(), tok);
        }
    }
    r.ms = now_ms() - t0;
    r.text.resize(prompt.size() + size_t(n));
    if (s) r.stats = mw_speculator_stats(s.get());
    return r;
}

std::vector<double> parse_list(const std::string& text, const char* flag) {
    std::vector<double> v;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        try {
            size_t used = 0;
            v.push_back(std::stod(item, &used));
            if (used != item.size()) throw std::invalid_argument(item);
        } catch (const std::exception&) {
            fail_usage(fmt::format("{} {}: expected numbers separated by commas", flag, text));
        }
    }
    if (v.empty()) fail_usage(fmt::format("{}: empty list", flag));
    return v;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

void run_spec_bench(const SpecBench& b) {
    // A real drafter (--spec-type mtp or ngram): one row per draft length, P shown as -1.
    const bool real = !b.spec_type.empty();
    if (real && b.spec_type != "mtp" && b.spec_type != "ngram") {
        fail_usage(
            fmt::format("bench --spec-type {}: expected mtp or ngram (a draft model: run "
                        "with -md and --verbose)",
                        b.spec_type));
    }
    if (real && !b.oracle.empty()) fail_usage("bench: --spec-type or --draft-oracle, not both");
    const std::vector<double> ps =
        real ? std::vector<double>{-1.0} : parse_list(b.oracle, "--draft-oracle");
    const std::vector<double> ks = parse_list(b.draft_max, "--draft-max");
    for (double p : ps) {
        if (!real && !(p >= 0.0 && p <= 1.0))
            fail_usage(fmt::format("--draft-oracle {}: expected a probability 0..1", p));
    }
    for (double k : ks) {
        if (k < 1 || k != std::floor(k))
            fail_usage(fmt::format("--draft-max {}: expected a whole number >= 1", k));
    }
    if (b.n_gen < 2) fail_usage("bench --draft-oracle: -n must be 2 or more");
    ModelPtr model = load_model(b.model, false, b.csv);
    const int32_t n_vocab = mw_model_n_vocab(model.get());
    const std::vector<mw_token> prompt = bench_prompt_ids(std::max(1, b.n_prompt), n_vocab);
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = uint32_t(prompt.size()) + uint32_t(b.n_gen) + 16 +
               uint32_t(*std::max_element(ks.begin(), ks.end()));
    cp.n_threads = b.threads;
    ContextPtr ctx = create_context(model.get(), cp);
    if (real) {
        fmt::print(stderr, "bench --spec-type {}: the drafter on the model's own greedy text\n",
                   b.spec_type);
    } else {
        fmt::print(stderr,
                   "bench --draft-oracle is a measurement device: the drafter knows the target's "
                   "own greedy text and proposes it with probability P\n");
    }
    if (b.csv) {
        fmt::print(
            "model,threads,n_gen,p,k,acceptance,tokens_per_pass,expected_tokens_per_pass,"
            "verify_cost,base_tok_s,spec_tok_s,speedup,allowed_speedup,efficiency\n");
    } else {
        fmt::print("{:>5} {:>3} {:>10} {:>8} {:>8} {:>11} {:>9} {:>9} {:>8} {:>8} {:>6}\n", "P",
                   "k", "accepted", "tok/pass", "expected", "verify/1tok", "base t/s", "spec t/s",
                   "speed-up", "allowed", "eff.");
    }
    const std::string name = mw_model_desc(model.get());
    for (double k : ks) {
        for (double p : ps) {
            std::vector<double> base_ms, spec_ms, cost;
            mw_spec_stats total{};
            for (int rep = 0; rep <= b.reps; ++rep) {  // rep 0: warm-up
                const Pass base = decode_run(ctx.get(), n_vocab, prompt, b.n_gen, nullptr);
                mw_spec_params sp = mw_spec_default_params();
                sp.type = b.spec_type == "mtp"     ? MW_SPEC_MTP
                          : b.spec_type == "ngram" ? MW_SPEC_NGRAM
                                                   : MW_SPEC_ORACLE;
                sp.draft_max = int32_t(k);
                sp.oracle_p = float(p);
                sp.oracle_tokens = base.text.data();
                sp.n_oracle_tokens = int32_t(base.text.size());
                sp.seed = 42 + uint64_t(rep);
                const Pass spec = decode_run(ctx.get(), n_vocab, prompt, b.n_gen, &sp);
                if (spec.text != base.text) {
                    fmt::print(stderr,
                               "warning: the speculative text differs from the plain one (a "
                               "near tie rounded differently by the batched kernels)\n");
                }
                if (rep == 0) continue;
                base_ms.push_back(base.ms);
                spec_ms.push_back(spec.ms);
                // A pass's cost against one plain token's.
                if (spec.stats.n_passes > 0) {
                    cost.push_back((spec.stats.verify_ms / double(spec.stats.n_passes)) /
                                   (base.ms / b.n_gen));
                }
                total.n_passes += spec.stats.n_passes;
                total.n_plain_steps += spec.stats.n_plain_steps;
                total.n_drafted += spec.stats.n_drafted;
                total.n_accepted += spec.stats.n_accepted;
                total.n_generated += spec.stats.n_generated;
            }
            const double acc =
                total.n_drafted ? double(total.n_accepted) / double(total.n_drafted) : 0.0;
            const int64_t steps = total.n_passes + total.n_plain_steps;
            const double per_pass = steps ? double(total.n_generated) / double(steps) : 0.0;
            // A real drafter: the tokens per pass its measured acceptance would give.
            const double expected = mw_spec_expected_tokens(real ? acc : p, int32_t(k));
            const double c = cost.empty() ? 0.0 : median(cost);
            const double base_tps = 1000.0 * b.n_gen / median(base_ms);
            const double spec_tps = 1000.0 * b.n_gen / median(spec_ms);
            const double speedup = spec_tps / base_tps;
            const double allowed = c > 0 ? expected / c : 0.0;
            if (b.csv) {
                fmt::print(
                    "\"{}\",{},{},{},{},{:.4f},{:.3f},{:.3f},{:.3f},{:.2f},{:.2f},{:.3f},"
                    "{:.3f},{:.3f}\n",
                    name, mw_context_n_threads(ctx.get()), b.n_gen, p, k, acc, per_pass, expected,
                    c, base_tps, spec_tps, speedup, allowed, allowed > 0 ? speedup / allowed : 0.0);
            } else {
                fmt::print(
                    "{:>5.2f} {:>3} {:>9.1f}% {:>8.2f} {:>8.2f} {:>10.2f}x {:>9.1f} {:>9.1f} "
                    "{:>7.2f}x {:>7.2f}x {:>5.0f}%\n",
                    p, k, 100 * acc, per_pass, expected, c, base_tps, spec_tps, speedup, allowed,
                    allowed > 0 ? 100 * speedup / allowed : 0.0);
            }
            std::fflush(stdout);
        }
    }
}

}  // namespace cli
