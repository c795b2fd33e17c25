// Every case of ../shared/testdata/chat-templates (33 real models' templates, the exact renders
// of Python Jinja2 in transformers' environment) rendered byte for byte: through the library,
// and through `memwall template` as a user runs it. Cases where Jinja2 raises must fail.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/jinja_case.h"
#include "support/test_support.h"

namespace {

using nlohmann::ordered_json;

struct Corpus {
    std::string dir;
    ordered_json cases;
    ordered_json conversations;
};

const Corpus& corpus() {
    static const Corpus c = [] {
        Corpus k;
        k.dir = mw::test::shared_path("testdata/chat-templates");
        k.cases = ordered_json::parse(mw::test::read_text(k.dir + "/cases.json"));
        k.conversations = ordered_json::parse(mw::test::read_text(k.dir + "/conversations.json"));
        return k;
    }();
    return c;
}

// The render variables of a case, as render.py passes them (tools only when the case has them).
ordered_json context_of(const ordered_json& c) {
    ordered_json ctx = ordered_json::object();
    ctx["messages"] = corpus().conversations[c["conversation"].get<std::string>()]["messages"];
    ctx["add_generation_prompt"] = c["add_generation_prompt"];
    ctx["bos_token"] = c["bos_token"];
    ctx["eos_token"] = c["eos_token"];
    if (c.contains("tools")) ctx["tools"] = c["tools"];
    return ctx;
}

std::string case_name(const ordered_json& c) {
    return fmt::format("{} / {} / add_generation_prompt={}", c["template"].get<std::string>(),
                       c["conversation"].get<std::string>(),
                       c["add_generation_prompt"].get<bool>());
}

std::string template_path(const ordered_json& c) {
    return corpus().dir + "/templates/" + c["template"].get<std::string>() + ".jinja";
}

TEST(TemplateCorpus, EveryCaseThroughTheLibrary) {
    const Corpus& k = corpus();
    ASSERT_GE(k.cases.size(), 200u);
    mw::test::JinjaTally tally;
    for (const ordered_json& c : k.cases) {
        SCOPED_TRACE(case_name(c));
        // A refusal names the template and a line.
        mw::test::expect_renders_as_jinja2(mw::test::read_text(template_path(c)), c, context_of(c),
                                           true, tally);
    }
    EXPECT_GE(tally.errors, 10u);
    EXPECT_GE(tally.ok, 190u);
}

// The same cases through the CLI: stdout byte for byte, a non-zero exit naming the template,
// the line and the construct where Jinja2 raises.
TEST(TemplateCorpus, EveryCaseThroughTheCli) {
    const Corpus& k = corpus();
    const std::string tmp = mw::test::temp_dir();
    size_t i = 0;
    for (const ordered_json& c : k.cases) {
        SCOPED_TRACE(case_name(c));
        const std::string ctx_path = fmt::format("{}/ctx{}.json", tmp, i++);
        {
            std::ofstream f(ctx_path, std::ios::binary);
            f << context_of(c).dump();
        }
        const auto r = mw::test::run_command(
            fmt::format("'{}' template '{}' --context '{}' --strftime-now '26 Jul 2024'",
                        mw::test::cli_path(), template_path(c), ctx_path));
        if (c["expected"].is_object()) {
            EXPECT_NE(r.exit_code, 0);
            EXPECT_TRUE(r.out.empty()) << r.out;
            EXPECT_NE(r.err.find(c["template"].get<std::string>() + ".jinja"), std::string::npos)
                << r.err;
            EXPECT_NE(r.err.find(", line "), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(", in "), std::string::npos) << r.err;
        } else {
            EXPECT_EQ(r.exit_code, 0) << r.err;
            EXPECT_EQ(r.out, c["expected"].get<std::string>());
        }
    }
}

}  // namespace
