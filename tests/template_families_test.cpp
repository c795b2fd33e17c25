// The published chat templates of the 2026 families memwall runs (gpt-oss's harmony, Gemma 4,
// Qwen3.5, LFM2 / LFM2.5, SmolLM3: tests/data/chat-templates, PROVENANCE.md there), rendered
// byte for byte as Python's Jinja2 renders them in transformers' environment (render.py there
// made every expected string), through the interpreter and through the chat layer that `memwall
// chat` and the server use, with the keyword arguments these templates read
// (reasoning_effort, model_identity, builtin_tools, enable_thinking, ...). Where Jinja2 raises,
// memwall must fail.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "chat/chat_template.h"
#include "support/jinja_case.h"
#include "support/test_support.h"

namespace {

using nlohmann::ordered_json;

struct Families {
    std::string dir;
    ordered_json cases;
    ordered_json conversations;  // the shared corpus's and this folder's
};

const Families& families() {
    static const Families f = [] {
        Families k;
        k.dir = std::string(MEMWALL_TESTS_DIR) + "/data/chat-templates";
        k.cases = ordered_json::parse(mw::test::read_text(k.dir + "/cases.json"));
        k.conversations = ordered_json::parse(mw::test::read_text(
            mw::test::shared_path("testdata/chat-templates/conversations.json")));
        const ordered_json own =
            ordered_json::parse(mw::test::read_text(k.dir + "/conversations.json"));
        for (const auto& [name, conv] : own.items()) k.conversations[name] = conv;
        return k;
    }();
    return f;
}

const ordered_json& conversation_of(const ordered_json& c) {
    return families().conversations.at(c["conversation"].get<std::string>());
}

std::string case_name(const ordered_json& c) {
    return fmt::format("{} / {} / add_generation_prompt={} / {}", c["template"].get<std::string>(),
                       c["conversation"].get<std::string>(), c["add_generation_prompt"].get<bool>(),
                       c.value("variables", ordered_json::object()).dump());
}

std::string source_of(const ordered_json& c) {
    return mw::test::read_text(families().dir + "/templates/" + c["template"].get<std::string>() +
                               ".jinja");
}

// As render.py passes them: the case's variables, then messages, add_generation_prompt,
// bos_token, eos_token, and tools only when the conversation has them.
ordered_json context_of(const ordered_json& c) {
    ordered_json ctx = c.value("variables", ordered_json::object());
    const ordered_json& conv = conversation_of(c);
    ctx["messages"] = conv["messages"];
    ctx["add_generation_prompt"] = c["add_generation_prompt"];
    ctx["bos_token"] = c["bos_token"];
    ctx["eos_token"] = c["eos_token"];
    if (conv.contains("tools")) ctx["tools"] = conv["tools"];
    return ctx;
}

TEST(TemplateFamilies, EveryCaseThroughTheInterpreter) {
    const Families& k = families();
    ASSERT_GE(k.cases.size(), 270u);
    std::set<std::string> templates;
    mw::test::JinjaTally tally;
    for (const ordered_json& c : k.cases) {
        SCOPED_TRACE(case_name(c));
        templates.insert(c["template"].get<std::string>());
        mw::test::expect_renders_as_jinja2(source_of(c), c, context_of(c), false, tally);
    }
    EXPECT_EQ(templates.size(), 8u);
    EXPECT_GE(tally.ok, 270u);
    EXPECT_GE(tally.errors, 2u);
}

// The chat layer (what `memwall chat` and the server call): the template parsed once, the
// variables given as ChatInputs::variables.
TEST(TemplateFamilies, EveryCaseThroughTheChatLayer) {
    const Families& k = families();
    std::map<std::string, std::unique_ptr<mw::chat::ChatTemplate>> parsed;
    size_t n_ok = 0;
    for (const ordered_json& c : k.cases) {
        SCOPED_TRACE(case_name(c));
        const std::string name = c["template"].get<std::string>();
        auto& t = parsed[name];
        if (!t) {
            t = std::make_unique<mw::chat::ChatTemplate>(mw::chat::TemplateSource{
                source_of(c), name, mw::chat::TemplateOrigin::model, name});
        }
        const ordered_json& conv = conversation_of(c);
        mw::chat::ChatInputs in;
        in.messages = conv["messages"];
        if (conv.contains("tools")) in.tools = conv["tools"];
        in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
        in.bos_token = c["bos_token"].get<std::string>();
        in.eos_token = c["eos_token"].get<std::string>();
        in.variables = c.value("variables", ordered_json::object());
        in.strftime_now = "26 Jul 2024";
        if (c["expected"].is_object()) {
            EXPECT_THROW(t->apply(in), mw::Error);
            continue;
        }
        const std::string got = t->apply(in);
        EXPECT_EQ(got, c["expected"].get<std::string>());
        n_ok += got == c["expected"].get<std::string>();
    }
    EXPECT_GE(n_ok, 270u);
}

// The built-in 'gpt-oss' (for a GGUF without tokenizer.chat_template) renders what the published
// template renders, for every case but those it leaves out on purpose: builtin_tools, nested
// tool schemas (`any` there), and the inputs the published template refuses.
TEST(TemplateFamilies, BuiltinGptOssRendersAsThePublishedTemplate) {
    const mw::chat::ChatTemplate builtin(mw::chat::resolve_template("gpt-oss", std::nullopt));
    size_t n_compared = 0;
    for (const ordered_json& c : families().cases) {
        if (c["template"] != "openai-gpt-oss-120b" || c["expected"].is_object() ||
            c["conversation"] == "tools_schemas" ||
            c.value("variables", ordered_json::object()).contains("builtin_tools"))
            continue;
        SCOPED_TRACE(case_name(c));
        const ordered_json& conv = conversation_of(c);
        mw::chat::ChatInputs in;
        in.messages = conv["messages"];
        if (conv.contains("tools")) in.tools = conv["tools"];
        in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
        in.variables = c.value("variables", ordered_json::object());
        in.strftime_now = "26 Jul 2024";
        EXPECT_EQ(builtin.apply(in), c["expected"].get<std::string>());
        ++n_compared;
    }
    EXPECT_GE(n_compared, 30u);
}

// The built-in 'gemma4' against Gemma 4's published template, on every conversation without
// tools (the built-in leaves tools out).
TEST(TemplateFamilies, BuiltinGemma4RendersAsThePublishedTemplate) {
    const mw::chat::ChatTemplate builtin(mw::chat::resolve_template("gemma4", std::nullopt));
    size_t n_compared = 0;
    for (const ordered_json& c : families().cases) {
        if (c["template"] != "google-gemma-4-31B-it" || c["expected"].is_object() ||
            conversation_of(c).contains("tools"))
            continue;
        SCOPED_TRACE(case_name(c));
        mw::chat::ChatInputs in;
        in.messages = conversation_of(c)["messages"];
        in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
        in.bos_token = c["bos_token"].get<std::string>();
        in.variables = c.value("variables", ordered_json::object());
        EXPECT_EQ(builtin.apply(in), c["expected"].get<std::string>());
        ++n_compared;
    }
    EXPECT_GE(n_compared, 20u);
}

}  // namespace
