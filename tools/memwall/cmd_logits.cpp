// memwall logits: the logits of every position of a prompt run as one batch, as raw little-endian
// float32 [n_tokens x n_vocab]. The tool tests, bug reports and engine comparisons use.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "common.h"

namespace cli {

void add_logits_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("logits", "Write the logits of every prompt position to a file");
    struct Options {
        ModelOptions model;
        PromptOptions prompt;
        std::string out;
        std::string threads;
        std::string ctk = "f16", ctv = "f16";
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    opt->prompt.add_to(*cmd);
    cmd->add_option("-o,--output", opt->out, "Output file (float32, n_tokens x n_vocab)")
        ->required();
    cmd->add_option("-t,--threads", opt->threads,
                    "Threads, or \"auto\" to measure (default: physical performance cores)");
    cmd->add_option("--cache-type-k", opt->ctk, "KV cache key type: f16, f32, bf16, q8_0, q4_0");
    cmd->add_option("--cache-type-v", opt->ctv, "KV cache value type");
    cmd->callback([opt] {
        if (opt->prompt.text.empty() && opt->prompt.file.empty())
            fail_usage("logits: give -p TEXT or -f FILE");
        const mw_type type_k = parse_kv_type(opt->ctk, "-ctk");
        const mw_type type_v = parse_kv_type(opt->ctv, "-ctv");
        ModelPtr owner = load_model(opt->model);
        mw_model* model = owner.get();
        const auto tokens = tokenize(model, opt->prompt.read(), true, true);
        if (tokens.empty()) fail("logits: the prompt has no tokens");
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = uint32_t(tokens.size());
        cp.n_batch = uint32_t(tokens.size());
        cp.n_threads = parse_threads(opt->threads);
        cp.type_k = type_k;
        cp.type_v = type_v;
        ContextPtr owned_ctx = create_context(model, cp);
        mw_context* ctx = owned_ctx.get();
        if (mw_status st = mw_decode(ctx, tokens.data(), int32_t(tokens.size()), true);
            st != MW_OK) {
            fail_status(st, "logits");
        }
        std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(opt->out.c_str(), "wb"), std::fclose);
        if (!f) fail(fmt::format("{}: cannot create the output file", opt->out));
        const size_t n_vocab = size_t(mw_model_n_vocab(model));
        for (size_t i = 0; i < tokens.size(); ++i) {
            const float* row = mw_get_logits(ctx, int32_t(i));
            if (std::fwrite(row, sizeof(float), n_vocab, f.get()) != n_vocab) {
                fail(fmt::format("{}: write failed", opt->out));
            }
        }
        if (std::fflush(f.get()) != 0) fail(fmt::format("{}: write failed", opt->out));
        fmt::print(stderr, "logits: {} tokens x {} vocab written to {}\n", tokens.size(), n_vocab,
                   opt->out);
    });
}

}  // namespace cli
