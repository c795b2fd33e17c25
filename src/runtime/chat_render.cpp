// chat_render.h: a loaded model's chat template (src/chat) as a function for the server and
// `memwall chat`.
#include "runtime/chat_render.h"

#include <memory>
#include <optional>

#include "format/gguf.h"

namespace mw {

namespace {

std::string token_text(const LoadedModel& model, int32_t id) {
    const Vocab& vocab = *model.vocab;
    if (id < 0 || id >= vocab.n_tokens()) return "";
    return std::string(vocab.token_text(id));
}

}  // namespace

chat::TemplateSource chat_template_source(const LoadedModel& model, const std::string& override) {
    std::optional<std::string> model_template;
    if (const gguf::Value* v = model.gguf.find("tokenizer.chat_template");
        v && v->type == gguf::ValueType::string)
        model_template = std::string(v->str);
    const auto has_token = [&model](std::string_view text) {
        return model.vocab->find_token(text) != kNoToken;
    };
    return chat::resolve_template(override, model_template, has_token);
}

std::function<std::string(chat::ChatInputs inputs)> chat_renderer_full(
    const LoadedModel& model, const std::string& override) {
    auto tmpl = std::make_shared<const chat::ChatTemplate>(chat_template_source(model, override));
    std::string bos = token_text(model, model.vocab->bos());
    std::string eos = token_text(model, model.vocab->eos());
    return [tmpl, bos = std::move(bos), eos = std::move(eos)](chat::ChatInputs inputs) {
        inputs.bos_token = bos;
        inputs.eos_token = eos;
        return tmpl->apply(inputs);
    };
}

std::function<std::string(const nlohmann::json& messages)> chat_renderer(
    const LoadedModel& model, const std::string& override, const nlohmann::json& variables) {
    auto render = chat_renderer_full(model, override);
    return [render = std::move(render),
            variables = nlohmann::ordered_json(variables)](const nlohmann::json& messages) {
        chat::ChatInputs inputs;
        inputs.messages = nlohmann::ordered_json(messages);
        if (variables.is_object()) inputs.variables = variables;
        inputs.add_generation_prompt = true;
        return render(std::move(inputs));
    };
}

}  // namespace mw
