#include "support/jinja_case.h"

#include <gtest/gtest.h>

#include "chat/json_value.h"
#include "template/template.h"

namespace mw::test {

void expect_renders_as_jinja2(const std::string& source, const nlohmann::ordered_json& c,
                              const nlohmann::ordered_json& context, bool line_required,
                              JinjaTally& tally) {
    const std::string name = c["template"].get<std::string>();
    const tmpl::Value vars = chat::json_to_value(context);
    tmpl::RenderOptions options;
    options.strftime_now = "26 Jul 2024";
    const bool expect_error = c["expected"].is_object();
    try {
        const auto t = tmpl::Template::parse(source, name);
        const std::string got = t.render(vars.dict(), options);
        if (expect_error) {
            ADD_FAILURE() << "Jinja2 raised (" << c.value("error_message", "")
                          << ") but the render succeeded:\n"
                          << got;
        } else {
            EXPECT_EQ(got, c["expected"].get<std::string>());
            tally.ok += got == c["expected"].get<std::string>();
        }
    } catch (const tmpl::TemplateError& e) {
        if (!expect_error) {
            ADD_FAILURE() << e.what();
            return;
        }
        ++tally.errors;
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        if (line_required) {
            EXPECT_GT(e.line(), 0) << e.what();
        }
    }
}

}  // namespace mw::test
