// memwall: one binary, one subcommand per job. Flags follow llama.cpp where it has them.
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "common.h"

namespace {

// llama.cpp spells some flags as multi-letter single-dash options, which CLI11 cannot declare;
// they are rewritten to their long forms before parsing.
std::vector<std::string> expand_aliases(int argc, char** argv) {
    static const std::pair<const char*, const char*> kAliases[] = {
        {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-np", "--parallel"},
        {"-ngl", "--n-gpu-layers"}, {"-mg", "--main-gpu"},      {"-sys", "--system-prompt"},
    };
    std::vector<std::string> args;
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        for (const auto& [from, to] : kAliases) {
            if (a == from) a = to;
        }
        args.push_back(a);
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{fmt::format(
        "memwall {}: run large language models on devices under the memory wall\n\n"
        "  memwall                     the main job: measure this machine, then list which models\n"
        "                              it can run, at which quantization and context, how fast\n"
        "  memwall -m FILE -p TEXT     plan FILE for this machine, then run it (memwall run's\n"
        "                              options apply)\n"
        "  memwall COMMAND --help      every option of a command, with its default",
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

    std::vector<std::string> args = expand_aliases(argc, argv);
    std::vector<char*> cargs;
    try {
        // No arguments: the main job (probe, then plan the catalogue for this machine).
        // `memwall -m FILE ...`: plan the file for this machine, then run it.
        if (args.size() == 1) return cli::run_main_job();
        if (args[1] == "-m" || args[1] == "--model") args = cli::plan_then_run_args(args);
        for (std::string& a : args) cargs.push_back(a.data());
        app.parse(int(cargs.size()), cargs.data());
        if (app.get_subcommands().empty()) {
            fmt::print("{}", app.help());
            return 0;
        }
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const cli::Failure& f) {
        fmt::print(stderr, "error: {}\n", f.message);
        return f.exit_code;
    } catch (const std::exception& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return 1;
    }
    return 0;
}
