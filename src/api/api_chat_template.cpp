// The C API of chat templates: Jinja rendering (mw_template_render) and conversations rendered
// with a model's template (mw_chat_*). The work is in src/template and src/chat.
#include <cstring>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/api_model.h"
#include "base/error.h"
#include "chat/chat_template.h"
#include "chat/json_value.h"
#include "memwall.h"
#include "template/template.h"
#include "template/text.h"

namespace {

using mw::ErrorKind;
using mw::fail;

char* copy_string(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (!out) throw std::bad_alloc();
    std::memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
    return out;
}

nlohmann::ordered_json parse_json(const char* text, const char* what) {
    if (!text) fail(ErrorKind::invalid_argument, "{}: NULL instead of JSON", what);
    try {
        return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail(ErrorKind::invalid_argument, "{}: {}", what, e.what());
    }
}

// The template for (model, tmpl), as mw_chat_apply_template describes.
mw::chat::TemplateSource template_for(const mw_model* model, const char* tmpl) {
    const mw::LoadedModel* m = mw::loaded_model_of(model);
    if (!m && !tmpl)
        fail(ErrorKind::invalid_argument,
             "a chat template needs a model or a template (both NULL)");
    std::optional<std::string> model_template;
    std::function<bool(std::string_view)> has_token;
    if (m) {
        if (const mw::gguf::Value* v = m->gguf.find("tokenizer.chat_template");
            v && v->type == mw::gguf::ValueType::string)
            model_template = std::string(v->str);
        has_token = [m](std::string_view text) {
            return m->vocab->find_token(text) != mw::kNoToken;
        };
    }
    return mw::chat::resolve_template(tmpl ? tmpl : "", model_template, has_token);
}

std::string token_text(const mw::LoadedModel* m, int32_t id) {
    if (!m || id < 0 || id >= m->vocab->n_tokens()) return "";
    return std::string(m->vocab->token_text(id));
}

std::string render_chat(const mw_model* model, const char* tmpl, mw::chat::ChatInputs& in) {
    const mw::LoadedModel* m = mw::loaded_model_of(model);
    if (m) {
        in.bos_token = token_text(m, m->vocab->bos());
        in.eos_token = token_text(m, m->vocab->eos());
    }
    const mw::chat::ChatTemplate t(template_for(model, tmpl));
    return t.apply(in);
}

const char* origin_name(mw::chat::TemplateOrigin o) {
    switch (o) {
        case mw::chat::TemplateOrigin::override_builtin:
            return "builtin";
        case mw::chat::TemplateOrigin::override_text:
            return "text";
        case mw::chat::TemplateOrigin::model:
            return "model";
        case mw::chat::TemplateOrigin::guessed:
            return "guessed";
        case mw::chat::TemplateOrigin::fallback:
            return "fallback";
    }
    return "unknown";
}

}  // namespace

