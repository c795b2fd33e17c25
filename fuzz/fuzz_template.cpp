// libFuzzer target: a chat template (Jinja), untrusted input that comes with a downloaded
// model. Parsed, then rendered with a conversation that has every kind of message (system,
// user, assistant with tool calls, tool results, unicode), tools and special tokens. Seeds: the
// templates of ../shared/testdata/chat-templates and the built-ins (fuzz_make_seeds).
//
// A finding is a crash, a sanitizer report, a hang or a heap beyond the limit, an exception
// other than TemplateError, an error that does not name the template and a line, or a render
// that is not valid UTF-8.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "chat/json_value.h"
#include "fuzz_util.h"
#include "heap_limit.h"
#include "template/template.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_template";

const tmpl::Dict& context() {
    static const tmpl::Dict vars = [] {
        const auto json = nlohmann::ordered_json::parse(R"json({
          "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "  Weather in Paris? 你好 👋\n\t"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": 3}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21.5}"},
            {"role": "assistant", "content": "<think>sunny</think>Sunny."},
            {"role": "user", "content": "Thanks"}
          ],
          "tools": [{"type": "function", "function": {"name": "get_weather",
            "description": "Weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
          "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
        })json");
        return chat::json_to_value(json).dict();
    }();
    return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const tmpl::Dict& vars = context();  // built before the heap limit counts
    fuzz::HeapLimit limit(uint64_t(256) << 20);
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    tmpl::RenderOptions options;
    options.strftime_now = "26 Jul 2024";
    // Smaller than the defaults, so that every input runs in milliseconds.
    options.limits.max_output_bytes = 1 << 20;
    options.limits.max_iterations = 100000;
    options.limits.max_work_bytes = 64 << 20;
    options.limits.max_call_depth = 40;
    try {
        const tmpl::Template t = tmpl::Template::parse(source, "fuzz");
        const std::string out = t.render(vars, options);
        if (!fuzz::is_valid_utf8(out)) fuzz::violated(kTarget, "the render is not valid UTF-8");
    } catch (const tmpl::TemplateError& e) {
        const std::string_view message = e.what();
        if (message.substr(0, 16) != "template 'fuzz'," || e.line() <= 0)
            fuzz::violated(kTarget, "an error that does not name the template and line:", message);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "an exception other than TemplateError", e.what());
    }
    return 0;
}
