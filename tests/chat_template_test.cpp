// The chat layer: built-in templates against the published templates of their families
// (../shared's corpus), choosing a template as llama.cpp does, the inputs a conversation may
// have, and the C API on a model whose GGUF carries a template.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "chat/chat_template.h"
#include "memwall.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace {

using mw::chat::ChatInputs;
using mw::chat::ChatTemplate;
using mw::chat::TemplateOrigin;
using nlohmann::ordered_json;

struct Corpus {
    ordered_json cases;
    ordered_json conversations;
};

const Corpus& corpus() {
    static const Corpus c = [] {
        const std::string dir = mw::test::shared_path("testdata/chat-templates");
        return Corpus{ordered_json::parse(mw::test::read_text(dir + "/cases.json")),
                      ordered_json::parse(mw::test::read_text(dir + "/conversations.json"))};
    }();
    return c;
}

ChatInputs inputs_of(const ordered_json& c) {
    ChatInputs in;
    in.messages = corpus().conversations[c["conversation"].get<std::string>()]["messages"];
    if (c.contains("tools")) in.tools = c["tools"];
    in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    in.bos_token = c["bos_token"].get<std::string>();
    in.eos_token = c["eos_token"].get<std::string>();
    in.strftime_now = "26 Jul 2024";
    return in;
}

bool has_system(const ordered_json& c) {
    for (const auto& m : corpus().conversations[c["conversation"].get<std::string>()]["messages"])
        if (m["role"] == "system") return true;
    return false;
}

ChatTemplate builtin(std::string_view name) {
    return ChatTemplate(mw::chat::resolve_template(name, std::nullopt));
}

struct Family {
    const char* builtin;
    const char* reference;  // a template of ../shared/testdata/chat-templates
    bool system_only;       // compare only conversations with a system message (the reference
                            // adds a model-specific default system prompt otherwise)
};

const Family kFamilies[] = {
    {"chatml", "openhermes-2.5-mistral-7b", false},
    {"llama2", "llama-2-7b-chat", false},
    {"llama3", "llama-3-8b-instruct-v2", false},
    {"mistral-v1", "mistral-7b-instruct-v0.1", false},
    {"mistral-v3", "mistral-7b-instruct-v0.3", false},
    {"mistral-v7-tekken", "mistral-small-3.2-24b-instruct-2506", true},
    {"phi3", "phi-3.5-mini-instruct", false},
    {"phi4", "phi-4", false},
    {"gemma", "gemma-2-2b-it", false},
    {"deepseek", "deepseek-coder-33b-instruct", false},
    {"deepseek3", "deepseek-r1", false},
    {"command-r", "command-r-plus", false},
    {"granite", "granite-3.0-8b-instruct", false},
    {"zephyr", "zephyr-7b-beta", false},
    {"vicuna", "vicuna-13b-1.1", false},
};

// Byte for byte what the published template renders, for every conversation it renders; where
// it refuses one (a system message for Gemma and Mistral v0.1), ours renders it anyway.
TEST(ChatBuiltins, RenderAsTheirFamilysPublishedTemplate) {
    for (const Family& f : kFamilies) {
        const ChatTemplate t = builtin(f.builtin);
        size_t n_compared = 0;
        for (const ordered_json& c : corpus().cases) {
            if (c["template"] != f.reference || (f.system_only && !has_system(c))) continue;
            SCOPED_TRACE(fmt::format("built-in {} vs {} / {} / add_generation_prompt={}", f.builtin,
                                     f.reference, c["conversation"].get<std::string>(),
                                     c["add_generation_prompt"].get<bool>()));
            const ChatInputs in = inputs_of(c);
            if (c["expected"].is_object()) {
                std::string out;
                EXPECT_NO_THROW(out = t.apply(in));
                if (has_system(c)) {
                    EXPECT_NE(out.find("You are a helpful"), std::string::npos) << out;
                }
                continue;
            }
            EXPECT_EQ(t.apply(in), c["expected"].get<std::string>());
            ++n_compared;
        }
        EXPECT_GE(n_compared, f.system_only ? 2u : 3u) << f.builtin << " vs " << f.reference;
    }
}

ChatInputs simple_conversation() {
    ChatInputs in;
    in.messages = ordered_json::parse(R"([{"role": "system", "content": "S"},
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"}])");
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    return in;
}

// The built-ins without a template of their family in the corpus, against the documented
// layouts (Mistral's v7 template, DeepSeek V2's chat format).
TEST(ChatBuiltins, DocumentedLayouts) {
    EXPECT_EQ(builtin("mistral-v7").apply(simple_conversation()),
              "<s>[SYSTEM_PROMPT] S[/SYSTEM_PROMPT][INST] Q1[/INST] A1</s>[INST] Q2[/INST]");
    ChatInputs ds = simple_conversation();
    ds.eos_token = "<｜end▁of▁sentence｜>";
    EXPECT_EQ(builtin("deepseek2").apply(ds),
              "<s>S\n\nUser: Q1\n\nAssistant: A1<｜end▁of▁sentence｜>User: Q2\n\nAssistant:");
    EXPECT_EQ(builtin("gemma").apply(simple_conversation()),
              "<s><start_of_turn>user\nS\n\nQ1<end_of_turn>\n<start_of_turn>model\nA1<end_of_turn>"
              "\n<start_of_turn>user\nQ2<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(builtin("mistral-v1").apply(simple_conversation()),
              "<s>[INST] S\n\nQ1 [/INST]A1</s> [INST] Q2 [/INST]");
}

