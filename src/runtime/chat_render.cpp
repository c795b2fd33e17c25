// TEMPORARY (replaced when the template interpreter lands): ChatML only.
#include "runtime/chat_render.h"

namespace mw {

std::function<std::string(const nlohmann::json& messages)> chat_renderer(const LoadedModel&,
                                                                         const std::string&) {
    return [](const nlohmann::json& messages) {
        std::string out;
        for (const auto& m : messages) {
            out += "<|im_start|>" + m["role"].get<std::string>() + "\n" +
                   (m["content"].is_string() ? m["content"].get<std::string>() : "") +
                   "<|im_end|>\n";
        }
        return out + "<|im_start|>assistant\n";
    };
}

}  // namespace mw
