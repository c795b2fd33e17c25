// memwall run: generate text from a prompt. stdout carries exactly the generated text, streamed
// as it is produced; the statistics go to stderr at the end.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <vector>

#include "common.h"
#include "spec_options.h"

namespace cli {

void add_run_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
    struct Options {
        ModelOptions model;
        PromptOptions prompt;
        int n_predict = -1;
        uint32_t n_ctx = 0;
        uint32_t n_batch = 512;
        std::string threads;
        SamplingOptions sampling;
        bool ignore_eos = false;
        bool echo = false;
        bool force = false;
        bool verbose = false;
        bool context_shift = false;
        int n_keep = 0;
        KvCacheOptions kv;
        PacingOptions pacing;
        SpecOptions spec;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    opt->model.add_budget_to(*cmd);
    opt->prompt.add_to(*cmd);
    cmd->add_option("-n,--n-predict", opt->n_predict,
                    "Tokens to generate (-1: until an end token or a full context)");
    cmd->add_option("-c,--ctx-size", opt->n_ctx,
                    "Context size in tokens (0: min(training context, 4096))");
    cmd->add_option("-b,--batch-size", opt->n_batch, "Prompt tokens processed per step");
    cmd->add_option("-t,--threads", opt->threads,
                    "Threads, or \"auto\" to measure (default: physical performance cores)");
    opt->sampling.add_to(*cmd, true);
    cmd->add_flag("--ignore-eos", opt->ignore_eos, "Keep generating after an end-of-text token");
    cmd->add_flag("--echo", opt->echo, "Print the prompt before the generated text");
    cmd->add_flag("--force", opt->force, "Run even when the plan says the model does not fit");
    cmd->add_flag("--verbose", opt->verbose,
                  "Report memory (mapped, resident, KV, scratch, RSS, page faults) and pacing "
                  "decisions");
    cmd->add_flag("--context-shift", opt->context_shift,
                  "When the context is full, drop the oldest half of the tokens after --keep and "
                  "continue (default: stop at a full context)");
    cmd->add_option("--keep", opt->n_keep,
                    "Prompt tokens kept by a context shift, besides BOS (-1: the whole prompt)");
    opt->kv.add_to(*cmd);
    opt->pacing.add_to(*cmd);
    opt->spec.add_to(*cmd);
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.prompt.text.empty() && o.prompt.file.empty())
            fail_usage("run: give a prompt with -p TEXT or -f FILE");
        if (o.n_predict < -1) {
            fail_usage(
                fmt::format("run: -n {}: expected a token count, or -1 for until an end token or "
                            "a full context",
                            o.n_predict));
        }
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = o.n_ctx;
        cp.n_batch = o.n_batch;
        cp.n_threads = parse_threads(o.threads);
        o.kv.apply(cp);
        const std::string prompt = o.prompt.read();

        refuse_unsupported_spec(o.spec, o.model);
        // Before allocating; under --mem-budget the library's budget arithmetic refuses instead.
        const mw_fit plan =
            o.model.mem_budget.empty()
                ? check_fit_or_fail(o.model.path, cp, o.force, o.spec.enabled(),
                                    o.spec.plan_draft(), o.spec.draft_max, o.spec.plan_mtp())
                : mw_fit{};
        opt->model.verbose = o.verbose;
        ModelPtr model = load_model(o.model);
        const auto tokens = tokenize(model.get(), prompt, true, true);
        if (tokens.empty()) fail("run: the prompt has no tokens");
        ContextPtr ctx = create_context(model.get(), cp);
        const uint32_t n_ctx = mw_context_n_ctx(ctx.get());
        warn_context_beyond_training(mw_model_n_ctx_train(model.get()), n_ctx, "run");
        if (tokens.size() >= n_ctx) {
            fail(fmt::format(
                "run: the prompt has {} tokens, which does not leave room to generate in a "
                "context of {} tokens; raise -c or shorten the prompt",
                tokens.size(), n_ctx));
        }
        // A context shift keeps the first n_keep tokens (BOS always, as llama.cpp does) and
        // discards half of the rest, which must be at least one token.
        uint32_t n_keep = 0;
        if (o.context_shift) {
            const bool has_bos =
                mw_token_bos(model.get()) >= 0 && tokens[0] == mw_token_bos(model.get());
            if (o.n_keep < -1)
                fail_usage(fmt::format("run: --keep {}: expected a token count or -1", o.n_keep));
            n_keep = o.n_keep < 0 || size_t(o.n_keep) > tokens.size()
                         ? uint32_t(tokens.size())
                         : uint32_t(o.n_keep) + (has_bos ? 1 : 0);
            n_keep = std::min<uint32_t>(n_keep, uint32_t(tokens.size()));
            if (n_keep + 2 > n_ctx) {
                fail(fmt::format(
                    "run: --context-shift keeps {} tokens of a context of {}, which leaves "
                    "nothing to discard; lower --keep or raise -c",
                    n_keep, n_ctx));
            }
        }

