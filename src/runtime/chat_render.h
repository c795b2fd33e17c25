// Renders an OpenAI-style conversation with a model's chat template, for the server and chat.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "runtime/loaded_model.h"

namespace mw {

// A renderer for `model`: the template is `override` (a built-in name or template text) when
// given, else the file's tokenizer.chat_template. Rendering adds the generation prompt.
std::function<std::string(const nlohmann::json& messages)> chat_renderer(
    const LoadedModel& model, const std::string& override);

}  // namespace mw
