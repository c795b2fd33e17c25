// The chat-template cases of ../shared (testdata/chat-templates and the template families): one
// case rendered by memwall's interpreter against Python Jinja2's render of it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mw::test {

struct JinjaTally {
    size_t ok = 0;      // renders equal to Jinja2's
    size_t errors = 0;  // refused where Jinja2 raised
};

// Renders `source` (the case's template, c["template"] its name) with `context` as the variables
// and "26 Jul 2024" as strftime_now. Where Jinja2 rendered (c["expected"] a string) the text must
// equal it; where Jinja2 raised (an object) the render must fail with an error that names the
// template, and a line when `line_required`. Test failures otherwise; counts into tally.
void expect_renders_as_jinja2(const std::string& source, const nlohmann::ordered_json& c,
                              const nlohmann::ordered_json& context, bool line_required,
                              JinjaTally& tally);

}  // namespace mw::test
