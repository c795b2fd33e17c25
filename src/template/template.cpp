#include "template/template.h"

#include "template/parser.h"

namespace mw::tmpl {

Template Template::parse(std::string_view source, std::string name) {
    Template t;
    t.name_ = std::move(name);
    try {
        if (source.size() > max_source_bytes)
            throw_error(ErrorKind::limit, "the template has {} bytes, more than the {} allowed",
                        source.size(), max_source_bytes);
        t.body_ = std::make_shared<const Body>(tmpl::parse(source, ParseOptions{}));
    } catch (TemplateError& e) {
        e.set_template_name(t.name_);
        throw;
    }
    return t;
}

std::string Template::render(const Dict& variables, const RenderOptions& options) const {
    RenderContext context{variables, options.strftime_now, options.limits};
    try {
        Evaluator ev(context);
        return ev.render(*body_);
    } catch (TemplateError& e) {
        e.set_template_name(name_);
        throw;
    }
}

}  // namespace mw::tmpl
