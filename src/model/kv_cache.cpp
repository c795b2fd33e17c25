#include "model/kv_cache.h"

#include <cstdlib>

#include "base/error.h"

namespace mw {
namespace {

const TypeTraits& kv_traits(GgmlType type, uint32_t head_dim, const char* which) {
    const TypeTraits* t = type_traits(type);
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    const char* name = layout ? layout->name.data() : "?";
    if (!t || !t->from_float || !t->to_float) {
        fail(ErrorKind::invalid_argument, "KV cache type {} for {} is not supported", name, which);
    }
    if (head_dim % t->block_size != 0) {
        fail(ErrorKind::invalid_argument,
             "KV cache type {} for {} needs a head size that is a multiple of {}, this model's is {}",
             name, which, t->block_size, head_dim);
    }
    return *t;
}

}  // namespace

uint64_t KvCache::bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                               GgmlType v_type) {
    const TypeTraits& kt = kv_traits(k_type, hp.head_dim_k, "keys");
    const TypeTraits& vt = kv_traits(v_type, hp.head_dim_v, "values");
    const uint64_t per_pos = row_bytes(kt, hp.n_embd_k_gqa()) + row_bytes(vt, hp.n_embd_v_gqa());
    return per_pos * n_ctx * hp.n_layer;
}

KvCache::KvCache(const HParams& hp, uint32_t n_ctx, GgmlType k_type, GgmlType v_type)
    : n_ctx_(n_ctx),
      k_traits_(&kv_traits(k_type, hp.head_dim_k, "keys")),
      v_traits_(&kv_traits(v_type, hp.head_dim_v, "values")),
      k_row_bytes_(row_bytes(*k_traits_, hp.n_embd_k_gqa())),
      v_row_bytes_(row_bytes(*v_traits_, hp.n_embd_v_gqa())) {
    if (n_ctx == 0) fail(ErrorKind::invalid_argument, "context size must be at least 1");
    const uint64_t k_bytes = uint64_t(k_row_bytes_) * n_ctx * hp.n_layer;
    const uint64_t v_bytes = uint64_t(v_row_bytes_) * n_ctx * hp.n_layer;
    bytes_ = k_bytes + v_bytes;
    // calloc: pages are only touched (and counted in RSS) as positions are filled.
    void* p = std::calloc(1, size_t(bytes_));
    if (!p) {
        fail(ErrorKind::out_of_memory, "cannot allocate {:.1f} MiB for a KV cache of {} tokens",
             double(bytes_) / (1 << 20), n_ctx);
    }
    storage_ = {static_cast<uint8_t*>(p), std::free};
    k_ = storage_.get();
    v_ = k_ + k_bytes;
}

}  // namespace mw
