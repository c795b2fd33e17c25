// memwall chat: a conversation on the terminal. Replies stream to stdout as they are generated;
// each turn decodes only the new message (the history stays in the KV cache). On a terminal the
// line is edited with libedit (arrow keys, history) when the build has it. Commands are handled
// here and never sent to the model: /help, /reset forgets the conversation, /bye, /exit or
// Ctrl-D ends it; Ctrl-C stops the current reply and keeps the session. When stdin is not a
// terminal, each line of it is a user message (a script), commands included. A reply's
// reasoning (Qwen3.5's <think>, Gemma 4's thought channel) is shown on stderr, dimmed.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "common.h"
#include "line_reader.h"
#include "spec_options.h"

namespace cli {
namespace {

mw_chat* g_chat = nullptr;                // for the SIGINT handler
volatile sig_atomic_t g_replying = 0;     // a reply is being generated
volatile sig_atomic_t g_interrupted = 0;  // Ctrl-C at the prompt

void on_sigint(int) {
    if (g_replying && g_chat) {
        mw_chat_cancel(g_chat);  // async-signal-safe
    } else {
        g_interrupted = 1;
        const char hint[] = "\n(Ctrl-D or /bye ends the chat)\n> ";
        [[maybe_unused]] ssize_t n = write(STDERR_FILENO, hint, sizeof hint - 1);
    }
}

constexpr const char* kHelp =
    "commands (never sent to the model):\n"
    "  /help         this list\n"
    "  /reset        forget the conversation (the system prompt stays)\n"
    "  /bye, /exit   end the chat (also /quit, or Ctrl-D)\n"
    "Ctrl-C stops a reply; on a terminal, arrow keys edit the line and recall earlier ones\n";

// The template's name and where it comes from, in one line.
std::string template_line(const mw_model* model, const std::string& tmpl) {
    char* info = mw_chat_template_info(model, tmpl.empty() ? nullptr : tmpl.c_str());
    if (!info) return fmt::format("chat template: unknown ({})", mw_last_error());
    const nlohmann::json j = nlohmann::json::parse(info, nullptr, false);
    mw_free_string(info);
    if (!j.is_object()) return "chat template: unknown";
    const std::string name = j.value("name", "");
    const std::string origin = j.value("origin", "");
    const std::string where = origin == "model"     ? "from the GGUF, tokenizer.chat_template"
                              : origin == "builtin" ? "built-in, --chat-template"
                              : origin == "text"    ? "given as text or a file"
                                                    : j.value("description", origin);
    return fmt::format("chat template: {} ({})", name, where);
}

bool g_reasoning_shown = false;  // reasoning was printed and the answer has not begun

bool print_text(void*, const char* text, size_t len) {
    if (g_reasoning_shown) {
        std::fputc('\n', stderr);  // the answer on a line of its own
        g_reasoning_shown = false;
    }
    std::fwrite(text, 1, len, stdout);
    std::fflush(stdout);
    return true;
}

// The reply's reasoning goes to stderr (stdout holds the answers alone), dimmed on a terminal.
bool print_reasoning(void*, const char* text, size_t len) {
    static const bool tty = isatty(STDERR_FILENO);
    if (tty) std::fputs("\033[2m", stderr);
    std::fwrite(text, 1, len, stderr);
    if (tty) std::fputs("\033[0m", stderr);
    std::fflush(stderr);
    g_reasoning_shown = true;
    return true;
}

}  // namespace

void add_chat_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("chat", "Chat with the model on the terminal");
    struct Options {
        ModelOptions model;
        std::string system_prompt;
        ChatTemplateOptions chat_template;
        int n_predict = -1;
        uint32_t n_ctx = 0;
        uint32_t n_batch = 512;
        std::string threads;
        SamplingOptions sampling;
        KvCacheOptions kv;
        PacingOptions pacing;
        bool force = false;
        bool verbose = false;
        bool hide_reasoning = false;
        SpecOptions spec;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    opt->model.add_budget_to(*cmd);
    cmd->add_option("--system-prompt", opt->system_prompt, "System prompt (-sys)");
    opt->chat_template.add_to(*cmd);
    cmd->add_flag("--hide-reasoning", opt->hide_reasoning,
                  "Do not show the model's reasoning (<think>, thought or analysis channel); "
                  "it is shown on stderr, dimmed, by default");
    cmd->add_option("-n,--n-predict", opt->n_predict,
                    "Tokens per reply (-1: until an end token or a full context)")
        ->capture_default_str();
    cmd->add_option("-c,--ctx-size", opt->n_ctx,
                    "Context size in tokens (0: min(training context, 4096))")
        ->capture_default_str();
    cmd->add_option("-b,--batch-size", opt->n_batch, "Prompt tokens per step")
        ->capture_default_str();
    cmd->add_option("-t,--threads", opt->threads, "Threads (default: physical performance cores)");
    opt->sampling.add_to(*cmd, true);
    opt->kv.add_to(*cmd);
    opt->pacing.add_to(*cmd);
    cmd->add_flag("--force", opt->force, "Run even when the plan says the model does not fit");
    cmd->add_flag("--verbose", opt->verbose,
                  "Print the prompt and reply speed of each turn (and speculation's acceptance)");
    opt->spec.add_to(*cmd);
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.n_predict < -1 || o.n_predict == 0) {
            fail_usage(
                fmt::format("chat: -n {}: expected a positive token count or -1", o.n_predict));
        }
        const std::string tmpl = o.chat_template.read();
        const std::string template_vars = o.chat_template.variables();
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = o.n_ctx;
        cp.n_batch = o.n_batch;
        cp.n_threads = parse_threads(o.threads);
        o.kv.apply(cp);
        refuse_unsupported_spec(o.spec, o.model);
        if (o.model.mem_budget.empty())
            check_fit_or_fail(o.model.path, cp, o.force, o.spec.enabled(), o.spec.plan_draft(),
                              o.spec.draft_max, o.spec.plan_mtp());
        opt->model.verbose = o.verbose;
        ModelPtr model = load_model(o.model);
        if (cp.n_ctx > 0)
            warn_context_beyond_training(mw_model_n_ctx_train(model.get()), cp.n_ctx, "chat");

