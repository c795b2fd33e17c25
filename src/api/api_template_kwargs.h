// The template_kwargs of mw_chat_params and mw_server_params: a JSON object's text.
#pragma once

#include <nlohmann/json.hpp>

namespace mw {

// The object, or throws mw::Error (invalid_argument) naming `params`.template_kwargs and what
// is wrong with the text.
nlohmann::json template_kwargs_of(const char* text, const char* params);

}  // namespace mw
