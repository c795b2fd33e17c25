// The key/value cache: for every layer, the keys and values of every position seen so far, one
// row per position holding all KV heads (n_head_kv x head_dim), in the cache's element type.
#pragma once

#include <cstdint>
#include <memory>

#include "model/hparams.h"
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
    size_t k_row_bytes() const { return k_row_bytes_; }
    size_t v_row_bytes() const { return v_row_bytes_; }
    uint64_t bytes() const { return bytes_; }

    uint8_t* k_row(uint32_t layer, uint32_t pos) { return k_ + layer_offset(layer, pos, k_row_bytes_); }
    uint8_t* v_row(uint32_t layer, uint32_t pos) { return v_ + layer_offset(layer, pos, v_row_bytes_); }
    const uint8_t* k_row(uint32_t layer, uint32_t pos) const {
        return k_ + layer_offset(layer, pos, k_row_bytes_);
    }
    const uint8_t* v_row(uint32_t layer, uint32_t pos) const {
        return v_ + layer_offset(layer, pos, v_row_bytes_);
    }

    // Bytes a cache of this shape needs (for planning before allocating).
    static uint64_t bytes_needed(const HParams& hp, uint32_t n_ctx, GgmlType k_type,
                                 GgmlType v_type);

private:
    size_t layer_offset(uint32_t layer, uint32_t pos, size_t row) const {
        return (size_t(layer) * n_ctx_ + pos) * row;
    }

    uint32_t n_ctx_;
    uint32_t n_past_ = 0;
    const TypeTraits* k_traits_;
    const TypeTraits* v_traits_;
    size_t k_row_bytes_;
    size_t v_row_bytes_;
    uint64_t bytes_ = 0;
    std::unique_ptr<uint8_t, void (*)(void*)> storage_{nullptr, nullptr};
    uint8_t* k_ = nullptr;
    uint8_t* v_ = nullptr;
};

}  // namespace mw