        mw_chat_params chp = mw_chat_default_params();
        chp.system_prompt = o.system_prompt.empty() ? nullptr : o.system_prompt.c_str();
        chp.chat_template = tmpl.empty() ? nullptr : tmpl.c_str();
        chp.template_kwargs = template_vars.empty() ? nullptr : template_vars.c_str();
        if (!o.hide_reasoning) chp.on_reasoning = print_reasoning;
        chp.n_predict = o.n_predict;
        chp.sampling = o.sampling.params();
        Pacing pacing(o.pacing, o.verbose);
        chp.pacer = pacing.get();
        const SpecSetup spec = prepare_speculation(o.spec, o.model);
        if (spec.on) {
            chp.speculative = &spec.params;
            chp.draft_model = spec.draft_model.get();
        }
        mw_chat* raw = nullptr;
        if (mw_status st = mw_chat_create(model.get(), &cp, &chp, &raw); st != MW_OK) {
            fail_status(st, "chat");
        }
        std::unique_ptr<mw_chat, void (*)(mw_chat*)> chat(raw, mw_chat_free);
        g_chat = chat.get();
        struct sigaction sa {};
        sa.sa_handler = on_sigint;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, nullptr);

        const bool interactive = isatty(STDIN_FILENO);
        fmt::print(stderr, "{}\n", template_line(model.get(), tmpl));
        LineReader reader(interactive);
        if (interactive) {
            fmt::print(stderr,
                       "chat with {}: /help lists the commands, /bye or Ctrl-D ends the chat, "
                       "Ctrl-C stops a reply\n",
                       mw_model_desc(model.get()));
        }
        std::string line;
        for (;;) {
            if (!reader.read("> ", line)) break;  // Ctrl-D, or the end of the script
            g_interrupted = 0;
            while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
            if (line.empty()) continue;
            if (line == "/exit" || line == "/quit" || line == "/bye") break;
            if (line == "/reset") {
                mw_chat_reset(chat.get());
                fmt::print(stderr, "(conversation forgotten)\n");
                continue;
            }
            if (line == "/help" || line == "/?") {
                fmt::print(stderr, "{}", kHelp);
                continue;
            }
            // A lone unknown /word is a mistyped command, not a message (text with a space, or a
            // path such as /usr/bin/env, is sent).
            if (line[0] == '/' && line.size() > 1 &&
                line.find_first_not_of("abcdefghijklmnopqrstuvwxyz", 1) == std::string::npos) {
                fmt::print(stderr, "unknown command {}: /help lists them (not sent)\n", line);
                continue;
            }
            mw_chat_reply r{};
            g_replying = 1;
            const mw_status st =
                mw_chat_send(chat.get(), line.data(), line.size(), print_text, nullptr, &r);
            g_replying = 0;
            std::fputc('\n', stdout);
            std::fflush(stdout);
            if (st != MW_OK) {
                fmt::print(stderr, "error: {}\n", mw_last_error());
                if (st == MW_ERR_INVALID_ARGUMENT) continue;  // a message too long: say so, go on
                fail("chat stopped");
            }
            if (r.n_dropped_turns > 0) {
                fmt::print(stderr,
                           "(the conversation outgrew the context: the {} oldest messages were "
                           "dropped; the system prompt stays)\n",
                           r.n_dropped_turns);
            }
            if (r.cancelled) fmt::print(stderr, "(reply stopped)\n");
            if (r.context_full) fmt::print(stderr, "(reply stopped: the context is full)\n");
            if (o.verbose) {
                fmt::print(stderr,
                           "[prompt {} tokens, {} reused, {} decoded in {:.0f} ms; reply {} tokens "
                           "in {:.0f} ms, {:.2f} tok/s]\n",
                           r.n_prompt_tokens, r.n_reused_tokens,
                           r.n_prompt_tokens - r.n_reused_tokens, r.prompt_ms, r.n_generated,
                           r.decode_ms,
                           r.decode_ms > 0 ? 1000.0 * r.n_generated / r.decode_ms : 0.0);
                if (spec.on) print_spec_report(mw_chat_spec_stats(chat.get()), spec.label);
            }
        }
        g_chat = nullptr;
        pacing.print_summary();
    });
}

}  // namespace cli
