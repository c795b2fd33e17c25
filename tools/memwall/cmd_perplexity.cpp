// memwall perplexity: perplexity over a text as llama.cpp's llama-perplexity computes it (so the
// numbers compare), and with --kld-base the KL divergence from a base model (how far a
// quantization moved the model's predictions).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "common.h"

namespace cli {
namespace {

struct Display {
    bool terminal = false;
    mw_speed_conditions conditions{};  // n_threads filled in from the progress
};

std::string duration(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
    return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
}

// A live line on a terminal; one plain line per chunk otherwise (logs, pipes).
bool on_chunk(const mw_perplexity_progress* p, void* user_data) {
    auto& d = *static_cast<Display*>(user_data);
    d.conditions.n_threads = p->n_threads;
    const double eta = p->chunk > 0 ? p->elapsed_s / p->chunk * (p->n_chunks - p->chunk) : 0.0;
    std::string line = fmt::format("[{}/{}] PPL {:.4f}", p->chunk, p->n_chunks, p->ppl);
    if (p->has_base) {
        line += fmt::format("  KLD {:.6f}  top-1 {:.2f}%", p->kld_mean, 100.0 * p->top1_agreement);
    }
    line += fmt::format("  {:.0f} tok/s ({})", p->tokens_per_s, speed_label(d.conditions));
    if (d.terminal) {
        constexpr int kBar = 20;
        const int filled = p->n_chunks > 0 ? p->chunk * kBar / p->n_chunks : kBar;
        fmt::print(stderr, "\r\033[K{}{} {}  ETA {}", std::string(size_t(filled), '#'),
                   std::string(size_t(kBar - filled), '.'), line, duration(eta));
        if (p->chunk == p->n_chunks) fmt::print(stderr, "\n");
    } else {
        fmt::print(stderr, "{}\n", line);
    }
    return true;
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "perplexity",
        "Perplexity over a text, as llama-perplexity (and KL divergence from a base)");
    struct Options {
        ModelOptions model;
        std::string file;
        uint32_t n_ctx = 512;
        uint32_t n_batch = 0;
        int32_t chunks = 0;
        std::string base;
        std::string threads;
        std::string ctk = "f16", ctv = "f16";
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    cmd->add_option("-f,--file", opt->file, "The text file")->required();
    cmd->add_option("-c,--ctx-size", opt->n_ctx, "Tokens per chunk");
    cmd->add_option("-b,--batch-size", opt->n_batch, "Tokens per decode batch (0: the chunk)");
    cmd->add_option("--chunks", opt->chunks, "At most this many chunks (0: all)");
    cmd->add_option("--kld-base", opt->base,
                    "Base model (e.g. the F16 original): also report the KL divergence from it");
    cmd->add_option("-t,--threads", opt->threads, "Threads, or \"auto\" (default: physical cores)");
    cmd->add_option("--cache-type-k", opt->ctk, "KV cache key type: f16, f32, bf16, q8_0, q4_0");
    cmd->add_option("--cache-type-v", opt->ctv, "KV cache value type");
    cmd->callback([opt] {
        mw_perplexity_params params = mw_perplexity_default_params();
        params.n_ctx = opt->n_ctx;
        params.n_batch = opt->n_batch;
        params.n_chunks = opt->chunks;
        params.n_threads = parse_threads(opt->threads);
        params.type_k = parse_kv_type(opt->ctk, "-ctk");
        params.type_v = parse_kv_type(opt->ctv, "-ctv");
        PromptOptions text_file;
        text_file.file = opt->file;
        const std::string text = text_file.read();

        ModelPtr model = load_model(opt->model);
        ModelPtr base;
        if (!opt->base.empty()) {
            ModelOptions base_options = opt->model;
            base_options.path = opt->base;
            base = load_model(base_options);
        }
        Display display{isatty(STDERR_FILENO) != 0};
        // Each chunk is one batch from an empty cache, all logits kept, no sampler.
        display.conditions.n_prompt = int32_t(params.n_ctx ? params.n_ctx : 512);
        display.conditions.type_k = params.type_k;
        display.conditions.type_v = params.type_v;
        params.progress = on_chunk;
        params.user_data = &display;
        mw_perplexity_result r;
        const mw_status st =
            mw_perplexity(model.get(), base.get(), text.data(), text.size(), &params, &r);
        if (st != MW_OK) fail_status(st, "perplexity");

        display.conditions.n_threads = r.n_threads;
        fmt::print(
            "perplexity: {} tokens, {} chunks of {}, {} predictions scored, {:.2f} s, {:.0f} "
            "tok/s{} ({})\n",
            r.n_text_tokens, r.n_chunks, r.n_ctx, r.n_scored, r.seconds,
            r.seconds > 0 ? double(r.n_chunks) * r.n_ctx / r.seconds : 0.0,
            r.has_base ? " per model" : "", speed_label(display.conditions));
        fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl, r.ppl_err);
        if (r.has_base) {
            fmt::print("Base PPL               = {:.4f} +/- {:.5f}\n", r.base_ppl, r.base_ppl_err);
            fmt::print("PPL(model)/PPL(base)   = {:.6f}\n", r.ppl_ratio);
            fmt::print("Mean KLD               = {:.6f} +/- {:.6f}\n", r.kld_mean, r.kld_err);
            fmt::print("Median KLD             = {:.6f}\n", r.kld_median);
            fmt::print("99th percentile KLD    = {:.6f}\n", r.kld_p99);
            fmt::print("Maximum KLD            = {:.6f}\n", r.kld_max);
            fmt::print("Same top token         = {:.3f} %\n", 100.0 * r.top1_agreement);
        }
    });
}

}  // namespace cli
