// memwall plot: an SVG chart of a JSON document memwall wrote (bench --duration --json, plan
// --json) or of a bar chart spec (bench/compare --plot writes one). The charts are the library's
// (mw_chart_svg); `bench --plot` and `plan --plot` draw the same without a file in between.
#include <fmt/format.h>

#include "common.h"

namespace cli {

void add_plot_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "plot",
        "Chart a JSON document as SVG: bench --duration --json (over time), plan --json "
        "(roofline), or a bar chart spec");
    struct Options {
        std::string input;
        std::string output;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("input", opt->input, "The JSON document")->required();
    cmd->add_option("-o,--output", opt->output, "The SVG file to write")->required();
    cmd->callback([opt] {
        PromptOptions in;
        in.file = opt->input;
        write_chart(in.read(), opt->output);
    });
}

}  // namespace cli
