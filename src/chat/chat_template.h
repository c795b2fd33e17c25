// Chat templates for models: which template a model uses, and a conversation rendered to the
// prompt text the model expects, the way Hugging Face transformers' apply_chat_template does
// (src/template/ renders the Jinja; this layer knows about messages, tools and special tokens).
//
// Which template (as llama.cpp chooses, see resolve_template):
//   1. an override: the name of a built-in ("chatml", "llama3", ...) or Jinja template text
//      (--chat-template NAME_OR_TEXT; --chat-template-file reads the text from a file);
//   2. the model's tokenizer.chat_template metadata;
//   3. a built-in guessed from the model's special tokens, else "chatml".
//
// Typical use, from the server or `memwall chat`:
//
//   chat::ChatTemplate tmpl(chat::resolve_template(override, model_template, has_token));
//   chat::ChatInputs in;
//   in.messages = request["messages"];        // [{"role": ..., "content": ...}, ...]
//   in.tools = request.value("tools", nlohmann::ordered_json());  // null: no tools
//   in.bos_token = "<s>";  in.eos_token = "</s>";
//   std::string prompt = tmpl.apply(in);      // throws mw::Error naming template, line, construct
//
// Messages are passed to the template as they are (transformers' conventions: tool_calls
// with function.arguments as an object, tool results as role "tool"). Keys keep their order
// (nlohmann::ordered_json), because templates print tool schemas with tojson.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "template/template.h"

namespace mw::chat {

struct Builtin {
    std::string_view name;
    std::string_view description;
    std::string_view source;  // Jinja
};

// The built-in templates, in a fixed order (builtin_templates.cpp).
const std::vector<Builtin>& builtins();
const Builtin* find_builtin(std::string_view name);

// The built-in that fits a model without a template, from the text of its special tokens
// (`has_token("<|im_start|>")`), or nullptr when nothing matches.
const Builtin* guess_builtin(const std::function<bool(std::string_view)>& has_token);

enum class TemplateOrigin {
    override_builtin,  // named by the caller
    override_text,     // Jinja text given by the caller
    model,             // the model's tokenizer.chat_template
    guessed,           // a built-in chosen from the model's special tokens
    fallback,          // chatml: nothing else applied
};

struct TemplateSource {
    std::string text;  // Jinja
    std::string name;  // for error messages: "chatml", "tokenizer.chat_template", ...
    TemplateOrigin origin;
    std::string description;  // one line for the user: which template is used and why
};

// `override_name_or_text` empty: no override. `model_template` nullopt or empty: the model has
// none. `has_token` may be empty (no guessing).
TemplateSource resolve_template(std::string_view override_name_or_text,
                                const std::optional<std::string>& model_template,
                                const std::function<bool(std::string_view)>& has_token = {});

struct ChatInputs {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    // An array of tool definitions, or null: then `tools` is undefined in the template (not
    // none), as in ../shared's corpus.
    nlohmann::ordered_json tools;
    bool add_generation_prompt = true;
    std::string bos_token;
    std::string eos_token;
    // More variables, e.g. {"enable_thinking": false} or {"documents": [...]}; they may not
    // replace the ones above.
    nlohmann::ordered_json variables = nlohmann::ordered_json::object();
    // What strftime_now() returns; nullopt: today's date (as transformers does).
    std::optional<std::string> strftime_now;
    tmpl::Limits limits;
};

class ChatTemplate {
  public:
    // Parses the template once. Throws mw::Error (invalid_argument) with the parse error.
    explicit ChatTemplate(TemplateSource source);

    // The prompt text. Throws mw::Error (invalid_argument): bad inputs (messages not an array
    // of objects, ...), or the template raised (e.g. "roles must alternate"), with the message
    // naming the template, line and construct.
    std::string apply(const ChatInputs& inputs) const;

    const TemplateSource& source() const { return source_; }

  private:
    TemplateSource source_;
    tmpl::Template template_;
};

}  // namespace mw::chat
