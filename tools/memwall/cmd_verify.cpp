// memwall verify: is a model file whole and sound? One line per check (structure, size against
// the tensor table, tensors, values, model, SHA-256), or the report as JSON. Exit 0 only when
// every check passes; the first failure is also printed on stderr.
#include <fmt/format.h>
#include <unistd.h>

#include "common.h"
#include "plan_render.h"

namespace cli {
namespace {

struct Progress {
    bool tty;
    bool shown = false;
};

void on_progress(const char* pass, uint64_t done, uint64_t total, void* user) {
    auto* s = static_cast<Progress*>(user);
    // Only for files big enough to wait for, and only on a terminal.
    if (!s->tty || total < (uint64_t(256) << 20)) return;
    fmt::print(stderr, "\r\033[Kverify: {} {:5.1f} % of {}", pass,
               100.0 * double(done) / double(total), human_bytes(double(total)));
    s->shown = true;
}

}  // namespace

void add_verify_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "verify",
        "Check a GGUF file: structure, size against the tensor table (truncation), tensor "
        "bounds and types, non-finite values and scales, the model, optionally the SHA-256");
    struct Options {
        std::string path, sha256;
        int threads = 0;
        bool json_out = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("file", opt->path, "GGUF file")->required();
    cmd->add_option("--sha256", opt->sha256, "Expected SHA-256 of the whole file");
    cmd->add_option("-t,--threads", opt->threads, "Threads for the value pass");
    cmd->add_flag("--json", opt->json_out, "Print the report as JSON");
    cmd->callback([opt] {
        const Options& o = *opt;
        mw_verify_params params = mw_verify_default_params();
        params.sha256 = o.sha256.empty() ? nullptr : o.sha256.c_str();
        params.n_threads = o.threads;
        Progress state{isatty(STDERR_FILENO) != 0};
        params.progress = on_progress;
        params.user_data = &state;
        const nlohmann::json report = take_json(mw_verify_json(o.path.c_str(), &params), "verify");
        if (state.shown) fmt::print(stderr, "\r\033[K");
        if (o.json_out) {
            fmt::print("{}\n", report.dump(1));
        } else {
            fmt::print("verify: {} ({})\n", o.path,
                       human_bytes(report["file_bytes"].get<double>()));
            for (const auto& c : report["checks"]) {
                fmt::print("  {:<10} {:<5} {}\n", c["name"].get<std::string>(),
                           c["status"].get<std::string>(), c["detail"].get<std::string>());
            }
        }
        if (report["ok"].get<bool>()) {
            if (!o.json_out) fmt::print("verify: every check passed\n");
            return;
        }
        for (const auto& c : report["checks"]) {
            if (c["status"] == "fail") fail(c["detail"].get<std::string>());
        }
        fail("verify failed");
    });
}

}  // namespace cli
