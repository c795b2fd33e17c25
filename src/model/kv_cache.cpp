#include "model/kv_cache.h"

#include <cstdlib>
#include <cstring>
#include <vector>

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
             "KV cache type {} for {} needs a head size that is a multiple of {}, this model's is "
             "{}",
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
      n_layer_(hp.n_layer),
      n_head_kv_(hp.n_head_kv),
      head_dim_k_(hp.head_dim_k),
      k_traits_(&kv_traits(k_type, hp.head_dim_k, "keys")),
      v_traits_(&kv_traits(v_type, hp.head_dim_v, "values")),
      k_row_bytes_(row_bytes(*k_traits_, hp.head_dim_k)),
      v_row_bytes_(row_bytes(*v_traits_, hp.head_dim_v)) {
    if (n_ctx == 0) fail(ErrorKind::invalid_argument, "context size must be at least 1");
    const uint64_t rows = uint64_t(n_ctx) * hp.n_layer * hp.n_head_kv;
    const uint64_t k_bytes = uint64_t(k_row_bytes_) * rows;
    const uint64_t v_bytes = uint64_t(v_row_bytes_) * rows;
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

void KvCache::discard(uint32_t n_keep, uint32_t n_discard, const RopeParams& rope, Parallel& par) {
    if (uint64_t(n_keep) + n_discard > n_past_) {
        fail(ErrorKind::invalid_argument,
             "context shift: cannot keep {} tokens and discard {} more, only {} are cached", n_keep,
             n_discard, n_past_);
    }
    if (n_discard == 0) return;
    const uint32_t first_moved = n_keep + n_discard;
    const uint32_t n_moved = n_past_ - first_moved;
    for (uint32_t il = 0; il < n_layer_; ++il) {
        for (uint32_t h = 0; h < n_head_kv_; ++h) {
            std::memmove(k_row(il, h, n_keep), k_row(il, h, first_moved),
                         size_t(n_moved) * k_row_bytes_);
            std::memmove(v_row(il, h, n_keep), v_row(il, h, first_moved),
                         size_t(n_moved) * v_row_bytes_);
        }
    }
    n_past_ -= n_discard;

    // Rotate every moved key back by n_discard positions.
    std::vector<float> cos_sin(size_t(rope.n_rot));
    rope_rotation(rope, -float(n_discard), cos_sin.data());
    const int64_t n_rows = int64_t(n_layer_) * n_head_kv_ * n_moved;
    parallel_for_work(par, n_rows * head_dim_k_, [&](int ith, int nth) {
        std::vector<float> key(head_dim_k_);
        const Range r = split_range(n_rows, ith, nth);
        for (int64_t i = r.begin; i < r.end; ++i) {
            const int64_t layer_head = i / n_moved;
            uint8_t* row = k_row(uint32_t(layer_head / n_head_kv_),
                                 uint32_t(layer_head % n_head_kv_), n_keep + uint32_t(i % n_moved));
            k_traits_->to_float(row, key.data(), head_dim_k_);
            rope_apply(rope, cos_sin.data(), key.data(), 1, int(head_dim_k_));
            k_traits_->from_float(key.data(), row, head_dim_k_);
        }
    });
}

}  // namespace mw
