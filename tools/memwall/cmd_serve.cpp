// memwall serve: an OpenAI-compatible HTTP server (flags as llama-server's where it has them).
// The plan for every slot's context is checked before the model loads; SIGTERM or SIGINT lets
// running requests finish (for --shutdown-grace seconds), then exits 0.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common.h"
#include "plan_render.h"
#include "spec_options.h"

namespace cli {
namespace {

std::string read_secret_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(fmt::format("--api-key-file {}: cannot read it", path));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string key = ss.str();
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) {
        key.pop_back();
    }
    if (key.empty()) fail(fmt::format("--api-key-file {}: the file is empty", path));
    return key;
}

bool is_loopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" ||
           host.rfind("127.", 0) == 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("serve", "Serve the model over HTTP (OpenAI-compatible API)");
    struct Options {
        ModelOptions model;
        std::string host = "127.0.0.1";
        int port = 8080;
        uint32_t n_parallel = 4;
        uint32_t n_ctx = 0;
        uint32_t n_batch = 512;
        std::string threads;
        KvCacheOptions kv;
        PacingOptions pacing;
        std::string api_key, api_key_file;
        std::vector<std::string> cors_origins;
        double header_timeout = 10.0;
        int max_connections = 1024;
        int max_connections_per_address = 256;
        int max_header_bytes = 8192;
        std::string alias;
        ChatTemplateOptions chat_template;
        int queue = 64;
        double timeout = 600.0;
        double grace = 10.0;
        uint64_t max_body = 8u << 20;
        int n_predict = -1;
        SamplingOptions sampling;
        bool force = false;
        std::string log_format = "text";
        std::string reasoning_format = "auto";
        SpecOptions spec;
        bool verbose = false;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    opt->model.add_budget_to(*cmd);
    cmd->add_option("--host", opt->host,
                    "Address to listen on (another than loopback exposes the server: set an API "
                    "key)")
        ->capture_default_str();
    cmd->add_option("--port", opt->port, "Port (0: any free port)")->capture_default_str();
    cmd->add_option("--parallel", opt->n_parallel,
                    "Slots: requests decoded together in one batch (-np)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    cmd->add_option("-c,--ctx-size", opt->n_ctx,
                    "KV cache size in tokens for all slots together; each slot gets ctx-size / "
                    "parallel (0: parallel x min(training context, 4096))")
        ->capture_default_str();
    cmd->add_option("-b,--batch-size", opt->n_batch, "Tokens per forward step")
        ->capture_default_str();
    cmd->add_option("-t,--threads", opt->threads, "Threads (default: physical performance cores)");
    opt->kv.add_to(*cmd);
    opt->pacing.add_to(*cmd);
    cmd->add_option("--api-key", opt->api_key,
                    "Require this key (Authorization: Bearer KEY) on every route but /health and "
                    "/; also read from MEMWALL_API_KEY");
    cmd->add_option("--api-key-file", opt->api_key_file, "Read the API key from a file");
    cmd->add_option("--cors-origin", opt->cors_origins,
                    "Let web pages from this origin (https://app.example:3000, or *) call the "
                    "server; loopback origins always may, others get 403 (repeatable)");
    cmd->add_option("-a,--alias", opt->alias, "Model id listed by /v1/models")
        ->capture_default_str();
    opt->chat_template.add_to(*cmd);
    cmd->add_option("--reasoning-format", opt->reasoning_format,
                    "auto (or deepseek): replies split into reasoning_content, content and "
                    "tool_calls; none: the whole reply in content, as generated")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "deepseek", "none"}));
    cmd->add_option("--queue-size", opt->queue, "Requests waiting for a slot before 503")
        ->capture_default_str()
        ->check(CLI::Range(0, 100000));
    cmd->add_option("--timeout", opt->timeout, "Seconds a request may take from its arrival")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--shutdown-grace", opt->grace,
                    "Seconds running requests get to finish after SIGTERM")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-body", opt->max_body, "Largest request body in bytes (413 above)")
        ->capture_default_str();
    cmd->add_option("-n,--n-predict", opt->n_predict,
                    "Most tokens a request may ask for (-1: a slot's context)")
        ->capture_default_str();
    cmd->add_option("--header-timeout", opt->header_timeout,
                    "Seconds a client has to send a request's header (slow clients are cut off)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--max-connections", opt->max_connections, "Connections open at once")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    cmd->add_option("--max-connections-per-address", opt->max_connections_per_address,
                    "Connections open at once from one client address")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    cmd->add_option("--max-header-bytes", opt->max_header_bytes,
                    "Largest request header (request line and fields; each kept-alive "
                    "connection holds this much)")
        ->capture_default_str()
        ->check(CLI::Range(1024, 1 << 20));
    cmd->add_option("--log-format", opt->log_format,
                    "One line per request on stderr (time, client, method, path, status, tokens, "
                    "ms): text, json (an object per line) or none")
        ->capture_default_str()
        ->check(CLI::IsMember({"text", "json", "none"}));
    opt->sampling.add_to(*cmd, false, true);
    opt->spec.add_to(*cmd);
    cmd->add_flag("--verbose", opt->verbose,
                  "Print speculative decoding's acceptance (with -md or --spec-type) and pacing "
                  "decisions");
    cmd->add_flag("--force", opt->force, "Serve even when the plan says it does not fit");
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.n_predict < -1 || o.n_predict == 0) {
            fail_usage(
                fmt::format("serve: -n {}: expected a positive token count or -1", o.n_predict));
        }
        if (o.port < 0 || o.port > 65535)
            fail_usage(fmt::format("serve: --port {}: not a port", o.port));
        std::string key = o.api_key;
        if (!o.api_key_file.empty()) key = read_secret_file(o.api_key_file);
        if (key.empty()) {
            if (const char* env = std::getenv("MEMWALL_API_KEY")) key = env;
        }
        const std::string tmpl = o.chat_template.read();
        const std::string template_vars = o.chat_template.variables();

        mw_context_params cp = mw_context_default_params();
        cp.n_seq_max = o.n_parallel;
        cp.n_batch = o.n_batch;
        cp.n_threads = parse_threads(o.threads);
        o.kv.apply(cp);
        if (o.n_ctx > 0) {
            if (o.n_ctx < o.n_parallel * 8) {
                fail_usage(
                    fmt::format("serve: -c {} leaves {} tokens per slot for {} slots; raise -c "
                                "or lower --parallel",
                                o.n_ctx, o.n_ctx / o.n_parallel, o.n_parallel));
            }
            cp.n_ctx = o.n_ctx;
        }
        // The model's header decides the default per-slot context, min(training context, 4096):
        // the plan reads it too. A slot longer than the training context is warned about.
        {
            ModelPtr header = load_model(o.model, true, true);
            const int32_t train = mw_model_n_ctx_train(header.get());
            if (cp.n_ctx == 0) {
                cp.n_ctx =
                    uint32_t(std::min<int32_t>(train > 0 ? train : 4096, 4096)) * o.n_parallel;
            }
            warn_context_beyond_training(train, cp.n_ctx / o.n_parallel, "serve", o.n_parallel);
        }
        // Refuse or fit, for every slot's context, before anything is allocated.
        // (Under --mem-budget the library's budget arithmetic refuses instead.)
        refuse_unsupported_spec(o.spec, o.model);
        const mw_fit fit =
            o.model.mem_budget.empty()
                ? check_fit_or_fail(o.model.path, cp, o.force, o.spec.enabled(),
                                    o.spec.plan_draft(), o.spec.draft_max, o.spec.plan_mtp())
                : mw_fit{};
        // Speculation's flags are checked and its draft model loaded (it must pair with the
        // model: checked when the server is created) before the model.
        const SpecSetup spec = prepare_speculation(o.spec, o.model);

        // The signals end the server through a thread of their own (not a signal handler):
        // blocked here, before any thread starts, so that every thread inherits the mask.
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGINT);
        sigaddset(&signals, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &signals, nullptr);
        signal(SIGPIPE, SIG_IGN);  // a client that hangs up is noticed by the failed write

        ModelPtr model = load_model(o.model);
        mw_server_params sp = mw_server_default_params();
        sp.host = o.host.c_str();
        sp.port = o.port;
        sp.api_key = key.empty() ? nullptr : key.c_str();
        sp.model_name = o.alias.empty() ? nullptr : o.alias.c_str();
        sp.chat_template = tmpl.empty() ? nullptr : tmpl.c_str();
        sp.template_kwargs = template_vars.empty() ? nullptr : template_vars.c_str();
        sp.reasoning_format = o.reasoning_format == "none" ? MW_REASONING_NONE : MW_REASONING_AUTO;
        sp.queue_max = o.queue;
        sp.timeout_s = o.timeout;
        sp.max_body_bytes = o.max_body;
        sp.max_tokens = o.n_predict;
        sp.sampling = o.sampling.params();  // a request without a seed draws its own
        if (spec.on) {
            sp.speculative = &spec.params;
            sp.draft_model = spec.draft_model.get();
        }
        Pacing pacing(o.pacing, o.verbose);
        sp.pacer = pacing.get();  // every forward step of the slots, together
        const std::string cors = fmt::format("{}", fmt::join(o.cors_origins, ","));
        sp.cors_origins = cors.empty() ? nullptr : cors.c_str();
        sp.header_timeout_s = o.header_timeout;
        sp.max_connections = o.max_connections;
        sp.max_connections_per_address = o.max_connections_per_address;
        sp.max_header_bytes = o.max_header_bytes;
        sp.log_format = o.log_format == "json"   ? MW_SERVER_LOG_JSON
                        : o.log_format == "none" ? MW_SERVER_LOG_NONE
                                                 : MW_SERVER_LOG_TEXT;
        mw_server* raw = nullptr;
        if (mw_status st = mw_server_create(model.get(), &cp, &sp, &raw); st != MW_OK) {
            fail_status(st, "serve");
        }
        std::unique_ptr<mw_server, void (*)(mw_server*)> server(raw, mw_server_free);
        if (!is_loopback(o.host) && key.empty()) {
            fmt::print(stderr,
                       "warning: listening on {} without an API key: anyone who can reach this "
                       "address can use the server (set --api-key)\n",
                       o.host);
        }
        const std::string memory =
            !o.model.mem_budget.empty()
                ? fmt::format("memory budget {}", o.model.mem_budget)
                : fmt::format(
                      "planned peak {}: weights {}, KV cache {}, compute {}, overhead {}; "
                      "idle {}, the KV cache's pages are taken as slots fill",
                      human_bytes(double(fit.total_bytes)), human_bytes(double(fit.weights_bytes)),
                      human_bytes(double(fit.kv_bytes)), human_bytes(double(fit.compute_bytes)),
                      human_bytes(double(fit.overhead_bytes)),
                      human_bytes(double(fit.total_bytes - fit.kv_bytes)));
        fmt::print(stderr,
                   "memwall serve: http://{}:{}/ ({} slots of {} tokens{}; {}; Ctrl-C or SIGTERM "
                   "stops)\n",
                   o.host, mw_server_port(server.get()), o.n_parallel, cp.n_ctx / o.n_parallel,
                   key.empty() ? "" : ", API key required", memory);
        if (spec.on) {
            fmt::print(stderr, "memwall serve: speculative decoding in every slot: {}\n",
                       spec.label);
        }

        std::atomic<bool> finished{false};
        std::thread waiter([&] {
            int sig = 0;
            while (sigwait(&signals, &sig) == 0) {
                if (finished.load()) return;
                if (sig == SIGTERM || sig == SIGINT) {
                    fmt::print(stderr,
                               "memwall serve: {} received, finishing running requests "
                               "(up to {} s)\n",
                               sig == SIGTERM ? "SIGTERM" : "SIGINT", o.grace);
                    mw_server_stop(server.get(), o.grace);
                    return;
                }
            }
        });
        const mw_status st = mw_server_run(server.get());
        finished.store(true);
        pthread_kill(waiter.native_handle(), SIGUSR1);
        waiter.join();
        if (st != MW_OK) fail_status(st, "serve");
        pacing.print_summary();
        if (spec.on && o.verbose) print_spec_report(mw_server_spec_stats(server.get()), spec.label);
        fmt::print(stderr, "memwall serve: stopped\n");
    });
}

}  // namespace cli