        const Speculation spec = start_speculation(o.spec, o.model, ctx.get(), cp);
        const mw_sampler_params sp = o.sampling.params();
        SamplerPtr sampler(mw_sampler_create(&sp));
        for (mw_token t : tokens) mw_sampler_accept(sampler.get(), t);
        DetokenizerPtr detok(mw_detokenizer_create(model.get(), false));

        if (o.echo) {
            std::fwrite(prompt.data(), 1, prompt.size(), stdout);
            std::fflush(stdout);
        }
        const int n_threads = mw_context_n_threads(ctx.get());
        Pacing pacing(o.pacing, o.verbose);
        if (mw_status st = mw_decode(ctx.get(), tokens.data(), int32_t(tokens.size()), false);
            st != MW_OK) {
            fail_status(st, "run");
        }
        pacing.after_token(ctx.get());
        uint32_t depth_max = mw_context_n_past(ctx.get());
        const int n_vocab = mw_model_n_vocab(model.get());
        int generated = 0;
        int n_shifts = 0;
        std::string stop_reason = "the requested number of tokens";
        // Tokens sampled (and given to the sampler) but not yet shown; `decoded`: already in
        // the cache (a draft the target accepted), otherwise decoded before the next is made.
        struct Ready {
            mw_token tok;
            bool decoded;
        };
        std::deque<Ready> ready;
        std::vector<mw_token> out(size_t(std::max(1, o.spec.draft_max)) + 1);
        while (o.n_predict < 0 || generated < o.n_predict) {
            if (ready.empty()) {
                const mw_token t =
                    mw_sampler_sample(sampler.get(), mw_get_logits(ctx.get(), -1), n_vocab);
                mw_sampler_accept(sampler.get(), t);
                ready.push_back({t, false});
            }
            const auto [tok, decoded] = ready.front();
            ready.pop_front();
            ++generated;
            if (!o.ignore_eos && mw_token_is_eog(model.get(), tok)) {
                stop_reason = "an end-of-text token";
                break;
            }
            size_t len = 0;
            const char* text = mw_detokenizer_push(detok.get(), tok, &len);
            std::fwrite(text, 1, len, stdout);
            std::fflush(stdout);
            if (o.n_predict >= 0 && generated >= o.n_predict) break;
            if (decoded) continue;
            if (mw_context_n_past(ctx.get()) >= n_ctx) {
                if (!o.context_shift) {
                    stop_reason = fmt::format(
                        "a full context ({} tokens; raise -c, or pass --context-shift to continue "
                        "by dropping older tokens)",
                        n_ctx);
                    break;
                }
                const uint32_t n_discard = (n_ctx - n_keep) / 2;
                if (mw_status st = mw_context_shift(ctx.get(), n_keep, n_discard); st != MW_OK) {
                    fail_status(st, "run");
                }
                ++n_shifts;
            }
            if (spec.get()) {
                // The token with the drafts in one pass; the accepted ones come back decoded,
                // the last one (the target's own) is decoded with the next drafts.
                const int32_t left =
                    o.n_predict < 0 ? int32_t(out.size()) : o.n_predict - generated;
                int32_t n_out = 0;
                if (mw_status st = mw_speculator_step(
                        spec.get(), sampler.get(), tok,
                        std::clamp<int32_t>(left, 1, int32_t(out.size())), out.data(), &n_out);
                    st != MW_OK) {
                    fail_status(st, "run");
                }
                for (int32_t i = 0; i < n_out; ++i)
                    ready.push_back({out[size_t(i)], i + 1 < n_out});
            } else if (mw_status st = mw_decode(ctx.get(), &tok, 1, false); st != MW_OK) {
                fail_status(st, "run");
            }
            depth_max = std::max(depth_max, mw_context_n_past(ctx.get()));
            pacing.after_token(ctx.get());
        }
        size_t len = 0;
        const char* rest = mw_detokenizer_flush(detok.get(), &len);
        std::fwrite(rest, 1, len, stdout);
        std::fflush(stdout);

