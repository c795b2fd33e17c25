// mw::chat_renderer, the interface `memwall chat` and `memwall serve` render prompts with: a
// loaded model's own template, an override (built-in name or text), the fallback, errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "runtime/chat_render.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace {

std::unique_ptr<mw::LoadedModel> load(mw::gguf::GgufWriter& w, const std::string& name) {
    const std::string path = mw::test::temp_dir() + "/" + name;
    w.write_file(path);
    mw::LoadOptions options;
    options.vocab_only = true;
    return mw::LoadedModel::load(path, options);
}

const nlohmann::json kMessages = nlohmann::json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "hi"},
  {"role": "assistant", "content": "yo"},
  {"role": "user", "content": "héllo"}
])");

TEST(ChatRender, ModelTemplateOverridesAndFallback) {
    mw::gguf::GgufWriter with = mw::test::tiny_model_writer({});
    with.set_string(
        "tokenizer.chat_template",
        "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}"
        "{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}");
    const auto model = load(with, "with.gguf");
    EXPECT_EQ(mw::chat_template_source(*model, "").origin, mw::chat::TemplateOrigin::model);
    EXPECT_EQ(mw::chat_renderer(*model, "")(kMessages),
              "<s>[system]Be brief.</s>[user]hi</s>[assistant]yo</s>[user]héllo</s>[assistant]");

    // A built-in by name, and template text, replace the model's.
    EXPECT_EQ(mw::chat_renderer(*model, "chatml")(kMessages),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
              "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nhéllo<|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(
        mw::chat_renderer(*model, "{{ messages | length }}{{ add_generation_prompt }}")(kMessages),
        "4True");

    // No template in the file: chatml (the tiny model has no special tokens to guess from).
    mw::gguf::GgufWriter without = mw::test::tiny_model_writer({});
    const auto plain = load(without, "without.gguf");
    const mw::chat::TemplateSource s = mw::chat_template_source(*plain, "");
    EXPECT_EQ(s.name, "chatml");
    EXPECT_FALSE(s.description.empty());
    EXPECT_EQ(mw::chat_renderer(*plain, "")(kMessages),
              mw::chat_renderer(*model, "chatml")(kMessages));

    // The richer form: tools, no generation prompt.
    mw::chat::ChatInputs in;
    in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "x"}])");
    in.tools = nlohmann::ordered_json::parse(R"([{"name": "f", "a": 1}])");
    in.add_generation_prompt = false;
    EXPECT_EQ(mw::chat_renderer_full(*model,
                                     "{{ tools | tojson }}{{ add_generation_prompt }}"
                                     "{{ eos_token }}")(in),
              "[{\"name\": \"f\", \"a\": 1}]False</s>");
}

TEST(ChatRender, ErrorsNameTheTemplateLineAndConstruct) {
    mw::gguf::GgufWriter w = mw::test::tiny_model_writer({});
    const auto model = load(w, "model.gguf");
    const auto raises = mw::chat_renderer(
        *model,
        "{% if messages[0].role != 'user' %}\n{{ raise_exception('roles must alternate') }}"
        "{% endif %}");
    try {
        raises(kMessages);
        ADD_FAILURE() << "the template did not raise";
    } catch (const mw::Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("roles must alternate"), std::string::npos) << what;
        EXPECT_NE(what.find("line 2"), std::string::npos) << what;
    }
    // A template that does not parse fails when the renderer is made.
    EXPECT_THROW(mw::chat_renderer(*model, "{% for m in messages %}"), mw::Error);
    // Messages that are not an array.
    EXPECT_THROW(mw::chat_renderer(*model, "chatml")(nlohmann::json::object()), mw::Error);
}

}  // namespace
