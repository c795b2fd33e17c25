// memwall template: renders a Jinja chat template for checking and debugging, as transformers'
// apply_chat_template would (Python Jinja2's sandbox): the render goes to stdout byte for
// byte; a template that fails to parse or raises exits 1 naming the template, line and
// construct.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "common.h"

namespace cli {

namespace {

std::string read_all(const std::string& path, const char* what) {
    if (path == "-") {
        std::stringstream ss;
        ss << std::cin.rdbuf();
        return ss.str();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) fail(fmt::format("{}: cannot read the {}", path, what));
    return ss.str();
}

}  // namespace

void add_template_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "template", "Render a Jinja chat template with a context, as transformers would");
    struct Options {
        std::string file;
        std::string context;
        std::string strftime_now;
        bool list = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("FILE", opt->file, "The template (Jinja); - reads it from stdin");
    cmd->add_option("--context", opt->context,
                    "JSON object of the variables: messages, add_generation_prompt, bos_token, "
                    "eos_token, tools, ... (- reads stdin)");
    auto* strftime =
        cmd->add_option("--strftime-now", opt->strftime_now,
                        "What strftime_now() returns, whatever its format (default: the current "
                        "date, formatted)");
    cmd->add_flag("--list", opt->list, "List the built-in templates (for --chat-template NAME)");
    cmd->callback([opt, strftime] {
        if (opt->list) {
            const int32_t n = mw_chat_builtin_templates(nullptr, 0);
            std::vector<const char*> names(static_cast<size_t>(n));
            mw_chat_builtin_templates(names.data(), names.size());
            for (const char* name : names) fmt::print("{}\n", name);
            return;
        }
        if (opt->file.empty()) fail_usage("template: give the template FILE (see --help)");
        if (opt->context.empty()) fail_usage("template: give --context CTX.json (see --help)");
        if (opt->file == "-" && opt->context == "-")
            fail_usage("template: the template and the context cannot both come from stdin");
        const std::string source = read_all(opt->file, "template");
        const std::string context = read_all(opt->context, "context");
        char* out = nullptr;
        size_t len = 0;
        const mw_status st =
            mw_template_render(source.data(), source.size(), opt->file.c_str(), context.c_str(),
                               strftime->count() ? opt->strftime_now.c_str() : nullptr, &out, &len);
        if (st != MW_OK) {
            const std::string error = mw_last_error();
            if (error.rfind("the context", 0) == 0) fail(opt->context + ": " + error);
            fail(error);
        }
        const size_t written = std::fwrite(out, 1, len, stdout);
        mw_free_string(out);
        if (written != len || std::fflush(stdout) != 0) fail("template: cannot write stdout");
    });
}

}  // namespace cli
