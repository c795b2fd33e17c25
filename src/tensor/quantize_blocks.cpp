// File quantizers of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): the scale (and
// offset) search of tensor/quantize_search.h per block, the fp16 neighbours of the result, and
// the round-to-nearest reference as a floor, so a block is never worse than llama.cpp's encoding
// of it without an importance matrix.
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "tensor/quantize.h"
#include "tensor/quantize_search.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

struct BlockFit {
    uint16_t d = 0, m = 0;  // fp16 scale and offset (offset 0 for the symmetric types)
    int q[kQK] = {};
    double error = std::numeric_limits<double>::infinity();
};

// The fp16 values next to `bits` (same sign), skipping infinities.
int fp16_neighbours(uint16_t bits, uint16_t out[3]) {
    int count = 0;
    out[count++] = bits;
    if ((bits & 0x7fff) != 0) out[count++] = uint16_t(bits - 1);
    if ((bits & 0x7fff) < 0x7bff) out[count++] = uint16_t(bits + 1);
    return count;
}

// The search result with its scale (and offset) rounded to fp16: the best of the neighbouring
// fp16 values, each with re-rounded quants.
BlockFit fit_block(const float* x, const float* w, int qmin, int qmax, bool has_offset) {
    int q[kQK];
    const qsearch::Fit f = has_offset ? qsearch::fit_scale_offset(kQK, x, w, qmax, false, q)
                                      : qsearch::fit_scale(kQK, x, w, qmin, qmax, qmin != -qmax, q);
    uint16_t ds[3], ms[3] = {0};
    const int n_d = fp16_neighbours(f32_to_fp16(f.scale), ds);
    const int n_m = has_offset ? fp16_neighbours(f32_to_fp16(f.offset), ms) : 1;
    BlockFit best;
    for (int i = 0; i < n_d; ++i) {
        for (int j = 0; j < n_m; ++j) {
            BlockFit t;
            t.d = ds[i];
            t.m = ms[j];
            t.error = qsearch::quantize_with(kQK, x, w, fp16_to_f32(t.d),
                                             has_offset ? fp16_to_f32(t.m) : 0.0f, qmin, qmax, t.q);
            if (t.error < best.error) best = t;
        }
    }
    return best;
}

double block_error(const float* x, const float* w, const float* decoded) {
    double e = 0;
    for (int i = 0; i < kQK; ++i) e += double(w[i]) * (x[i] - decoded[i]) * (x[i] - decoded[i]);
    return e;
}

// Runs the search on every block; `pack` writes a BlockFit into a block. The round-to-nearest
// reference encoding replaces it when that is better.
template <typename Block, typename Pack>
void quantize_blocks(const float* src, void* dst, int64_t n, const float* importance, int qmin,
                     int qmax, bool has_offset, FromFloatFn reference, ToFloatFn decode,
                     Pack pack) {
    auto* blocks = static_cast<Block*>(dst);
    const float mean = qdetail::mean_importance(importance, n);
    float w[kQK], decoded[kQK], x[kQK];
    for (int64_t i = 0; i < n / kQK; ++i) {
        qdetail::finite_copy(src + i * kQK, kQK, x);
        qdetail::block_weights(importance ? importance + i * kQK : nullptr, mean, kQK, w);
        const BlockFit f = fit_block(x, w, qmin, qmax, has_offset);
        Block rtn;
        reference(x, &rtn, kQK);
        decode(&rtn, decoded, kQK);
        if (block_error(x, w, decoded) <= f.error) {
            blocks[i] = rtn;
        } else {
            pack(f, blocks[i]);
        }
    }
}

// Nibbles as the 32-element types store them: element j in the low nibble of qs[j], element
// j + 16 in its high nibble; bit 4 (Q5) of element j is bit j of qh.
void pack_nibbles(const int* u, uint8_t* qs) {
    for (int j = 0; j < kQK / 2; ++j) qs[j] = uint8_t((u[j] & 0xF) | ((u[j + kQK / 2] & 0xF) << 4));
}

void pack_qh(const int* u, uint8_t qh[4]) {
    uint32_t bits = 0;
    for (int j = 0; j < kQK; ++j) bits |= uint32_t((u[j] >> 4) & 1) << j;
    for (int i = 0; i < 4; ++i) qh[i] = uint8_t(bits >> (8 * i));
}

}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ4_0>(src, dst, n, importance, -8, 7, false, ref::quantize_row_q4_0,
                               ref::dequantize_row_q4_0, [](const BlockFit& f, BlockQ4_0& b) {
                                   int u[kQK];
                                   for (int j = 0; j < kQK; ++j) u[j] = f.q[j] + 8;
                                   b.d = f.d;
                                   pack_nibbles(u, b.qs);
                               });
}

void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ4_1>(src, dst, n, importance, 0, 15, true, ref::quantize_row_q4_1,
                               ref::dequantize_row_q4_1, [](const BlockFit& f, BlockQ4_1& b) {
                                   b.d = f.d;
                                   b.m = f.m;
                                   pack_nibbles(f.q, b.qs);
                               });
}

void quantize_q5_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ5_0>(src, dst, n, importance, -16, 15, false, ref::quantize_row_q5_0,
                               ref::dequantize_row_q5_0, [](const BlockFit& f, BlockQ5_0& b) {
                                   int u[kQK];
                                   for (int j = 0; j < kQK; ++j) u[j] = f.q[j] + 16;
                                   b.d = f.d;
                                   pack_nibbles(u, b.qs);
                                   pack_qh(u, b.qh);
                               });
}

void quantize_q5_1(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ5_1>(src, dst, n, importance, 0, 31, true, ref::quantize_row_q5_1,
                               ref::dequantize_row_q5_1, [](const BlockFit& f, BlockQ5_1& b) {
                                   b.d = f.d;
                                   b.m = f.m;
                                   pack_nibbles(f.q, b.qs);
                                   pack_qh(f.q, b.qh);
                               });
}

void quantize_q8_0(const float* src, void* dst, int64_t n, const float* importance) {
    quantize_blocks<BlockQ8_0>(src, dst, n, importance, -127, 127, false, ref::quantize_row_q8_0,
                               ref::dequantize_row_q8_0, [](const BlockFit& f, BlockQ8_0& b) {
                                   b.d = f.d;
                                   for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(f.q[j]);
                               });
}

}  // namespace mw
