// The C API of perplexity and KL divergence (include/memwall.h, "Perplexity and KL divergence").
#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "base/error.h"
#include "memwall.h"
#include "runtime/perplexity.h"
#include "tensor/types.h"

namespace {

// mw_type values are ggml type ids; the cache needs a type it can encode and decode.
mw::GgmlType kv_type(mw_type t, const char* which) {
    const auto type = static_cast<mw::GgmlType>(uint32_t(t));
    const mw::TypeTraits* traits = mw::type_traits(type);
    if (!traits || !traits->to_float || !traits->from_float) {
        mw::fail(mw::ErrorKind::invalid_argument, "unknown KV cache type {} for {}", int(t), which);
    }
    return type;
}

const mw::LoadedModel& weights_of(const mw_model* m, const char* which) {
    const mw::LoadedModel* loaded = mw::loaded_model_of(m);
    if (loaded->vocab_only) {
        mw::fail(mw::ErrorKind::invalid_argument,
                 "mw_perplexity: the {} was loaded with vocab_only", which);
    }
    return *loaded;
}

}  // namespace

extern "C" {

void mw_perplexity_params_init(mw_perplexity_params* out, size_t struct_size) {
    mw_perplexity_params p{};
    p.n_ctx = 512;
    p.n_batch = 0;
    p.n_chunks = 0;
    p.n_threads = 0;
    p.type_k = MW_TYPE_F16;
    p.type_v = MW_TYPE_F16;
    p.progress = nullptr;
    p.user_data = nullptr;
    mw::init_params(out, struct_size, p);
}

mw_status mw_perplexity(mw_model* model, mw_model* base, const char* text, size_t text_len,
                        const mw_perplexity_params* params, mw_perplexity_result* out) {
    if (!model || !out || (!text && text_len > 0)) {
        mw::set_api_last_error("mw_perplexity: model, text and out are required");
        return MW_ERR_INVALID_ARGUMENT;
    }
    mw_perplexity_params p;
    if (!mw::read_params(params, mw_perplexity_default_params(), &p, "mw_perplexity_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return mw::guarded([&] {
        mw::PerplexityParams pp;
        pp.n_ctx = p.n_ctx ? p.n_ctx : 512;
        pp.n_batch = p.n_batch;
        pp.max_chunks = p.n_chunks;
        pp.n_threads = p.n_threads;
        pp.type_k = kv_type(p.type_k, "keys");
        pp.type_v = kv_type(p.type_v, "values");
        mw::PerplexityCallback on_chunk;
        if (p.progress) {
            on_chunk = [&p](const mw::PerplexityProgress& pr) {
                mw_perplexity_progress c;
                c.chunk = pr.chunk;
                c.n_chunks = pr.n_chunks;
                c.n_scored = pr.n_scored;
                c.ppl = pr.ppl;
                c.has_base = pr.has_base;
                c.kld_mean = pr.kld_mean;
                c.top1_agreement = pr.top1_agreement;
                c.elapsed_s = pr.elapsed_s;
                c.tokens_per_s = pr.tokens_per_s;
                c.n_threads = pr.n_threads;
                return p.progress(&c, p.user_data);
            };
        }
        const mw::LoadedModel& m = weights_of(model, "model");
        const mw::LoadedModel* b = base ? &weights_of(base, "base model") : nullptr;
        const mw::PerplexityResult r =
            mw::perplexity(m, b, std::string_view(text ? text : "", text_len), pp, on_chunk);
        *out = {};
        out->n_text_tokens = r.n_text_tokens;
        out->n_chunks = r.n_chunks;
        out->n_ctx = r.n_ctx;
        out->n_scored = r.n_scored;
        out->ppl = r.ppl;
        out->ppl_err = r.ppl_err;
        out->has_base = r.has_base;
        out->base_ppl = r.base_ppl;
        out->base_ppl_err = r.base_ppl_err;
        out->kld_mean = r.kld_mean;
        out->kld_err = r.kld_err;
        out->kld_median = r.kld_median;
        out->kld_p99 = r.kld_p99;
        out->kld_max = r.kld_max;
        out->top1_agreement = r.top1_agreement;
        out->ppl_ratio = r.ppl_ratio;
        out->seconds = r.seconds;
        out->n_threads = r.n_threads;
    });
}

}  // extern "C"
