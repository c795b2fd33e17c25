// The C API of chats (memwall.h, "Chat"): a ChatSession on a context of its own.
#include <memory>
#include <string>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "api/api_speculative.h"
#include "api/api_template_kwargs.h"
#include "base/error.h"
#include "memwall.h"
#include "runtime/chat_session.h"

struct mw_chat {
    std::unique_ptr<mw::Context> ctx;
    std::unique_ptr<mw::Context> draft_ctx;  // speculative decoding with a draft model
    std::unique_ptr<mw::Speculator> spec;
    std::unique_ptr<mw::ChatSession> session;
};

extern "C" {

void mw_chat_params_init(mw_chat_params* out, size_t struct_size) {
    mw_chat_params p{};
    p.system_prompt = nullptr;
    p.chat_template = nullptr;
    p.sampling = mw_sampler_default_params();
    p.n_predict = -1;
    p.pacer = nullptr;
    p.speculative = nullptr;
    p.draft_model = nullptr;
    p.template_kwargs = nullptr;
    p.on_reasoning = nullptr;
    p.reasoning_user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

mw_status mw_chat_create(mw_model* model, const mw_context_params* ctx_params,
                         const mw_chat_params* params, mw_chat** out) {
    if (!out) {
        mw::set_api_last_error("mw_chat_create: out is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    const mw::LoadedModel* loaded = mw::loaded_model_of(model);
    if (!loaded) {
        mw::set_api_last_error("mw_chat_create: model is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    mw_chat_params p;
    if (!mw::read_params(params, mw_chat_default_params(), &p, "mw_chat_params"))
        return MW_ERR_INVALID_ARGUMENT;
    mw_context_params cp;
    if (!mw::read_params(ctx_params, mw_context_default_params(), &cp, "mw_context_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return mw::guarded([&] {
        auto chat = std::make_unique<mw_chat>();
        chat->ctx = std::make_unique<mw::Context>(*loaded, mw::context_params_of(cp));
        mw::ChatOptions o;
        o.system_prompt = p.system_prompt ? p.system_prompt : "";
        o.template_override = p.chat_template ? p.chat_template : "";
        o.sampling = mw::sampler_params_of(p.sampling);
        o.n_predict = p.n_predict;
        if (p.template_kwargs)
            o.template_variables = mw::template_kwargs_of(p.template_kwargs, "mw_chat_params");
        if (p.on_reasoning) {
            o.on_reasoning = [f = p.on_reasoning, user = p.reasoning_user_data](
                                 std::string_view s) { return f(user, s.data(), s.size()); };
        }
        if (mw_pacer* pacer = p.pacer) {
            o.after_token = [pacer](mw::Context& c) { mw::pace_context(pacer, c); };
        }
        chat->session = std::make_unique<mw::ChatSession>(*loaded, *chat->ctx, o);
        if (p.speculative) {
            mw_spec_params sp;
            if (!mw::read_params(p.speculative, mw_spec_default_params(), &sp, "mw_spec_params")) {
                mw::fail(mw::ErrorKind::invalid_argument, "{}", mw_last_error());
            }
            if (sp.type == MW_SPEC_DRAFT) {
                const mw::LoadedModel* draft = mw::loaded_model_of(p.draft_model);
                if (!draft) {
                    mw::fail(mw::ErrorKind::invalid_argument,
                             "mw_chat_create: speculative decoding with a draft model, and no "
                             "draft_model given");
                }
                mw::ContextParams dp = mw::context_params_of(cp);
                dp.n_ctx = chat->ctx->n_ctx();
                dp.n_seq_max = 1;
                chat->draft_ctx = std::make_unique<mw::Context>(*draft, dp);
            }
            chat->spec = mw::make_speculator(*chat->ctx, chat->draft_ctx.get(), sp);
            chat->session->set_speculator(chat->spec.get());
        }
        *out = chat.release();
    });
}

mw_spec_stats mw_chat_spec_stats(const mw_chat* chat) {
    mw_spec_stats r{};
    if (!chat || !chat->spec) return r;
    const mw::SpecStats& s = chat->spec->stats();
    r.n_passes = s.passes;
    r.n_plain_steps = s.plain_steps;
    r.n_drafted = s.drafted;
    r.n_accepted = s.accepted;
    r.n_generated = s.generated;
    r.draft_ms = s.draft_ms;
    r.verify_ms = s.verify_ms;
    return r;
}

void mw_chat_free(mw_chat* chat) {
    delete chat;
}

mw_status mw_chat_send(mw_chat* chat, const char* text, size_t text_len, mw_piece_fn on_text,
                       void* user_data, mw_chat_reply* reply) {
    if (!chat || (!text && text_len > 0)) {
        mw::set_api_last_error("mw_chat_send: chat or text is NULL");
        return MW_ERR_INVALID_ARGUMENT;
    }
    return mw::guarded([&] {
        const mw::ChatReply r = chat->session->send(
            std::string_view(text ? text : "", text_len), [&](std::string_view piece) {
                return on_text ? on_text(user_data, piece.data(), piece.size()) : true;
            });
        if (reply) {
            reply->n_prompt_tokens = r.n_prompt_tokens;
            reply->n_reused_tokens = r.n_reused_tokens;
            reply->n_generated = r.n_generated;
            reply->n_dropped_turns = r.n_dropped_turns;
            reply->prompt_ms = r.prompt_ms;
            reply->decode_ms = r.decode_ms;
            reply->cancelled = r.cancelled;
            reply->context_full = r.context_full;
        }
    });
}

void mw_chat_cancel(mw_chat* chat) {
    if (chat && chat->session) chat->session->cancel();
}

void mw_chat_reset(mw_chat* chat) {
    if (chat && chat->session) chat->session->reset();
}

}  // extern "C"
