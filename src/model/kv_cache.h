// The key/value cache: for every layer and KV head, the key and the value of every position seen
// so far, one row of head_dim elements per position in the cache's element type. Head-major
// ([layer][KV head][position]) so that attention, which reads one head at a time, streams
// contiguous memory.
#pragma once

#include <cstdint>
#include <memory>

#include "model/hparams.h"
#include "tensor/attention.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"
#include "tensor/types.h"

namespace mw {

class KvCache {
  public:
    // Throws ErrorKind::invalid_argument for a type that cannot hold a head (block size must
    // divide the head size) and out_of_memory when the allocation fails.
    KvCache(const HParams& hp, uint32_t n_ctx, GgmlType k_type, GgmlType v_type);

    uint32_t n_ctx() const { return n_ctx_; }
    uint32_t n_past() const { return n_past_; }
    void set_n_past(uint32_t n) { n_past_ = n; }
    const TypeTraits& k_traits() const { return *k_traits_; }
    const TypeTraits& v_traits() const { return *v_traits_; }
    uint64_t bytes() const { return bytes_; }

    // The key or value of one head at one position (head_dim elements).
    uint8_t* k_row(uint32_t layer, uint32_t head, uint32_t pos) {
        return k_ + offset(layer, head, pos, k_row_bytes_);
    }
    uint8_t* v_row(uint32_t layer, uint32_t head, uint32_t pos) {
        return v_ + offset(layer, head, pos, v_row_bytes_);
    }
    // A layer's keys or values, as attention reads them.
    KvRows keys(uint32_t layer) const {
        return {k_ + offset(layer, 0, 0, k_row_bytes_), k_row_bytes_, k_row_bytes_ * n_ctx_,
                k_traits_};
    }
    KvRows values(uint32_t layer) const {
        return {v_ + offset(layer, 0, 0, v_row_bytes_), v_row_bytes_, v_row_bytes_ * n_ctx_,
                v_traits_};
    }

    // Context shift: forgets positions [n_keep, n_keep + n_discard) and moves the later ones
    // back by n_discard, re-rotating their keys by -n_discard positions (RoPE angles are linear
    // in the position, so the rotated key equals the key computed at the new position). A
    // quantized or F16 key is decoded, rotated and encoded again. Throws invalid_argument when
    // the range is not inside the cached positions.
    void discard(uint32_t n_keep, uint32_t n_discard, const RopeParams& rope, Parallel& par);

    // Bytes a cache of this shape needs (for planning before allocating).
    static uint64_t bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                                 GgmlType v_type);

  private:
    size_t offset(uint32_t layer, uint32_t head, uint32_t pos, size_t row) const {
        return ((size_t(layer) * n_head_kv_ + head) * n_ctx_ + pos) * row;
    }

    uint32_t n_ctx_;
    uint32_t n_past_ = 0;
    uint32_t n_layer_;
    uint32_t n_head_kv_;
    uint32_t head_dim_k_;
    const TypeTraits* k_traits_;
    const TypeTraits* v_traits_;
    size_t k_row_bytes_;  // one head
    size_t v_row_bytes_;
    uint64_t bytes_ = 0;
    std::unique_ptr<uint8_t, void (*)(void*)> storage_{nullptr, nullptr};
    uint8_t* k_ = nullptr;
    uint8_t* v_ = nullptr;
};

}  // namespace mw
