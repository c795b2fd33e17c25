// A Jinja2 template interpreter, as Hugging Face transformers renders chat templates:
// Python Jinja2 3.1 in an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// the loopcontrols extension; `tojson` is json.dumps (ensure_ascii=False); raise_exception() and
// strftime_now() are defined. It knows nothing of models: it renders text from variables.
//
// A template is untrusted input: parsing and rendering never crash or hang, and resource use is
// bounded (Limits). Every failure is a TemplateError naming the template, the line and the
// construct.
//
//   Template t = Template::parse(source, "chat_template");
//   Dict vars;
//   vars.set(Value::string("messages"), ...);
//   std::string text = t.render(vars);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "template/ast.h"
#include "template/error.h"
#include "template/evaluator.h"
#include "template/value.h"

namespace mw::tmpl {

struct RenderOptions {
    // What strftime_now() returns whatever its format; nullopt: today's date, formatted.
    std::optional<std::string> strftime_now;
    Limits limits;
};

class Template {
  public:
    // Parses once; render as often as needed (from several threads at once too).
    // Throws TemplateError (syntax). Sources beyond max_source_bytes are refused.
    static Template parse(std::string_view source, std::string name);
    static constexpr size_t max_source_bytes = size_t(4) << 20;

    // Throws TemplateError: the template raised, or a limit was reached.
    std::string render(const Dict& variables, const RenderOptions& options = {}) const;

    const std::string& name() const { return name_; }

  private:
    std::shared_ptr<const Body> body_;
    std::string name_;
};

}  // namespace mw::tmpl
