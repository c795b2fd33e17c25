// memwall pull: download a model safely. Plans it from its header first (refusing one that does
// not fit), then downloads to FILE.part with a progress bar, resumes after an interruption, and
// checks size and SHA-256 before the file takes its name. Ctrl-C keeps the .part (exit 130).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>

#include "common.h"
#include "plan_render.h"

namespace cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
    g_interrupted = 1;
}

std::string duration(double s) {
    if (s < 60) return fmt::format("{:.0f} s", s);
    if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", s / 60 - 0.5, std::fmod(s, 60));
    return fmt::format("{:.0f} h {:02.0f} min", s / 3600 - 0.5, std::fmod(s / 60, 60));
}

struct Progress {
    bool tty;
    int last_decile = -1;
    double last_line_s = 0;
};

bool on_progress(const mw_pull_progress* p, void* user) {
    auto* s = static_cast<Progress*>(user);
    if (p->note) {
        fmt::print("{}{}\n", s->tty ? "\r\033[K" : "", p->note);
        std::fflush(stdout);
        return !g_interrupted;
    }
    if (p->total == 0) return !g_interrupted;
    const double frac = double(p->done) / double(p->total);
    const double rate = p->bytes_per_s;
    const std::string eta =
        rate > 0 ? duration(double(p->total - p->done) / rate) : std::string("-");
    const std::string figures =
        fmt::format("{} / {} ({:.1f} %), {}/s, ETA {}", human_bytes(double(p->done)),
                    human_bytes(double(p->total)), 100 * frac, human_bytes(rate), eta);
    if (s->tty) {
        constexpr int kWidth = 30;
        const int filled = int(frac * kWidth);
        fmt::print("\r\033[K[{}{}] {}", std::string(size_t(filled), '#'),
                   std::string(size_t(kWidth - filled), '.'), figures);
    } else {
        // Plain lines for logs: one per tenth of the file, at most one every 10 s otherwise.
        const int decile = int(frac * 10);
        if (decile != s->last_decile || p->elapsed_s - s->last_line_s >= 10) {
            fmt::print("pull: {}\n", figures);
            s->last_decile = decile;
            s->last_line_s = p->elapsed_s;
        }
    }
    std::fflush(stdout);
    return !g_interrupted;
}

}  // namespace

void add_pull_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "pull",
        "Download a model (URL or hf://OWNER/REPO/FILE) after planning it from its header: "
        "resumable, retried, checked (size, SHA-256)");
    struct Options {
        std::string url, out, sha256, max_bytes;
        bool force = false;
        int retries = 5;
        double retry_delay = 1.0;
        uint32_t n_ctx = 0;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("url", opt->url, "http(s) URL, or hf://OWNER/REPO[@REVISION]/FILE")->required();
    cmd->add_option("-o,--output", opt->out, "Output file (default: the URL's file name)");
    cmd->add_option("--sha256", opt->sha256,
                    "Expected SHA-256 (default: the server's, when its ETag is one)");
    cmd->add_flag("--force", opt->force, "Download even when the plan says it does not fit");
    cmd->add_option("--max-bytes", opt->max_bytes,
                    "Refuse a file larger than this (e.g. 8G); the free disk space is always "
                    "checked");
    cmd->add_option("--retries", opt->retries,
                    "Attempts in a row without progress before giving up");
    cmd->add_option("--retry-delay", opt->retry_delay,
                    "Seconds before the first retry (doubled each time)");
    cmd->add_option("-c,--ctx-size", opt->n_ctx, "Context size to plan for (0: the default)");
    cmd->callback([opt] {
        const Options& o = *opt;
        mw_pull_params params = mw_pull_default_params();
        params.sha256 = o.sha256.empty() ? nullptr : o.sha256.c_str();
        params.force = o.force;
        params.fit_params.n_ctx = o.n_ctx;
        params.max_bytes = o.max_bytes.empty() ? 0 : parse_bytes(o.max_bytes, "--max-bytes");
        params.retries = o.retries;
        params.retry_delay_s = o.retry_delay;
        Progress state{isatty(STDOUT_FILENO) != 0};
        params.progress = on_progress;
        params.user_data = &state;

        // Ctrl-C stops the transfer at the next progress call and keeps the .part.
        struct sigaction sa {};
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        struct sigaction old_int {
        }, old_term{};
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        mw_pull_result r{};
        const mw_status st =
            mw_pull(o.url.c_str(), o.out.empty() ? nullptr : o.out.c_str(), &params, &r);
        sigaction(SIGINT, &old_int, nullptr);
        sigaction(SIGTERM, &old_term, nullptr);
        if (state.tty) fmt::print("\n");
        if (st != MW_OK) {
            if (r.cancelled) fail(mw_last_error(), 130);
            fail_status(st, "pull");
        }
        if (r.already_complete) {
            fmt::print("pull: {} is there already ({} bytes, SHA-256 {} as expected)\n", r.path,
                       r.file_bytes, r.sha256);
            return;
        }
        const std::string checked = std::strcmp(r.sha256_source, "given") == 0 ? "matches --sha256"
                                    : std::strcmp(r.sha256_source, "server") == 0
                                        ? "matches the server's ETag"
                                        : "not checked: no SHA-256 known";
        fmt::print(
            "pull: {} ({} bytes; {} downloaded in {:.1f} s{}{}{}); SHA-256 {} {}\n", r.path,
            r.file_bytes, human_bytes(double(r.downloaded_bytes)), r.seconds,
            r.resumed_from ? fmt::format(", resumed at byte {}", r.resumed_from) : "",
            r.retries ? fmt::format(", {} {}", r.retries, r.retries == 1 ? "retry" : "retries")
                      : "",
            r.restarts
                ? fmt::format(", {} {}", r.restarts, r.restarts == 1 ? "restart" : "restarts")
                : "",
            r.sha256, checked);
    });
}

}  // namespace cli
