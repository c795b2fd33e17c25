// memwall probe: what this machine is (cores, SIMD features, caches, RAM) and what it measures
// (memory bandwidth, read-only and triad, multi-threaded; the engine's matmul throughput). The
// result is kept for `memwall plan --device this`.
#include <fmt/format.h>

#include "common.h"
#include "plan_render.h"

namespace cli {

void add_probe_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "probe", "This machine: cores, SIMD features, caches, RAM, measured memory bandwidth");
    struct Options {
        int threads = 0;
        double seconds = 1.5;
        bool json_out = false;
        bool no_measure = false;
        bool no_cache = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("-t,--threads", opt->threads,
                    "Threads for the measurements (default: decoding's)");
    cmd->add_option("--seconds", opt->seconds, "Time budget of the measurements");
    cmd->add_flag("--no-measure", opt->no_measure, "Only the facts; measure nothing");
    cmd->add_flag("--no-cache", opt->no_cache, "Do not keep the result for plan --device this");
    cmd->add_flag("--json", opt->json_out, "Print every number as JSON");
    cmd->callback([opt] {
        mw_probe_params p = mw_probe_default_params();
        p.n_threads = opt->threads;
        p.seconds = opt->seconds;
        p.measure = !opt->no_measure;
        p.write_cache = !opt->no_cache;
        const nlohmann::json probe = take_json(mw_probe_json(&p), "probe");
        if (opt->json_out) {
            fmt::print("{}\n", probe.dump(1));
        } else {
            print_probe(probe);
        }
    });
}

}  // namespace cli
