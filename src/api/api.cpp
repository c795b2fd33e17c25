// The C API: thin wrappers that turn C structs into library calls and every exception into a
// status code plus a thread-local message. No exception crosses this boundary.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "base/error.h"
#include "memwall.h"
#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"
#include "runtime/loaded_model.h"
#include "tensor/cpu_features.h"
#include "tensor/types.h"
#include "vocab/vocab.h"

struct mw_model {
    std::unique_ptr<mw::LoadedModel> loaded;
};

struct mw_context {
    std::unique_ptr<mw::Context> ctx;
};

struct mw_sampler {
    mw::Sampler sampler;
};

struct mw_detokenizer {
    mw::TokenTextStream stream;
    int32_t n_tokens;
    std::string out;
};

namespace {

using mw::guarded;

thread_local std::string g_last_error;

mw_status invalid(const char* message) {
    g_last_error = message;
    return MW_ERR_INVALID_ARGUMENT;
}

mw::GgmlType kv_type(mw_type t, const char* which) {
    switch (t) {
        case MW_TYPE_F32:
            return mw::GgmlType::F32;
        case MW_TYPE_F16:
            return mw::GgmlType::F16;
        case MW_TYPE_BF16:
            return mw::GgmlType::BF16;
        case MW_TYPE_Q8_0:
            return mw::GgmlType::Q8_0;
        case MW_TYPE_Q4_0:
            return mw::GgmlType::Q4_0;
    }
    mw::fail(mw::ErrorKind::invalid_argument, "unknown KV cache type {} for {}", int(t), which);
}

// Copies s into buf (NUL-terminated, truncated to fit); returns the full length.
int32_t copy_out(const std::string& s, char* buf, size_t buf_size) {
    if (buf && buf_size > 0) {
        const size_t n = std::min(s.size(), buf_size - 1);
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return int32_t(s.size());
}

}  // namespace

namespace mw {
void set_api_last_error(const std::string& message) {
    g_last_error = message;
}
const LoadedModel* loaded_model_of(const mw_model* m) {
    return m ? m->loaded.get() : nullptr;
}
Context* context_of(mw_context* c) {
    return c ? c->ctx.get() : nullptr;
}
Sampler* sampler_of(mw_sampler* s) {
    return s ? &s->sampler : nullptr;
}
SamplerParams sampler_params_of(const mw_sampler_params& p) {
    SamplerParams sp;
    sp.temperature = p.temperature;
    sp.top_k = p.top_k;
    sp.top_p = p.top_p;
    sp.min_p = p.min_p;
    sp.repeat_penalty = p.repeat_penalty;
    sp.repeat_last_n = p.repeat_last_n;
    sp.seed = p.seed;
    sp.frequency_penalty = p.frequency_penalty;
    sp.presence_penalty = p.presence_penalty;
    return sp;
}
ContextParams context_params_of(const mw_context_params& p) {
    ContextParams cp;
    cp.n_ctx = p.n_ctx;
    cp.n_batch = p.n_batch;
    cp.n_threads = p.n_threads;
    cp.type_k = kv_type(p.type_k, "keys");
    cp.type_v = kv_type(p.type_v, "values");
    if (p.n_seq_max > 4096) {
        fail(ErrorKind::invalid_argument, "n_seq_max {} is more than 4096 sequences", p.n_seq_max);
    }
    cp.n_seq_max = p.n_seq_max == 0 ? 1 : p.n_seq_max;
    return cp;
}
}  // namespace mw

extern "C" {

const char* mw_last_error(void) {
    return g_last_error.c_str();
}
const char* mw_version(void) {
    return MEMWALL_VERSION_STRING;  // project(memwall VERSION ...) in CMakeLists.txt
}
const char* mw_system_info(void) {
    static const std::string info =
        std::string("kernels ") + mw::kernel_isa() + "; CPU " + mw::cpu_features_summary();
    return info.c_str();
}

void mw_model_params_init(mw_model_params* out, size_t struct_size) {
    mw_model_params p{};
    p.use_mmap = true;
    p.use_mlock = false;
    p.vocab_only = false;
    p.repack = true;
    p.mem_budget = 0;
    p.n_gpu_layers = 0;
    p.main_gpu = 0;
    p.gpu_required = false;
    p.gpu_allow_cpu_device = false;
    p.ple_resident = false;
    mw::init_params(out, struct_size, p);
}

mw_status mw_model_load(const char* path, const mw_model_params* params, mw_model** out) {
    if (!out) return invalid("mw_model_load: out is NULL");
    *out = nullptr;
    if (!path) return invalid("mw_model_load: path is NULL");
    mw_model_params p;
    if (!mw::read_params(params, mw_model_default_params(), &p, "mw_model_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return guarded([&] {
        mw::LoadOptions options;
        options.map.use_mmap = p.use_mmap;
        options.map.lock = p.use_mlock;
        options.vocab_only = p.vocab_only;
        options.repack = p.repack;
        options.mem_budget = p.mem_budget;
        if (p.n_gpu_layers < 0) {
            mw::fail(mw::ErrorKind::invalid_argument,
                     "n_gpu_layers is {}: it counts layers (0: none)", p.n_gpu_layers);
        }
        options.gpu.n_gpu_layers = p.n_gpu_layers;
        options.gpu.main_gpu = p.main_gpu;
        options.gpu.required = p.gpu_required;
        options.gpu.allow_cpu_device = p.gpu_allow_cpu_device;
        options.ple_resident = p.ple_resident;
        // Knobs for measuring the expert cache (docs/memory-budget.md), not for apps.
        if (const char* io = std::getenv("MEMWALL_EXPERT_IO")) {
            options.direct_io = std::string_view(io) != "pread";
        }
        if (const char* io = std::getenv("MEMWALL_LAYER_IO")) {
            options.layer_direct_io = std::string_view(io) != "pread";
        }
        if (const char* rp = std::getenv("MEMWALL_STREAM_REPACK")) {
            options.repack_streamed = std::string_view(rp) == "on";
        }
        if (const char* pf = std::getenv("MEMWALL_EXPERT_PREFETCH")) {
            options.expert_prefetch = std::string_view(pf) != "off";
        }
        auto model = std::make_unique<mw_model>();
        model->loaded = mw::LoadedModel::load(path, options);
        *out = model.release();
    });
}

mw_status mw_model_expert_cache_stats(const mw_model* model, mw_expert_cache_stats* out) {
    if (!model || !out) return invalid("mw_model_expert_cache_stats: model or out is NULL");
    *out = {};
    const mw::MemoryBudget* budget = model->loaded->budget.get();
    if (!budget) return MW_OK;
    out->budget_bytes = budget->budget();
    out->resident_bytes = budget->resident();
    if (const mw::ExpertCache* cache = budget->experts()) {
        const mw::ExpertCacheStats s = cache->stats();
        out->n_slots = s.n_slots;
        out->slot_bytes = s.slot_bytes;
        out->experts_total = s.experts_total;
        out->acquires = s.acquires;
        out->hits = s.hits;
        out->prefetched = s.prefetched;
        out->waited = s.waited;
        out->misses = s.misses;
        out->bytes_read = s.bytes_read;
        out->predictable = s.predictable;
        out->predicted = s.predicted;
        out->direct_io = s.direct_io;
    }
    return MW_OK;
}

mw_status mw_model_layer_stream_stats(const mw_model* model, mw_layer_stream_stats* out) {
    if (!model || !out) return invalid("mw_model_layer_stream_stats: model or out is NULL");
    *out = {};
    const mw::MemoryBudget* budget = model->loaded->budget.get();
    if (!budget || !budget->layers()) return MW_OK;
    out->budget_bytes = budget->budget();
    out->resident_bytes = budget->resident();
    const mw::LayerStreamStats s = budget->layers()->stats();
    out->n_layer = s.n_layer;
    out->n_slots = s.n_slots;
    out->pinned = s.pinned;
    out->slot_bytes = s.slot_bytes;
    out->acquires = s.acquires;
    out->hits = s.hits;
    out->prefetched = s.prefetched;
    out->waited = s.waited;
    out->misses = s.misses;
    out->bytes_read = s.bytes_read;
    out->wait_ms = s.wait_ms;
    out->direct_io = s.direct_io;
    return MW_OK;
}

void mw_model_free(mw_model* model) {
    delete model;
}

const char* mw_model_warning(const mw_model* m) {
    return m && !m->loaded->warning.empty() ? m->loaded->warning.c_str() : nullptr;
}
const char* mw_model_gpu_report(const mw_model* m) {
    return m && !m->loaded->gpu_report.empty() ? m->loaded->gpu_report.c_str() : nullptr;
}
const char* mw_model_arch(const mw_model* m) {
    return m->loaded->model.hp.arch.c_str();
}
const char* mw_model_desc(const mw_model* m) {
    return m->loaded->desc.c_str();
}
int32_t mw_model_n_vocab(const mw_model* m) {
    return int32_t(m->loaded->model.hp.n_vocab);
}
int32_t mw_model_n_ctx_train(const mw_model* m) {
    return int32_t(m->loaded->model.hp.n_ctx_train);
}
int32_t mw_model_n_embd(const mw_model* m) {
    return int32_t(m->loaded->model.hp.n_embd);
}
int32_t mw_model_n_layer(const mw_model* m) {
    return int32_t(m->loaded->model.hp.n_layer);
}
uint64_t mw_model_n_params(const mw_model* m) {
    return m->loaded->model.n_params;
}
uint64_t mw_model_weight_bytes(const mw_model* m) {
    return m->loaded->model.weight_bytes;
}
uint64_t mw_model_bytes_per_token(const mw_model* m) {
    return m->loaded->model.bytes_per_token;
}

int32_t mw_model_meta(const mw_model* m, const char* key, char* buf, size_t buf_size) {
    if (!m || !key) return -1;
    const mw::gguf::Value* v = m->loaded->gguf.find(key);
    if (!v) return -1;
    const std::string text = v->type == mw::gguf::ValueType::string ? std::string(v->str)
                                                                    : mw::gguf::value_to_string(*v);
    return copy_out(text, buf, buf_size);
}

int32_t mw_tokenize(const mw_model* m, const char* text, int32_t text_len, mw_token* tokens,
                    int32_t n_max, bool add_special, bool parse_special) {
    if (!m || (!text && text_len > 0) || text_len < 0) {
        g_last_error = "mw_tokenize: invalid arguments";
        return INT32_MIN;
    }
    std::vector<int32_t> ids;
    const mw_status st = guarded([&] {
        ids = m->loaded->vocab->tokenize(std::string_view(text ? text : "", size_t(text_len)),
                                         add_special, parse_special);
    });
    if (st != MW_OK) return INT32_MIN;
    if (ids.size() > size_t(INT32_MAX)) return INT32_MIN;
    if (int32_t(ids.size()) > n_max || (!tokens && !ids.empty())) return -int32_t(ids.size());
    std::copy(ids.begin(), ids.end(), tokens);
    return int32_t(ids.size());
}

int32_t mw_token_to_piece(const mw_model* m, mw_token token, char* buf, int32_t buf_size,
                          bool special) {
    if (!m || token < 0 || token >= m->loaded->vocab->n_tokens()) return 0;
    const std::string piece = m->loaded->vocab->token_to_piece(token, special);
    if (int32_t(piece.size()) > buf_size || (!buf && !piece.empty())) return -int32_t(piece.size());
    if (!piece.empty()) std::memcpy(buf, piece.data(), piece.size());
    return int32_t(piece.size());
}

mw_token mw_token_bos(const mw_model* m) {
    return m->loaded->vocab->bos();
}
mw_token mw_token_eos(const mw_model* m) {
    return m->loaded->vocab->eos();
}
bool mw_token_is_eog(const mw_model* m, mw_token token) {
    return m->loaded->vocab->is_eog(token);
}

mw_detokenizer* mw_detokenizer_create(const mw_model* m, bool special) {
    if (!m) return nullptr;
    return new (std::nothrow) mw_detokenizer{
        mw::TokenTextStream(*m->loaded->vocab, special), m->loaded->vocab->n_tokens(), {}};
}
void mw_detokenizer_free(mw_detokenizer* d) {
    delete d;
}

const char* mw_detokenizer_push(mw_detokenizer* d, mw_token token, size_t* len) {
    d->out.clear();
    if (token >= 0 && token < d->n_tokens) d->out = d->stream.push(token);
    if (len) *len = d->out.size();
    return d->out.c_str();
}

const char* mw_detokenizer_flush(mw_detokenizer* d, size_t* len) {
    d->out = d->stream.finish();
    if (len) *len = d->out.size();
    return d->out.c_str();
}

void mw_context_params_init(mw_context_params* out, size_t struct_size) {
    mw_context_params p{};
    p.n_ctx = 0;
    p.n_batch = 512;
    p.n_threads = 0;
    p.type_k = MW_TYPE_F16;
    p.type_v = MW_TYPE_F16;
    p.n_seq_max = 1;
    mw::init_params(out, struct_size, p);
}

mw_status mw_context_create(mw_model* model, const mw_context_params* params, mw_context** out) {
    if (!out) return invalid("mw_context_create: out is NULL");
    *out = nullptr;
    if (!model) return invalid("mw_context_create: model is NULL");
    if (model->loaded->vocab_only) {
        return invalid("mw_context_create: the model was loaded with vocab_only");
    }
    mw_context_params p;
    if (!mw::read_params(params, mw_context_default_params(), &p, "mw_context_params"))
        return MW_ERR_INVALID_ARGUMENT;
    return guarded([&] {
        const mw::ContextParams cp = mw::context_params_of(p);
        auto ctx = std::make_unique<mw_context>();
        ctx->ctx = std::make_unique<mw::Context>(*model->loaded, cp);
        *out = ctx.release();
    });
}

void mw_context_free(mw_context* ctx) {
    delete ctx;
}
uint32_t mw_context_n_ctx(const mw_context* ctx) {
    return ctx->ctx->n_ctx();
}
int32_t mw_context_n_threads(const mw_context* ctx) {
    return ctx->ctx->n_threads();
}
uint32_t mw_context_n_past(const mw_context* ctx) {
    return ctx->ctx->n_past();
}

mw_status mw_context_truncate(mw_context* ctx, uint32_t n_keep) {
    if (!ctx) return invalid("mw_context_truncate: ctx is NULL");
    return guarded([&] { ctx->ctx->truncate(n_keep); });
}

mw_status mw_context_shift(mw_context* ctx, uint32_t n_keep, uint32_t n_discard) {
    if (!ctx) return invalid("mw_context_shift: ctx is NULL");
    return guarded([&] { ctx->ctx->shift(n_keep, n_discard); });
}

mw_status mw_decode(mw_context* ctx, const mw_token* tokens, int32_t n_tokens, bool all_logits) {
    if (!ctx) return invalid("mw_decode: ctx is NULL");
    if (!tokens || n_tokens <= 0) return invalid("mw_decode: empty batch");
    return guarded([&] { ctx->ctx->decode(tokens, uint32_t(n_tokens), all_logits); });
}

const float* mw_get_logits(mw_context* ctx, int32_t i) {
    return ctx ? ctx->ctx->logits(i) : nullptr;
}

mw_batch mw_batch_init(int32_t capacity) {
    mw_batch b{};
    if (capacity <= 0) return b;
    const size_t n = size_t(capacity);
    b.token = static_cast<mw_token*>(std::malloc(n * sizeof(mw_token)));
    b.pos = static_cast<int32_t*>(std::malloc(n * sizeof(int32_t)));
    b.seq_id = static_cast<mw_seq_id*>(std::malloc(n * sizeof(mw_seq_id)));
    b.logits = static_cast<int8_t*>(std::malloc(n));
    if (!b.token || !b.pos || !b.seq_id || !b.logits) {
        mw_batch_free(&b);
        return b;
    }
    b.capacity = capacity;
    return b;
}

void mw_batch_free(mw_batch* b) {
    if (!b) return;
    std::free(b->token);
    std::free(b->pos);
    std::free(b->seq_id);
    std::free(b->logits);
    *b = mw_batch{};
}

void mw_batch_clear(mw_batch* b) {
    if (b) b->n_tokens = 0;
}

mw_status mw_batch_add(mw_batch* b, mw_token token, int32_t pos, mw_seq_id seq, bool logits) {
    if (!b) return invalid("mw_batch_add: batch is NULL");
    if (b->n_tokens < 0 || b->n_tokens >= b->capacity) {
        g_last_error =
            "mw_batch_add: the batch is full (capacity " + std::to_string(b->capacity) + " tokens)";
        return MW_ERR_INVALID_ARGUMENT;
    }
    const int32_t i = b->n_tokens++;
    b->token[i] = token;
    b->pos[i] = pos;
    b->seq_id[i] = seq;
    b->logits[i] = logits ? 1 : 0;
    return MW_OK;
}

mw_status mw_decode_batch(mw_context* ctx, const mw_batch* b) {
    if (!ctx) return invalid("mw_decode_batch: ctx is NULL");
    if (!b || b->n_tokens <= 0 || !b->token) return invalid("mw_decode_batch: empty batch");
    if (b->capacity > 0 && b->n_tokens > b->capacity) {
        return invalid("mw_decode_batch: n_tokens is larger than the batch's capacity");
    }
    return guarded([&] {
        std::vector<mw::BatchToken> tokens(size_t(b->n_tokens));
        for (int32_t i = 0; i < b->n_tokens; ++i) {
            const int32_t seq = b->seq_id ? b->seq_id[i] : 0;
            if (seq < 0) {
                mw::fail(mw::ErrorKind::invalid_argument,
                         "mw_decode_batch: batch index {} has sequence {}", i, seq);
            }
            const int32_t pos = b->pos ? b->pos[i] : -1;
            if (pos < -1) {
                mw::fail(mw::ErrorKind::invalid_argument,
                         "mw_decode_batch: batch index {} has position {}", i, pos);
            }
            const bool keep = b->logits ? b->logits[i] != 0 : i + 1 == b->n_tokens;
            tokens[size_t(i)] = {b->token[i], uint32_t(seq), pos, keep};
        }
        ctx->ctx->decode(tokens);
    });
}

uint32_t mw_context_n_seq_max(const mw_context* ctx) {
    return ctx ? ctx->ctx->n_seq_max() : 0;
}

int32_t mw_seq_n_past(const mw_context* ctx, mw_seq_id seq) {
    if (!ctx || seq < 0 || uint32_t(seq) >= ctx->ctx->n_seq_max()) return -1;
    return int32_t(ctx->ctx->seq_len(uint32_t(seq)));
}

int32_t mw_seq_tokens(const mw_context* ctx, mw_seq_id seq, mw_token* tokens, int32_t n_max) {
    if (!ctx || seq < 0 || uint32_t(seq) >= ctx->ctx->n_seq_max()) return 0;
    const auto held = ctx->ctx->seq_tokens(uint32_t(seq));
    if (held.size() > size_t(n_max) || (!tokens && !held.empty())) return -int32_t(held.size());
    std::copy(held.begin(), held.end(), tokens);
    return int32_t(held.size());
}

int32_t mw_seq_common_prefix(const mw_context* ctx, mw_seq_id seq, const mw_token* tokens,
                             int32_t n_tokens) {
    if (!ctx || seq < 0 || uint32_t(seq) >= ctx->ctx->n_seq_max() || n_tokens < 0 ||
        (!tokens && n_tokens > 0)) {
        return -1;
    }
    return int32_t(ctx->ctx->seq_common_prefix(uint32_t(seq),
                                               std::span<const int32_t>(tokens, size_t(n_tokens))));
}

namespace {
mw_status check_seq(const mw_context* ctx, mw_seq_id seq, const char* fn) {
    if (!ctx) {
        g_last_error = std::string(fn) + ": ctx is NULL";
        return MW_ERR_INVALID_ARGUMENT;
    }
    if (seq < 0 || uint32_t(seq) >= ctx->ctx->n_seq_max()) {
        g_last_error = std::string(fn) + ": sequence " + std::to_string(seq) +
                       " does not exist: this context has " + std::to_string(ctx->ctx->n_seq_max());
        return MW_ERR_INVALID_ARGUMENT;
    }
    return MW_OK;
}
}  // namespace

mw_status mw_seq_truncate(mw_context* ctx, mw_seq_id seq, uint32_t n_keep) {
    if (mw_status st = check_seq(ctx, seq, "mw_seq_truncate"); st != MW_OK) return st;
    return guarded([&] { ctx->ctx->seq_truncate(uint32_t(seq), n_keep); });
}

mw_status mw_seq_copy(mw_context* ctx, mw_seq_id src, mw_seq_id dst, uint32_t n) {
    if (mw_status st = check_seq(ctx, src, "mw_seq_copy"); st != MW_OK) return st;
    if (mw_status st = check_seq(ctx, dst, "mw_seq_copy"); st != MW_OK) return st;
    return guarded([&] { ctx->ctx->seq_copy(uint32_t(src), uint32_t(dst), n); });
}

mw_status mw_seq_shift(mw_context* ctx, mw_seq_id seq, uint32_t n_keep, uint32_t n_discard) {
    if (mw_status st = check_seq(ctx, seq, "mw_seq_shift"); st != MW_OK) return st;
    return guarded([&] { ctx->ctx->seq_shift(uint32_t(seq), n_keep, n_discard); });
}

uint32_t mw_context_kv_used(const mw_context* ctx) {
    return ctx ? ctx->ctx->kv_positions_used() : 0;
}

uint32_t mw_context_kv_size(const mw_context* ctx) {
    return ctx ? ctx->ctx->kv_positions_total() : 0;
}

void mw_sampler_params_init(mw_sampler_params* out, size_t struct_size) {
    const mw::SamplerParams d;
    mw_sampler_params p{};
    p.temperature = d.temperature;
    p.top_k = d.top_k;
    p.top_p = d.top_p;
    p.min_p = d.min_p;
    p.repeat_penalty = d.repeat_penalty;
    p.repeat_last_n = d.repeat_last_n;
    p.seed = d.seed;
    p.frequency_penalty = d.frequency_penalty;
    p.presence_penalty = d.presence_penalty;
    mw::init_params(out, struct_size, p);
}

mw_sampler* mw_sampler_create(const mw_sampler_params* params) {
    mw_sampler_params p;
    if (!mw::read_params(params, mw_sampler_default_params(), &p, "mw_sampler_params"))
        return nullptr;
    const mw::SamplerParams sp = mw::sampler_params_of(p);
    return new (std::nothrow) mw_sampler{mw::Sampler(sp)};
}

void mw_sampler_free(mw_sampler* s) {
    delete s;
}

mw_token mw_sampler_sample(mw_sampler* s, const float* logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab <= 0) return -1;
    return s->sampler.sample(logits, n_vocab);
}

void mw_sampler_accept(mw_sampler* s, mw_token token) {
    if (s) s->sampler.accept(token);
}

mw_perf mw_context_perf(const mw_context* ctx) {
    mw_perf p{};
    if (!ctx) return p;
    const mw::Context& c = *ctx->ctx;
    const mw::LoadedModel& m = c.model();
    p.load_ms = m.load_ms;
    p.prompt_ms = c.perf().prompt_ms;
    p.decode_ms = c.perf().decode_ms;
    p.n_prompt_tokens = int32_t(c.perf().n_prompt_tokens);
    p.n_decode_tokens = int32_t(c.perf().n_decode_tokens);
    p.weights_bytes = m.model.weight_bytes;
    p.weights_resident_bytes = m.file.resident_bytes();
    p.kv_bytes = c.kv_bytes();
    p.scratch_bytes = c.scratch_bytes();
    const mw::ProcessMemory pm = mw::process_memory();
    p.peak_rss_bytes = pm.peak_rss_bytes;
    p.rss_bytes = pm.rss_bytes;
    p.major_faults = pm.major_faults;
    p.minor_faults = pm.minor_faults;
    p.decode_weight_bytes = c.perf().decode_weight_bytes;
    p.n_decode_steps = int32_t(c.perf().n_decode_steps);
    return p;
}

void mw_context_perf_reset(mw_context* ctx) {
    if (ctx) ctx->ctx->perf() = {};
}

}  // extern "C"
