#include "api/api_template_kwargs.h"

#include <string>

#include "base/error.h"

namespace mw {

nlohmann::json template_kwargs_of(const char* text, const char* params) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        fail(ErrorKind::invalid_argument, "{}.template_kwargs is not JSON: {}", params, e.what());
    }
    if (!j.is_object()) {
        fail(ErrorKind::invalid_argument,
             "{}.template_kwargs must be a JSON object (e.g. {{\"enable_thinking\": false}}), not "
             "{}",
             params, std::string(text).substr(0, 80));
    }
    return j;
}

}  // namespace mw