mw_status mw_template_render(const char* source, size_t source_len, const char* name,
                             const char* context_json, const char* strftime_now, char** out,
                             size_t* out_len) {
    if (!out || (!source && source_len > 0)) {
        mw::set_api_last_error("mw_template_render: invalid arguments");
        return MW_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    return mw::guarded([&] {
        const std::string template_name = name ? name : "template";
        const nlohmann::ordered_json context = parse_json(context_json, "the context");
        if (!context.is_object())
            fail(ErrorKind::invalid_argument, "the context must be a JSON object, not {}",
                 context.type_name());
        std::string text;
        try {
            const mw::tmpl::Template t = mw::tmpl::Template::parse(
                std::string_view(source ? source : "", source_len), template_name);
            mw::tmpl::RenderOptions options;
            if (strftime_now) options.strftime_now = std::string(strftime_now);
            text = t.render(mw::chat::json_to_value(context).dict(), options);
        } catch (const mw::tmpl::TemplateError& e) {
            fail(ErrorKind::invalid_argument, "{}", e.what());
        }
        *out = copy_string(text);
        if (out_len) *out_len = text.size();
    });
}

int32_t mw_chat_apply_template(const mw_model* model, const char* tmpl,
                               const mw_chat_message* messages, size_t n_messages,
                               bool add_generation_prompt, char* buf, int32_t buf_size) {
    if ((!messages && n_messages > 0) || buf_size < 0 || (!buf && buf_size > 0)) {
        mw::set_api_last_error("mw_chat_apply_template: invalid arguments");
        return -1;
    }
    std::string prompt;
    const mw_status st = mw::guarded([&] {
        mw::chat::ChatInputs in;
        for (size_t i = 0; i < n_messages; ++i) {
            if (!messages[i].role)
                fail(ErrorKind::invalid_argument, "message {} has no role (NULL)", i);
            nlohmann::ordered_json msg = nlohmann::ordered_json::object();
            msg["role"] = mw::tmpl::text::repair_utf8(messages[i].role);
            msg["content"] =
                messages[i].content
                    ? nlohmann::ordered_json(mw::tmpl::text::repair_utf8(messages[i].content))
                    : nlohmann::ordered_json();
            in.messages.push_back(std::move(msg));
        }
        in.add_generation_prompt = add_generation_prompt;
        prompt = render_chat(model, tmpl, in);
        if (prompt.size() > size_t(INT32_MAX))
            fail(ErrorKind::invalid_argument, "the prompt is longer than 2 GiB");
    });
    if (st != MW_OK) return -1;
    if (buf && buf_size > 0) {
        const size_t n = std::min(prompt.size(), size_t(buf_size) - 1);
        std::memcpy(buf, prompt.data(), n);
        buf[n] = '\0';
    }
    return int32_t(prompt.size());
}

mw_status mw_chat_render(const mw_model* model, const char* tmpl, const char* request_json,
                         char** out, size_t* out_len) {
    if (!out) {
        mw::set_api_last_error("mw_chat_render: out is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    return mw::guarded([&] {
        const nlohmann::ordered_json request = parse_json(request_json, "the chat request");
        if (!request.is_object())
            fail(ErrorKind::invalid_argument, "the chat request must be a JSON object, not {}",
                 request.type_name());
        mw::chat::ChatInputs in;
        for (const auto& [key, value] : request.items()) {
            if (key == "messages") {
                in.messages = value;
            } else if (key == "tools") {
                in.tools = value;
            } else if (key == "add_generation_prompt") {
                if (!value.is_boolean())
                    fail(ErrorKind::invalid_argument, "add_generation_prompt must be a boolean");
                in.add_generation_prompt = value.get<bool>();
            } else if (key == "variables") {
                in.variables = value;
            } else if (key == "strftime_now") {
                if (!value.is_string())
                    fail(ErrorKind::invalid_argument, "strftime_now must be a string");
                in.strftime_now = value.get<std::string>();
            } else {
                fail(ErrorKind::invalid_argument,
                     "unknown key '{}' in the chat request (messages, tools, "
                     "add_generation_prompt, variables, strftime_now)",
                     key);
            }
        }
        if (!request.contains("messages"))
            fail(ErrorKind::invalid_argument, "the chat request has no messages");
        const std::string prompt = render_chat(model, tmpl, in);
        *out = copy_string(prompt);
        if (out_len) *out_len = prompt.size();
    });
}

char* mw_chat_template_info(const mw_model* model, const char* tmpl) {
    char* out = nullptr;
    const mw_status st = mw::guarded([&] {
        const mw::chat::TemplateSource s = template_for(model, tmpl);
        nlohmann::ordered_json j;
        j["name"] = s.name;
        j["origin"] = origin_name(s.origin);
        j["description"] = s.description;
        j["source"] = mw::tmpl::text::repair_utf8(s.text);
        out = copy_string(j.dump());
    });
    return st == MW_OK ? out : nullptr;
}

int32_t mw_chat_builtin_templates(const char** names, size_t n) {
    const auto& all = mw::chat::builtins();
    for (size_t i = 0; i < all.size() && i < n && names; ++i) names[i] = all[i].name.data();
    return int32_t(all.size());
}