        const mw_perf perf = mw_context_perf(ctx.get());
        auto rate = [](int n, double ms) { return ms > 0 ? 1000.0 * n / ms : 0.0; };
        fmt::print(stderr, "\n\nstopped after {} tokens: {}\n", generated, stop_reason);
        if (n_shifts > 0) {
            fmt::print(stderr, "context shifts: {} (each kept {} tokens and dropped {})\n",
                       n_shifts, n_keep, (n_ctx - n_keep) / 2);
        }
        fmt::print(stderr, "seed: {}\n", sp.seed);
        fmt::print(stderr, "load:    {:9.1f} ms\n", perf.load_ms);
        // Each speed with its conditions: prompt length, cache depth, threads, KV type, sampling.
        mw_speed_conditions pc{};
        pc.n_prompt = perf.n_prompt_tokens;
        pc.n_threads = n_threads;
        pc.type_k = cp.type_k;
        pc.type_v = cp.type_v;
        mw_speed_conditions dc = pc;
        dc.n_prompt = 0;
        dc.n_gen = perf.n_decode_tokens;
        dc.n_depth = int32_t(tokens.size());
        dc.n_depth_max = int32_t(depth_max);
        dc.sampling = &sp;
        fmt::print(stderr, "prompt:  {:9.1f} ms, {:5d} tokens, {:8.2f} tok/s ({})\n",
                   perf.prompt_ms, perf.n_prompt_tokens, rate(perf.n_prompt_tokens, perf.prompt_ms),
                   speed_label(pc));
        // With speculation the drafting counts too (a draft model's passes are not the
        // target context's).
        const double decode_ms =
            perf.decode_ms + (spec.get() ? mw_speculator_stats(spec.get()).draft_ms : 0.0);
        fmt::print(stderr, "decode:  {:9.1f} ms, {:5d} tokens, {:8.2f} tok/s ({}{}{})\n", decode_ms,
                   perf.n_decode_tokens, rate(perf.n_decode_tokens, decode_ms), speed_label(dc),
                   spec.get() ? "; speculative, drafting included" : "",
                   pacing.enabled() ? "; time decoding, without the paced gaps" : "");
        pacing.print_summary();
        print_spec_report(spec);
        fmt::print(stderr,
                   "memory:  weights {:.1f} MiB ({:.1f} MiB resident), KV cache {:.1f} MiB, "
                   "scratch {:.1f} MiB, peak RSS {:.1f} MiB\n",
                   perf.weights_bytes / 1048576.0, perf.weights_resident_bytes / 1048576.0,
                   perf.kv_bytes / 1048576.0, perf.scratch_bytes / 1048576.0,
                   perf.peak_rss_bytes / 1048576.0);
        if (o.verbose) {
            print_memory_report(perf, plan);
            const uint64_t n_tokens = uint64_t(perf.n_prompt_tokens + perf.n_decode_tokens);
            print_budget_report(expert_cache_stats(model.get()), n_tokens, perf.peak_rss_bytes);
            print_layer_stream_report(layer_stream_stats(model.get()), n_tokens);
        }
    });
}

}  // namespace cli