TEST(ChatBuiltins, EveryOneParsesAndRendersAnEmptyAndAToolConversation) {
    ASSERT_GE(mw::chat::builtins().size(), 15u);
    for (const auto& b : mw::chat::builtins()) {
        SCOPED_TRACE(std::string(b.name));
        const ChatTemplate t = builtin(b.name);
        ChatInputs empty;
        EXPECT_NO_THROW(t.apply(empty));
        const ordered_json& tool = corpus().conversations["tool_call"];
        ChatInputs in;
        in.messages = tool["messages"];
        in.tools = tool["tools"];
        EXPECT_NO_THROW(t.apply(in));
        EXPECT_EQ(mw::chat::find_builtin(b.name), &b);
    }
}

TEST(ChatResolve, AsLlamaCppChooses) {
    const std::string model_tmpl = "{{ 'model template' }}";
    auto r = mw::chat::resolve_template("llama3", model_tmpl);
    EXPECT_EQ(r.origin, TemplateOrigin::override_builtin);
    EXPECT_EQ(r.name, "llama3");
    r = mw::chat::resolve_template("{{ 'given' }}", model_tmpl);
    EXPECT_EQ(r.origin, TemplateOrigin::override_text);
    EXPECT_EQ(ChatTemplate(r).apply({}), "given");
    r = mw::chat::resolve_template("", model_tmpl);
    EXPECT_EQ(r.origin, TemplateOrigin::model);
    EXPECT_EQ(ChatTemplate(r).apply({}), "model template");
    const auto has = [](std::initializer_list<std::string_view> tokens) {
        std::vector<std::string> v(tokens.begin(), tokens.end());
        return [v](std::string_view t) { return std::find(v.begin(), v.end(), t) != v.end(); };
    };
    r = mw::chat::resolve_template("", std::nullopt, has({"<|start_header_id|>", "<|eot_id|>"}));
    EXPECT_EQ(r.origin, TemplateOrigin::guessed);
    EXPECT_EQ(r.name, "llama3");
    EXPECT_NE(r.description.find("special tokens"), std::string::npos) << r.description;
    EXPECT_EQ(mw::chat::resolve_template("", "", has({"<start_of_turn>"})).name, "gemma");
    EXPECT_EQ(
        mw::chat::resolve_template("", std::nullopt, has({"<|im_start|>", "<|im_sep|>"})).name,
        "phi4");
    // gpt-oss's harmony tokens (its vocabulary has <|end|> too, which Phi-3's rule reads).
    EXPECT_EQ(mw::chat::resolve_template(
                  "", std::nullopt,
                  has({"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>"}))
                  .name,
              "gpt-oss");
    EXPECT_EQ(
        mw::chat::resolve_template("", std::nullopt, has({"<|turn>", "<turn|>", "<bos>"})).name,
        "gemma4");
    r = mw::chat::resolve_template("", std::nullopt, has({"<s>"}));
    EXPECT_EQ(r.origin, TemplateOrigin::fallback);
    EXPECT_EQ(r.name, "chatml");
}

