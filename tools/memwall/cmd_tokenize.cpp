// memwall tokenize: the token ids of a text, like llama.cpp's llama-tokenize, so the two can be
// compared on any string.
#include <fmt/format.h>

#include "common.h"

namespace cli {

void add_tokenize_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("tokenize", "Print the tokens of a text (like llama-tokenize)");
    struct Options {
        ModelOptions model;
        PromptOptions prompt;
        bool ids = false;
        bool no_bos = false;
        bool no_parse_special = false;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->prompt.add_to(*cmd);
    cmd->add_flag("--ids", opt->ids, "Print only the ids, as [id, id, ...]");
    cmd->add_flag("--no-bos", opt->no_bos, "Do not add BOS/EOS even if the vocab asks for them");
    cmd->add_flag("--no-parse-special", opt->no_parse_special,
                  "Treat special-token text like <s> as plain text");
    cmd->callback([opt] {
        if (opt->prompt.text.empty() && opt->prompt.file.empty())
            fail_usage("tokenize: give -p TEXT or -f FILE");
        ModelPtr owner = load_model(opt->model, /*vocab_only=*/true, /*quiet=*/true);
        const mw_model* model = owner.get();
        const std::string text = opt->prompt.read();
        const auto tokens = tokenize(model, text, !opt->no_bos, !opt->no_parse_special);
        if (opt->ids) {
            std::string line = "[";
            for (size_t i = 0; i < tokens.size(); ++i)
                line += fmt::format("{}{}", i ? ", " : "", tokens[i]);
            fmt::print("{}]\n", line);
        } else {
            for (mw_token t : tokens) fmt::print("{:6d} -> '{}'\n", t, token_piece(model, t, true));
        }
    });
}

}  // namespace cli
