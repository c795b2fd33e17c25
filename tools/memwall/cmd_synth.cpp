// memwall synth: a GGUF with random weights at a real model's shape, to measure speed and memory
// without downloading the model.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "common.h"

namespace cli {

void add_synth_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("synth", "Write a random-weight GGUF at a real model's shape");
    struct Options {
        std::string preset;
        std::string out;
        std::string type = "Q4_K_M";
        uint64_t seed = 1;
        float router_skew = 0.0f;
        bool list = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("--preset", opt->preset,
                    "Model shape (see --list), e.g. llama-3.2-1b, mixtral-small-moe");
    cmd->add_option("-o,--output", opt->out, "Output GGUF file");
    cmd->add_option("--type", opt->type,
                    "Quantization as llama.cpp names it: Q4_K_M, Q4_0, Q8_0, F16, ...");
    cmd->add_option("--seed", opt->seed, "Random seed (same seed, same file)");
    cmd->add_option("--router-skew", opt->router_skew,
                    "MoE: uneven expert popularity, the k-th expert of a layer favoured as "
                    "k^-X (0: uniform random routers, the worst case for an expert cache)");
    cmd->add_flag("--list", opt->list, "List the presets");
    cmd->callback([opt] {
        if (opt->list) {
            char* text = mw_synth_presets_json();
            if (!text) fail(mw_last_error());
            const nlohmann::json presets = nlohmann::json::parse(text);
            mw_free_string(text);
            for (const auto& p : presets) {
                fmt::print("{:<22} {:>7.2f} B  {}\n", p["id"].get<std::string>(),
                           p["params"].get<double>() / 1e9, p["description"].get<std::string>());
            }
            return;
        }
        if (opt->preset.empty() || opt->out.empty())
            fail_usage("synth: give --preset NAME and -o FILE (--list shows the presets)");
        struct Progress {
            bool tty;
            std::chrono::steady_clock::time_point start;
        } state{isatty(STDERR_FILENO) != 0, std::chrono::steady_clock::now()};
        auto report = [](void* user, uint64_t done, uint64_t total) {
            auto* s = static_cast<Progress*>(user);
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - s->start).count();
            const double mb = done / 1048576.0;
            if (s->tty) {
                fmt::print(stderr, "\rsynth: {:8.1f} / {:.1f} MiB  {:6.1f} MiB/s", mb,
                           total / 1048576.0, secs > 0 ? mb / secs : 0.0);
            } else if (done == total) {
                fmt::print(stderr, "synth: {:.1f} MiB written in {:.1f} s\n", mb, secs);
            }
        };
        const mw_status st = mw_synth_skewed(opt->preset.c_str(), opt->type.c_str(), opt->seed,
                                             opt->router_skew, opt->out.c_str(), report, &state);
        if (state.tty) fmt::print(stderr, "\n");
        if (st != MW_OK) fail_status(st, "");
        fmt::print(stderr, "synth: wrote {} ({} {}, seed {})\n", opt->out, opt->preset, opt->type,
                   opt->seed);
    });
}

}  // namespace cli