TEST(ChatTemplateInputs, BadInputsAreErrorsNamingWhatIsWrong) {
    const ChatTemplate t = builtin("chatml");
    const auto error_of = [&](const ChatInputs& in) {
        try {
            t.apply(in);
        } catch (const mw::Error& e) {
            EXPECT_EQ(e.kind(), mw::ErrorKind::invalid_argument);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    ChatInputs in;
    in.messages = ordered_json::object();
    EXPECT_NE(error_of(in).find("messages must be an array"), std::string::npos);
    in.messages = ordered_json::parse(R"([{"role": "user", "content": "x"}, 5])");
    EXPECT_NE(error_of(in).find("message 1 must be an object"), std::string::npos);
    in.messages = ordered_json::array();
    in.tools = "x";
    EXPECT_NE(error_of(in).find("tools must be an array"), std::string::npos);
    in.tools = nullptr;
    in.variables = ordered_json::parse(R"({"messages": []})");
    EXPECT_NE(error_of(in).find("'messages'"), std::string::npos);
    // A template that raises: the error names the template, the line and the construct.
    const ChatTemplate strict(mw::chat::resolve_template(
        "{% for m in messages %}\n{% if m.role == 'system' %}{{ raise_exception('no system') }}"
        "{% endif %}{% endfor %}",
        std::nullopt));
    ChatInputs sys = simple_conversation();
    try {
        strict.apply(sys);
        ADD_FAILURE() << "rendered";
    } catch (const mw::Error& e) {
        EXPECT_STREQ(e.what(),
                     "template '--chat-template', line 2, in call of raise_exception(): "
                     "TemplateError: no system");
    }
    try {
        ChatTemplate bad(mw::chat::resolve_template("{% for %}", std::nullopt));
        ADD_FAILURE() << "parsed";
    } catch (const mw::Error& e) {
        EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
    }
}

TEST(ChatTemplateInputs, ExtraVariablesAndToolsAreSeen) {
    const ChatTemplate t(mw::chat::resolve_template(
        "{{ tools is defined }}|{{ enable_thinking }}|{{ tools | tojson if tools is defined }}",
        std::nullopt));
    ChatInputs in;
    in.variables = ordered_json::parse(R"({"enable_thinking": false})");
    EXPECT_EQ(t.apply(in), "False|False|");
    in.tools = ordered_json::parse(R"([{"z": 1, "a": 2}])");
    EXPECT_EQ(t.apply(in), "True|False|[{\"z\": 1, \"a\": 2}]");
}

// mw_chat_* on a model whose GGUF has a tokenizer.chat_template, and on one without.
TEST(ChatCApi, ModelTemplateAndFallback) {
    const std::string dir = mw::test::temp_dir();
    mw::gguf::GgufWriter w = mw::test::tiny_model_writer({});
    w.set_string(
        "tokenizer.chat_template",
        "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}"
        "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}");
    w.write_file(dir + "/with.gguf");
    mw::test::tiny_model_writer({}).write_file(dir + "/without.gguf");

    mw_model_params params = mw_model_default_params();
    params.vocab_only = true;
    mw_model* with = nullptr;
    mw_model* without = nullptr;
    ASSERT_EQ(mw_model_load((dir + "/with.gguf").c_str(), &params, &with), MW_OK)
        << mw_last_error();
    ASSERT_EQ(mw_model_load((dir + "/without.gguf").c_str(), &params, &without), MW_OK)
        << mw_last_error();

    const mw_chat_message messages[] = {{"user", "hi"}, {"assistant", "yo"}};
    char buf[256];
    int32_t n = mw_chat_apply_template(with, nullptr, messages, 2, true, buf, sizeof buf);
    EXPECT_EQ(std::string(buf), "<s>[user]hi</s>[assistant]yo</s>[assistant]");
    EXPECT_EQ(n, int32_t(std::string(buf).size()));
    // Too small a buffer: the length needed, the start of the text, NUL-terminated.
    char small[5];
    EXPECT_EQ(mw_chat_apply_template(with, nullptr, messages, 2, true, small, sizeof small), n);
    EXPECT_STREQ(small, "<s>[");
    // No template in the file: chatml, said so.
    n = mw_chat_apply_template(without, nullptr, messages, 1, true, buf, sizeof buf);
    EXPECT_STREQ(buf, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    char* info = mw_chat_template_info(without, nullptr);
    ASSERT_NE(info, nullptr);
    const ordered_json j = ordered_json::parse(info);
    mw_free_string(info);
    EXPECT_EQ(j["name"], "chatml");
    EXPECT_EQ(j["origin"], "fallback");
    // A built-in by name, and template text.
    n = mw_chat_apply_template(with, "llama3", messages, 1, false, buf, sizeof buf);
    EXPECT_STREQ(buf, "<s><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
    n = mw_chat_apply_template(nullptr, "{{ messages | length }}", messages, 2, true, buf, 8);
    EXPECT_STREQ(buf, "2");
    // Errors: -1 and a message naming the line and construct.
    EXPECT_EQ(mw_chat_apply_template(with, "{{ messages[0].nope.deeper }}", messages, 2, true, buf,
                                     sizeof buf),
              -1);
    EXPECT_NE(std::string(mw_last_error()).find("line 1, in attribute"), std::string::npos)
        << mw_last_error();
    EXPECT_EQ(mw_chat_apply_template(nullptr, nullptr, messages, 2, true, buf, sizeof buf), -1);

    // The JSON request: tools and tool calls, key order kept.
    char* out = nullptr;
    size_t len = 0;
    ASSERT_EQ(mw_chat_render(with, "{{ tools | tojson }}|{{ messages[0].tool_calls[0].id }}",
                             R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1"}]}],
                                 "tools": [{"b": 1, "a": 2}], "add_generation_prompt": false})",
                             &out, &len),
              MW_OK)
        << mw_last_error();
    EXPECT_EQ(std::string(out, len), "[{\"b\": 1, \"a\": 2}]|c1");
    mw_free_string(out);
    EXPECT_EQ(mw_chat_render(with, nullptr, R"({"messages": [], "bogus": 1})", &out, &len),
              MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("'bogus'"), std::string::npos);
    EXPECT_EQ(mw_chat_render(with, nullptr, "{not json", &out, &len), MW_ERR_INVALID_ARGUMENT);

    const int32_t n_builtins = mw_chat_builtin_templates(nullptr, 0);
    std::vector<const char*> names(size_t(n_builtins), nullptr);
    EXPECT_EQ(mw_chat_builtin_templates(names.data(), names.size()), n_builtins);
    EXPECT_STREQ(names[0], "chatml");
    mw_model_free(with);
    mw_model_free(without);
}

}  // namespace
