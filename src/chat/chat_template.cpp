#include "chat/chat_template.h"

#include "base/error.h"
#include "chat/json_value.h"
#include "template/text.h"

namespace mw::chat {

namespace {

tmpl::Template parse_or_fail(const TemplateSource& source) {
    try {
        return tmpl::Template::parse(source.text, source.name);
    } catch (const tmpl::TemplateError& e) {
        fail(ErrorKind::invalid_argument, "{}", e.what());
    }
}

std::string origin_text(const Builtin& b) {
    return fmt::format("built-in '{}'", b.name);
}

}  // namespace

const Builtin* guess_builtin(const std::function<bool(std::string_view)>& has_token) {
    if (!has_token) return nullptr;
    // The most specific markers first.
    static const std::pair<std::vector<std::string_view>, std::string_view> kRules[] = {
        {{"<|start|>", "<|channel|>", "<|message|>"}, "gpt-oss"},
        {{"<|im_start|>", "<|im_sep|>"}, "phi4"},
        {{"<|im_start|>"}, "chatml"},
        {{"<|start_header_id|>", "<|eot_id|>"}, "llama3"},
        {{"<|turn>", "<turn|>"}, "gemma4"},
        {{"<start_of_turn>"}, "gemma"},
        {{"<|START_OF_TURN_TOKEN|>"}, "command-r"},
        {{"<|start_of_role|>"}, "granite"},
        {{"<｜User｜>", "<｜Assistant｜>"}, "deepseek3"},
        {{"[SYSTEM_PROMPT]"}, "mistral-v7-tekken"},
        {{"[INST]"}, "mistral-v3"},
        {{"<|user|>", "<|end|>"}, "phi3"},
        {{"<|EOT|>"}, "deepseek"},
    };
    for (const auto& [tokens, name] : kRules) {
        bool all = true;
        for (std::string_view t : tokens) all = all && has_token(t);
        if (all) return find_builtin(name);
    }
    return nullptr;
}

TemplateSource resolve_template(std::string_view override_name_or_text,
                                const std::optional<std::string>& model_template,
                                const std::function<bool(std::string_view)>& has_token) {
    if (!override_name_or_text.empty()) {
        if (const Builtin* b = find_builtin(override_name_or_text))
            return {std::string(b->source), std::string(b->name), TemplateOrigin::override_builtin,
                    origin_text(*b) + " (asked for)"};
        return {std::string(override_name_or_text), "--chat-template",
                TemplateOrigin::override_text, "the template given with --chat-template"};
    }
    if (model_template && !model_template->empty())
        return {*model_template, "tokenizer.chat_template", TemplateOrigin::model,
                "the model's tokenizer.chat_template"};
    if (const Builtin* b = guess_builtin(has_token))
        return {std::string(b->source), std::string(b->name), TemplateOrigin::guessed,
                origin_text(*b) +
                    " (the model has no tokenizer.chat_template; chosen from its special tokens)"};
    const Builtin* chatml = find_builtin("chatml");
    return {std::string(chatml->source), "chatml", TemplateOrigin::fallback,
            "built-in 'chatml' (the model has no tokenizer.chat_template and no known special "
            "tokens)"};
}

ChatTemplate::ChatTemplate(TemplateSource source)
    : source_(std::move(source)), template_(parse_or_fail(source_)) {}

std::string ChatTemplate::apply(const ChatInputs& in) const {
    if (!in.messages.is_array())
        fail(ErrorKind::invalid_argument, "messages must be an array, not {}",
             in.messages.type_name());
    for (size_t i = 0; i < in.messages.size(); ++i)
        if (!in.messages[i].is_object())
            fail(ErrorKind::invalid_argument, "message {} must be an object, not {}", i,
                 in.messages[i].type_name());
    if (!in.tools.is_null() && !in.tools.is_array())
        fail(ErrorKind::invalid_argument, "tools must be an array, not {}", in.tools.type_name());
    if (!in.variables.is_object())
        fail(ErrorKind::invalid_argument, "variables must be an object, not {}",
             in.variables.type_name());

    tmpl::Dict vars;
    static const char* const kReserved[] = {"messages", "tools", "add_generation_prompt",
                                            "bos_token", "eos_token"};
    for (const auto& [key, value] : in.variables.items()) {
        for (const char* r : kReserved)
            if (key == r)
                fail(ErrorKind::invalid_argument,
                     "variable '{}' is set by the chat layer and may not be given as an extra "
                     "variable",
                     key);
        vars.entries.emplace_back(tmpl::Value::string(key), json_to_value(value));
    }
    vars.set(tmpl::Value::string("messages"), json_to_value(in.messages));
    if (!in.tools.is_null()) vars.set(tmpl::Value::string("tools"), json_to_value(in.tools));
    vars.set(tmpl::Value::string("add_generation_prompt"),
             tmpl::Value::boolean(in.add_generation_prompt));
    vars.set(tmpl::Value::string("bos_token"),
             tmpl::Value::string(tmpl::text::repair_utf8(in.bos_token)));
    vars.set(tmpl::Value::string("eos_token"),
             tmpl::Value::string(tmpl::text::repair_utf8(in.eos_token)));

    tmpl::RenderOptions options;
    options.strftime_now = in.strftime_now;
    options.limits = in.limits;
    try {
        return template_.render(vars, options);
    } catch (const tmpl::TemplateError& e) {
        fail(ErrorKind::invalid_argument, "{}", e.what());
    }
}

}  // namespace mw::chat
