// memwall: one binary, one subcommand per job. Flags follow llama.cpp where it has them.
// Exit status: 0 done, 1 a failure (a file, the model, the machine), 2 a usage error (an unknown
// command or option, a missing or invalid value), as command-line tools use.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"

namespace {

// llama.cpp spells some flags as multi-letter single-dash options, which CLI11 would split into
// letters ("-fa" as -f a): those memwall has are rewritten to their long forms before parsing,
// those it need not act on are dropped, and the others are refused by name.
struct LlamaFlag {
    const char* flag;
    const char* long_form;  // memwall's spelling; "" = accepted and ignored; null = unsupported
    const char* why;        // for the ignored and the unsupported: what memwall does instead
};
constexpr LlamaFlag kLlamaFlags[] = {
    {"-ctk", "--cache-type-k", ""},
    {"-ctv", "--cache-type-v", ""},
    {"-np", "--parallel", ""},
    {"-ngl", "--n-gpu-layers", ""},
    {"-mg", "--main-gpu", ""},
    {"-sys", "--system-prompt", ""},
    {"-fa", "", "memwall always computes attention block by block, as flash attention does"},
    {"-no-cnv", "", "memwall run never starts a conversation (memwall chat does)"},
    {"-cb", "", "memwall serve always batches its slots continuously"},
    {"-tb", nullptr, "one thread count, -t, serves prompt and decode"},
    {"-tbd", nullptr, "the draft model runs on the CPU with the target's -t"},
    {"-ub", nullptr, "-b sets the batch"},
    {"-cnv", nullptr, "memwall chat is the conversation"},
    {"-nocb", nullptr, "memwall serve always batches its slots continuously"},
    {"-hf", nullptr, "memwall pull hf://OWNER/REPO/FILE.gguf downloads a file, then -m FILE"},
    {"-hfr", nullptr, "memwall pull hf://OWNER/REPO/FILE.gguf downloads a file, then -m FILE"},
    {"-hff", nullptr, "memwall pull hf://OWNER/REPO/FILE.gguf downloads a file, then -m FILE"},
    {"-mu", nullptr, "memwall pull URL downloads a file, then -m FILE"},
    {"-nkvo", nullptr, "the KV cache stays in the CPU's memory"},
    {"-ot", nullptr, "--mem-budget reads a MoE model's experts from storage as needed"},
    {"-cmoe", nullptr, "--mem-budget reads a MoE model's experts from storage as needed"},
    {"-ncmoe", nullptr, "--mem-budget reads a MoE model's experts from storage as needed"},
    {"-sm", nullptr, "-mg picks the one Vulkan device used"},
    {"-ts", nullptr, "-mg picks the one Vulkan device used"},
    {"-dev", nullptr, "-mg picks the one Vulkan device used"},
    {"-md", "--model-draft", ""},
    {"-ngld", nullptr, "the draft model runs on the CPU with the target's -t"},
    {"-td", nullptr, "the draft model runs on the CPU with the target's -t"},
    {"-ctkd", nullptr, "the draft model's KV cache takes the target's -ctk/-ctv"},
    {"-ctvd", nullptr, "the draft model's KV cache takes the target's -ctk/-ctv"},
};

// Values -fa takes in llama.cpp's newer spelling (-fa on); dropped with it.
bool is_switch_value(const std::string& a) {
    for (const char* v : {"on", "off", "auto", "1", "0", "true", "false"}) {
        if (a == v) return true;
    }
    return false;
}

// Options whose value is free text (it may start with a dash).
bool takes_text(const std::string& a) {
    for (const char* o : {"-p", "--prompt", "--system-prompt", "-r", "--reverse-prompt"}) {
        if (a == o) return true;
    }
    return false;
}

std::vector<std::string> expand_aliases(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        const bool is_value = !args.empty() && takes_text(args.back());
        const LlamaFlag* known = nullptr;
        for (const LlamaFlag& f : kLlamaFlags) {
            if (a == f.flag) known = &f;
        }
        if (is_value || i == 0) {
            args.push_back(a);
            continue;
        }
        if (known && known->long_form && *known->long_form) {
            args.push_back(known->long_form);
        } else if (known && known->long_form) {
            if (std::strcmp(known->flag, "-fa") == 0 && i + 1 < argc &&
                is_switch_value(argv[i + 1]))
                ++i;
        } else if (known) {
            cli::fail(fmt::format("{} is llama.cpp's; not supported by memwall: {}", a, known->why),
                      cli::kUsageError);
        } else if (a.size() > 2 && a[0] == '-' && a[1] != '-' &&
                   a.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", 1) == std::string::npos) {
            // A word after one dash: no memwall option, and CLI11 would read it as letters.
            cli::fail(fmt::format("unknown option {} (not supported by memwall; its options are a "
                                  "letter after one dash, or a word after two: --{})",
                                  a, a.substr(1)),
                      cli::kUsageError);
        } else {
            args.push_back(a);
        }
    }
    return args;
}

