// The C API of the HTTP server (memwall.h, "HTTP server"): creates a context of one sequence
// per slot on a loaded model and serves it.
#include <memory>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "api/api_speculative.h"
#include "api/api_template_kwargs.h"
#include "chat/reply.h"
#include "memwall.h"
#include "runtime/chat_render.h"
#include "runtime/context.h"
#include "runtime/mtp.h"
#if defined(MEMWALL_SERVER)
#include "server/http_server.h"
#endif

struct mw_server {
    std::unique_ptr<mw::Context> ctx;
    std::unique_ptr<mw::Context> draft_ctx;  // speculative decoding with a draft model
#if defined(MEMWALL_SERVER)
    std::unique_ptr<mw::server::HttpServer> http;
#endif
};

extern "C" {

void mw_server_params_init(mw_server_params* out, size_t struct_size) {
    mw_server_params p{};
    p.host = "127.0.0.1";
    p.port = 8080;
    p.api_key = nullptr;
    p.model_name = nullptr;
    p.chat_template = nullptr;
    p.queue_max = 64;
    p.timeout_s = 600.0;
    p.max_body_bytes = 8u << 20;
    p.max_tokens = -1;
    p.sampling = mw_sampler_default_params();
    p.pacer = nullptr;
    p.cors_origins = nullptr;
    p.header_timeout_s = 10.0;
    p.max_connections = 1024;
    p.max_connections_per_address = 256;
    p.max_header_bytes = 8192;
    p.log_format = MW_SERVER_LOG_NONE;
    p.log = nullptr;
    p.log_user = nullptr;
    p.speculative = nullptr;
    p.draft_model = nullptr;
    p.template_kwargs = nullptr;
    p.reasoning_format = MW_REASONING_AUTO;
    mw::init_params(out, struct_size, p);
}

mw_status mw_server_create(mw_model* model, const mw_context_params* ctx_params,
                           const mw_server_params* params, mw_server** out) {
    if (!out) {
        mw::set_api_last_error("mw_server_create: out is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    const mw::LoadedModel* loaded = mw::loaded_model_of(model);
    if (!loaded) {
        mw::set_api_last_error("mw_server_create: model is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
#if !defined(MEMWALL_SERVER)
    (void)ctx_params;
    (void)params;
    mw::set_api_last_error("this build of memwall has no HTTP server (built without cpp-httplib)");
    return MW_ERR_UNSUPPORTED;
#else
    mw_server_params p;
    if (!mw::read_params(params, mw_server_default_params(), &p, "mw_server_params"))
        return MW_ERR_INVALID_ARGUMENT;
    mw_context_params cp;
    if (!mw::read_params(ctx_params, mw_context_default_params(), &cp, "mw_context_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return mw::guarded([&] {
        using LogFormat = mw::server::ServerOptions::LogFormat;
        LogFormat log_format = LogFormat::off;
        switch (p.log_format) {
            case MW_SERVER_LOG_NONE:
                log_format = LogFormat::off;
                break;
            case MW_SERVER_LOG_TEXT:
                log_format = LogFormat::text;
                break;
            case MW_SERVER_LOG_JSON:
                log_format = LogFormat::json;
                break;
            default:
                mw::fail(mw::ErrorKind::invalid_argument,
                         "mw_server_params.log_format is {}: expected MW_SERVER_LOG_NONE (0), "
                         "_TEXT (1) or _JSON (2)",
                         p.log_format);
        }
        auto srv = std::make_unique<mw_server>();
        srv->ctx = std::make_unique<mw::Context>(*loaded, mw::context_params_of(cp));
        mw::server::ServerOptions o;
        o.host = p.host ? p.host : "127.0.0.1";
        o.port = p.port;
        o.api_key = p.api_key ? p.api_key : "";
        o.model_name = p.model_name ? p.model_name : "";
        o.queue_max = p.queue_max < 0 ? 0 : uint32_t(p.queue_max);
        o.timeout_s = p.timeout_s > 0 ? p.timeout_s : 600.0;
        o.max_body_bytes = p.max_body_bytes ? size_t(p.max_body_bytes) : size_t(8u << 20);
        o.max_tokens = p.max_tokens;
        o.sampling = mw::sampler_params_of(p.sampling);
        if (p.header_timeout_s > 0) o.header_timeout_s = p.header_timeout_s;
        if (p.max_connections > 0) o.max_connections = unsigned(p.max_connections);
        if (p.max_connections_per_address > 0) {
            o.max_connections_per_address = unsigned(p.max_connections_per_address);
        }
        if (p.max_header_bytes > 0) o.max_header_bytes = size_t(p.max_header_bytes);
        for (std::string_view rest = p.cors_origins ? p.cors_origins : ""; !rest.empty();) {
            const size_t comma = rest.find(',');
            std::string_view one = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
            while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
            if (!one.empty()) o.cors_origins.emplace_back(one);
        }
        o.log_format = log_format;
        if (p.log) {
            o.log = [log = p.log, user = p.log_user](const std::string& line) {
                log(line.c_str(), user);
            };
        }
        const std::string tmpl = p.chat_template ? p.chat_template : "";
        const std::string template_text = mw::chat_template_source(*loaded, tmpl).text;
        if (p.reasoning_format != MW_REASONING_AUTO && p.reasoning_format != MW_REASONING_NONE) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "mw_server_params.reasoning_format is {}: expected MW_REASONING_AUTO (0) or "
                     "MW_REASONING_NONE (1)",
                     p.reasoning_format);
        }
        o.reply_format = p.reasoning_format == MW_REASONING_NONE
                             ? mw::chat::ReplyFormat::plain
                             : mw::chat::reply_format_of(template_text);
        const nlohmann::json defaults =
            p.template_kwargs ? mw::template_kwargs_of(p.template_kwargs, "mw_server_params")
                              : nlohmann::json::object();
        o.takes_tools = mw::chat::template_takes_tools(template_text);
        const bool harmony = o.reply_format == mw::chat::ReplyFormat::harmony;
        o.render_chat = [render = mw::chat_renderer_full(*loaded, tmpl), harmony, defaults](
                            const nlohmann::ordered_json& messages, const nlohmann::json& variables,
                            const nlohmann::ordered_json& tools) {
            mw::chat::ChatInputs in;
            in.messages = messages;
            // gpt-oss's template reads an answer's reasoning as "thinking" (and refuses it
            // beside a tool call's content).
            for (auto& m : in.messages) {
                if (harmony && m.contains("reasoning_content") && !m.contains("thinking") &&
                    !(m.contains("tool_calls") &&
                      m.value("content", nlohmann::ordered_json()).is_string() &&
                      !m["content"].get<std::string>().empty()))
                    m["thinking"] = m["reasoning_content"];
            }
            in.variables = nlohmann::ordered_json(defaults);
            for (const auto& [key, value] : variables.items()) in.variables[key] = value;
            if (!tools.is_null()) in.tools = tools;
            in.add_generation_prompt = true;
            return render(std::move(in));
        };
        if (mw_pacer* pacer = p.pacer) {
            o.after_step = [pacer](mw::Context& c) { mw::pace_context(pacer, c); };
        }
        if (p.speculative) {
            mw_spec_params sp;
            if (!mw::read_params(p.speculative, mw_spec_default_params(), &sp, "mw_spec_params")) {
                mw::fail(mw::ErrorKind::invalid_argument, "{}", mw_last_error());
            }
            o.spec = mw::spec_params_of(sp);
            if (sp.type == MW_SPEC_DRAFT) {
                const mw::LoadedModel* draft = mw::loaded_model_of(p.draft_model);
                if (!draft) {
                    mw::fail(mw::ErrorKind::invalid_argument,
                             "mw_server_create: speculative decoding with a draft model, and no "
                             "draft_model given");
                }
                mw::check_draft_pairs(*loaded, *draft);
                // One sequence per slot, of the target's size: a slot's drafts stay within it.
                mw::ContextParams dp = mw::context_params_of(cp);
                dp.n_ctx = srv->ctx->n_ctx();
                dp.n_seq_max = srv->ctx->n_seq_max();
                srv->draft_ctx = std::make_unique<mw::Context>(*draft, dp);
            }
            if (sp.type == MW_SPEC_MTP) {
                // The target's MTP head drafts for every slot together, as a draft model does.
                o.batch_drafter = std::make_shared<mw::MtpDrafter>(*srv->ctx, sp.draft_p_min);
                o.make_drafter = [batch = o.batch_drafter](uint32_t slot) {
                    return mw::make_batch_member_drafter(batch, slot);
                };
            } else if (srv->draft_ctx) {
                if (!(sp.draft_p_min >= 0.0f && sp.draft_p_min <= 1.0f)) {
                    mw::fail(mw::ErrorKind::invalid_argument, "--draft-p-min {}: expected 0..1",
                             sp.draft_p_min);
                }
                // The slots draft together: one draft pass per drafted position for all.
                o.batch_drafter = mw::make_model_batch_drafter(*srv->draft_ctx, sp.draft_p_min);
                o.make_drafter = [batch = o.batch_drafter](uint32_t slot) {
                    return mw::make_batch_member_drafter(batch, slot);
                };
            } else {
                o.make_drafter = [target = srv->ctx.get(), sp](uint32_t slot) {
                    return mw::make_drafter(*target, nullptr, sp, slot, false);
                };
            }
        }
        srv->http = std::make_unique<mw::server::HttpServer>(*loaded, *srv->ctx, std::move(o));
        srv->http->bind();
        *out = srv.release();
    });
#endif
}

#if defined(MEMWALL_SERVER)
int32_t mw_server_port(const mw_server* s) {
    return s && s->http ? s->http->port() : -1;
}

mw_spec_stats mw_server_spec_stats(const mw_server* s) {
    mw_spec_stats r{};
    if (!s || !s->http) return r;
    const mw::SpecStats st = s->http->stats().spec;
    r.n_passes = st.passes;
    r.n_plain_steps = st.plain_steps;
    r.n_drafted = st.drafted;
    r.n_accepted = st.accepted;
    r.n_generated = st.generated;
    r.draft_ms = st.draft_ms;
    r.verify_ms = st.verify_ms;
    return r;
}

mw_status mw_server_run(mw_server* s) {
    if (!s) {
        mw::set_api_last_error("mw_server_run: server is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    return mw::guarded([&] { s->http->run(); });
}

void mw_server_stop(mw_server* s, double grace_s) {
    if (s && s->http) s->http->stop(grace_s);
}

void mw_server_free(mw_server* s) {
    if (!s) return;
    s->http.reset();  // stops first: the context outlives every request
    delete s;
}
#else
int32_t mw_server_port(const mw_server*) {
    return -1;
}
mw_spec_stats mw_server_spec_stats(const mw_server*) {
    return mw_spec_stats{};
}
mw_status mw_server_run(mw_server*) {
    mw::set_api_last_error("this build of memwall has no HTTP server");
    return MW_ERR_UNSUPPORTED;
}
void mw_server_stop(mw_server*, double) {}
void mw_server_free(mw_server* s) {
    delete s;
}
#endif

}  // extern "C"
