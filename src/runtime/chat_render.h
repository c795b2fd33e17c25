// Renders an OpenAI-style conversation with a model's chat template, for the server and chat.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "chat/chat_template.h"
#include "runtime/loaded_model.h"

namespace mw {

// A renderer for `model`: the template is `override` (a built-in name or template text) when
// given, else the file's tokenizer.chat_template, else a built-in guessed from the special
// tokens, else chatml. The template is parsed once, here (a bad one throws mw::Error now).
// Rendering adds the generation prompt, gives the template the text of the model's BOS and
// EOS tokens, and throws mw::Error (naming the template, line and construct) when the
// template raises. `messages`: [{"role": ..., "content": ..., "tool_calls": [...]}, ...].
// `variables`: more template variables (e.g. {"enable_thinking": false}), an object or null.
std::function<std::string(const nlohmann::json& messages)> chat_renderer(
    const LoadedModel& model, const std::string& override,
    const nlohmann::json& variables = nullptr);

// Which template chat_renderer uses (its description says which and why, for the user).
chat::TemplateSource chat_template_source(const LoadedModel& model, const std::string& override);

// The richer form: tools, add_generation_prompt, more variables; inputs.bos_token and
// inputs.eos_token are set from the model.
std::function<std::string(chat::ChatInputs inputs)> chat_renderer_full(const LoadedModel& model,
                                                                       const std::string& override);

}  // namespace mw