// Edits (insert, delete, substitute, swap two neighbours) between a and b.
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                                d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

// `memwall rnu ...`: not a command; the nearest one, when it is near.
void check_command(CLI::App& app, const std::string& word) {
    std::string best;
    size_t best_distance = SIZE_MAX;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_name() == word) return;
        const size_t d = edit_distance(word, sub->get_name());
        if (d < best_distance) {
            best_distance = d;
            best = sub->get_name();
        }
    }
    const bool near = best_distance <= std::max<size_t>(1, std::min(word.size(), best.size()) / 2);
    cli::fail(fmt::format("unknown command \"{}\"{} (memwall --help lists the commands)", word,
                          near ? fmt::format("; did you mean `memwall {}`?", best) : ""),
              cli::kUsageError);
}

// CLI11's message, in memwall's words where they help: a missing -m is named as such.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
    std::string command;
    for (const CLI::App* sub : app.get_subcommands()) command = sub->get_name();
    const std::string what = e.what();
    if (dynamic_cast<const CLI::RequiredError*>(&e) && what.find("--model") != std::string::npos) {
        return fmt::format("{}: no model given: -m FILE.gguf (--model) is required", command);
    }
    return (command.empty() ? "" : command + ": ") + what +
           fmt::format(" (memwall {}--help lists the options)",
                       command.empty() ? "" : command + " ");
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{fmt::format(
        "memwall {}: run large language models on devices under the memory wall\n\n"
        "  memwall                     the main job: measure this machine, then list which models\n"
        "                              it can run, at which quantization and context, how fast\n"
        "  memwall --min-tps N         the same, each model in the best quality that decodes at\n"
        "                              N tok/s or more (default 10; 0: the best that fits)\n"
        "  memwall -m FILE -p TEXT     plan FILE for this machine, then run it (memwall run's\n"
        "                              options apply)\n"
        "  memwall COMMAND --help      every option of a command, with its default\n\n"
        "Exit status: 0 done, 1 a failure (a file, the model, the machine), 2 a usage error\n"
        "(an unknown command or option, a missing or invalid value)",
        mw_version())};
    app.set_version_flag("--version", mw_version());
    // Every option's default appears in --help (subcommands inherit both).
    app.option_defaults()->always_capture_default();
    app.formatter(cli::help_formatter());
    app.require_subcommand(0, 1);
    app.fallthrough(false);
    cli::add_run_command(app);
    cli::add_tokenize_command(app);
    cli::add_logits_command(app);
    cli::add_plan_command(app);
    cli::add_probe_command(app);
    cli::add_bench_command(app);
    cli::add_convert_command(app);
    cli::add_perplexity_command(app);
    cli::add_synth_command(app);
    cli::add_quantize_command(app);
    cli::add_imatrix_command(app);
    cli::add_pull_command(app);
    cli::add_verify_command(app);
    cli::add_plot_command(app);
    cli::add_serve_command(app);
    cli::add_chat_command(app);
    cli::add_template_command(app);

    std::vector<std::string> args;
    std::vector<char*> cargs;
    try {
        args = expand_aliases(argc, argv);
        // No arguments: the main job (probe, then plan the catalogue for this machine).
        // `memwall -m FILE ...`: plan the file for this machine, then run it.
        if (args.size() == 1) return cli::run_main_job();
        if (args.size() == 3 && args[1] == "--min-tps") {
            char* end = nullptr;
            const double min_tps = std::strtod(args[2].c_str(), &end);
            if (args[2].empty() || *end != '\0' || !(min_tps >= 0))
                cli::fail_usage("--min-tps " + args[2] + ": expected a decode speed in tok/s");
            return cli::run_main_job(min_tps);
        }
        if (args[1] == "-m" || args[1] == "--model") args = cli::plan_then_run_args(args);
        if (args[1][0] != '-') check_command(app, args[1]);
        for (std::string& a : args) cargs.push_back(a.data());
        app.parse(int(cargs.size()), cargs.data());
        if (app.get_subcommands().empty()) {
            fmt::print("{}", app.help());
            return 0;
        }
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        fmt::print(stderr, "error: {}\n", usage_message(app, e));
        return cli::kUsageError;
    } catch (const cli::Failure& f) {
        fmt::print(stderr, "error: {}\n", f.message);
        return f.exit_code;
    } catch (const std::exception& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 1;
    }
    return 0;
}
