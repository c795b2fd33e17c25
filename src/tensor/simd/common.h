// What the width-generic kernels (tensor/simd/) share, independent of the instruction set:
// scratch buffers, K-quant scale unpacking, the activation side of the decode and prefill
// kernels, the prefill panel format, and the dot-product chain over a vector type V.
//
// tensor/simd/ holds the kernels written once over a vector type V, which each ISA folder
// defines (tensor/x86/simd.h: V256, V512; tensor/arm/simd.h: V128) with the same static
// functions (loads, byte masks and shifts, the 8-bit dot product, float arithmetic, stores of R
// rows). A kernel instantiated with V runs groups of R = V::kLanes rows, one per 32-bit lane.
//
// Everything here is inline in an anonymous namespace on purpose: each ISA file compiles its own
// copy with its own flags, so no function compiled for AVX-512 can be picked by the linker for a
// caller on an AVX2-only CPU.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/fp16.h"
#include "tensor/kernels.h"
#include "tensor/quants.h"

#if defined(__F16C__)
// GCC 12 warns about the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_*); the warnings point into its headers, so they are silenced there only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace mw::simd {
namespace {

// A growable 64-byte aligned buffer, kept per thread by the kernels (no allocation once warm).
class ScratchBuffer {
  public:
    ScratchBuffer() = default;
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;
    ~ScratchBuffer() { std::free(data_); }

    uint8_t* get(size_t bytes) {
        if (bytes > size_) {
            std::free(data_);
            size_ = (bytes + 4095) & ~size_t(4095);
            data_ = static_cast<uint8_t*>(std::aligned_alloc(64, size_));
            if (!data_) std::abort();
        }
        return data_;
    }

  private:
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

inline size_t align64(size_t n) {
    return (n + 63) & ~size_t(63);
}

inline float half(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#elif defined(__aarch64__)
    __fp16 f;
    std::memcpy(&f, &h, 2);
    return float(f);
#else
    return fp16_to_f32(h);
#endif
}

inline int32_t load_i32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint64_t load_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// ---- K-quant scales -----------------------------------------------------------------------

// The 8 scales and 8 mins (6 bits each) of a Q4_K / Q5_K block, as bytes (see q4k_scale_min).
inline void unpack_q4k_scales(const uint8_t* s, uint64_t* scales, uint64_t* mins) {
    const uint32_t u0 = load_u32(s), u1 = load_u32(s + 4), u2 = load_u32(s + 8);
    const uint32_t sc_lo = u0 & 0x3f3f3f3f;
    const uint32_t m_lo = u1 & 0x3f3f3f3f;
    const uint32_t sc_hi = (u2 & 0x0f0f0f0f) | ((u0 >> 2) & 0x30303030);
    const uint32_t m_hi = ((u2 >> 4) & 0x0f0f0f0f) | ((u1 >> 2) & 0x30303030);
    *scales = uint64_t(sc_lo) | uint64_t(sc_hi) << 32;
    *mins = uint64_t(m_lo) | uint64_t(m_hi) << 32;
}

// The 16 scales of a Q3_K block, 0..63 (the format subtracts 32), as bytes (see q3k_scale):
// out[0] holds scales 0-7, out[1] scales 8-15.
inline void unpack_q3k_scales(const uint8_t* s, uint64_t out[2]) {
    const uint32_t u0 = load_u32(s), u1 = load_u32(s + 4), u2 = load_u32(s + 8);
    const uint32_t a = (u0 & 0x0f0f0f0f) | ((u2 << 4) & 0x30303030);         // scales 0-3
    const uint32_t b = (u1 & 0x0f0f0f0f) | ((u2 << 2) & 0x30303030);         // 4-7
    const uint32_t c = ((u0 >> 4) & 0x0f0f0f0f) | (u2 & 0x30303030);         // 8-11
    const uint32_t d = ((u1 >> 4) & 0x0f0f0f0f) | ((u2 >> 2) & 0x30303030);  // 12-15
    out[0] = uint64_t(a) | uint64_t(b) << 32;
    out[1] = uint64_t(c) | uint64_t(d) << 32;
}

// ---- Activations of the 32-element types (Q8_0 / Q8_1 rows) -------------------------------

// Bytes per block of the activation row and where its quants start.
struct Act32Format {
    size_t block_bytes;  // 34 (Q8_0) or 36 (Q8_1)
    size_t qs_offset;    // 2 or 4
};
inline constexpr Act32Format kActQ8_0{sizeof(BlockQ8_0), 2};
inline constexpr Act32Format kActQ8_1{sizeof(BlockQ8_1), 4};

// One token's activations prepared for the decode kernels of the 32-element types: the quants
// contiguous (in the order the kernel decodes weights), the float scale of each block, and the
// block's "second term" a2, which the kernel multiplies with a per-block weight value:
//   offset types (weight = d * (code - offset)): a2 = -offset * dx * sum(x), times d;
//   min types (weight = d * code + m), offset 0: a2 = s (Q8_1's d * sum(x)), times m;
//   offset < 0: no second term (a2 = 0).
// Blocks past nb (up to nb_padded) are zero.
//
// kSplitChunk8: quants in chunks of 8 blocks, each as two 4-block halves of [x[0..15] of the 4
// blocks][x[16..31] of the 4 blocks] (the order of the AVX-512 nibble decoder); else natural.
template <bool kSplitChunk8>
void prepare_act32(const uint8_t* act, Act32Format f, int offset, int64_t nb, int64_t nb_padded,
                   int8_t* xs, float* dx, float* a2) {
    for (int64_t b = 0; b < nb_padded; ++b) {
        int8_t* lo;
        int8_t* hi;
        if (kSplitChunk8) {
            int8_t* chunk = xs + 256 * (b / 8) + 128 * ((b % 8) / 4) + 16 * (b % 4);
            lo = chunk;
            hi = chunk + 64;
        } else {
            lo = xs + 32 * b;
            hi = lo + 16;
        }
        if (b >= nb) {
            std::memset(lo, 0, 16);
            std::memset(hi, 0, 16);
            dx[b] = 0.0f;
            a2[b] = 0.0f;
            continue;
        }
        const uint8_t* block = act + size_t(b) * f.block_bytes;
        const int8_t* q = reinterpret_cast<const int8_t*>(block + f.qs_offset);
        std::memcpy(lo, q, 16);
        std::memcpy(hi, q + 16, 16);
        const float d = half(load_u16(block));
        dx[b] = d;
        if (offset > 0) {
            int sum = 0;
            for (int j = 0; j < 32; ++j) sum += q[j];
            a2[b] = float(-offset * sum) * d;
        } else if (offset == 0) {
            a2[b] = half(load_u16(block + 2));  // Q8_1's s
        } else {
            a2[b] = 0.0f;
        }
    }
}

// ---- Prefill panels: rows decoded to unsigned codes and float scales ----------------------
//
// Every weight type is decoded into sub-blocks of `bl` elements (32, or 16 for Q2_K/Q3_K/Q6_K)
// with unsigned codes u and a float scale; its value is scale * (u - offset) [+ min]. The
// activation side supplies, per token and sub-block, -offset * sum(x) as an integer (added to
// the integer dot product) and, for types with mins, the factor the min multiplies.
struct PanelFormat {
    int bl;           // elements per sub-block
    int offset;       // subtracted from every code
    bool has_min;     // value includes a per-sub-block min
    bool k_quant;     // activations are Q8_K (one scale per 256), else Q8_0/Q8_1 (per 32)
    Act32Format act;  // for the 32-element types
};

// ---- The activation side of the prefill kernels --------------------------------------------

// Per token t and sub-block j (index t * n_sub + j): the integer -offset * sum(x), the float
// factor of the min (Q8_1's s, or the sum of the sub-block's Q8_K quants), and the activation
// scale (per 32-element block, or per super-block for Q8_K at index t * n_super + j).
struct ActSide {
    int32_t* bias;
    float* min_factor;
    float* dx;
};

inline void compute_act_side(const PanelFormat& f, const uint8_t* act, size_t act_stride,
                             int64_t n_tokens, int64_t n_cols, const ActSide& side) {
    const int64_t n_sub = n_cols / f.bl;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const uint8_t* row = act + size_t(t) * act_stride;
        if (f.k_quant) {
            const auto* xb = reinterpret_cast<const BlockQ8_K*>(row);
            const int64_t n_super = n_cols / 256;
            for (int64_t s = 0; s < n_super; ++s) side.dx[t * n_super + s] = xb[s].d;
            const int per16 = f.bl / 16;  // bsums per sub-block
            for (int64_t j = 0; j < n_sub; ++j) {
                const int16_t* bs = xb[j * f.bl / 256].bsums + (j * per16) % 16;
                int sum = 0;
                for (int k = 0; k < per16; ++k) sum += bs[k];
                side.bias[t * n_sub + j] = -f.offset * sum;
                side.min_factor[t * n_sub + j] = float(sum);
            }
        } else {
            for (int64_t j = 0; j < n_sub; ++j) {
                const uint8_t* block = row + size_t(j) * f.act.block_bytes;
                const int8_t* q = reinterpret_cast<const int8_t*>(block + f.act.qs_offset);
                int sum = 0;
                // Offset 0: the bias is 0, no sums needed (the mins take Q8_1's s, not a sum).
                if (f.offset != 0) {
                    for (int k = 0; k < 32; ++k) sum += q[k];
                }
                side.bias[t * n_sub + j] = -f.offset * sum;
                side.dx[t * n_sub + j] = half(load_u16(block));
                side.min_factor[t * n_sub + j] = f.has_min ? half(load_u16(block + 2)) : 0.0f;
            }
        }
    }
}

// Address of the quants of sub-block j of an activation row.
inline const int8_t* act_quants(const PanelFormat& f, const uint8_t* row, int64_t j) {
    if (f.k_quant) {
        const int64_t e = j * f.bl;
        return reinterpret_cast<const int8_t*>(row + size_t(e / 256) * sizeof(BlockQ8_K) + 4 +
                                               e % 256);
    }
    return reinterpret_cast<const int8_t*>(row + size_t(j) * f.act.block_bytes + f.act.qs_offset);
}

// How many vpmaddubsw results of codes <= max_code (times activations of magnitude <= 127, two
// per int16 lane) can be summed in int16 before vpmaddwd.
constexpr int int16_adds(int max_code) {
    return 32767 / (2 * 127 * max_code);
}

// A dot product of unsigned codes <= kMaxCode with activations, started at `init`. Sets with an
// exact 8-bit dot product (VNNI, SDOT: V::kVnni) add into int32 directly; the others sum
// vpmaddubsw results in int16 and fold them into int32 before they could overflow. kInOrder
// (the GEMM tiles, many chains at once) keeps those int16 sums in registers, added in order.
template <class V, int kMaxCode, bool kInOrder = false>
struct DotChain {
    using I = typename V::I;
    static constexpr int kAdds = V::kVnni ? 1 << 30 : int16_adds(kMaxCode);
    static_assert(kAdds >= 1, "codes too large for vpmaddubsw");

    DotChain() : DotChain(V::zero()) {}
    explicit DotChain(I init) : s(init), d(V::dot_begin(init)) {}
    void add(I codes, I x) {
        if (n == kAdds) {
            s = V::dot_end(s, d);
            d = V::dot_begin(s);
            n = 0;
        }
        d = V::dot_add(d, codes, x);
        if constexpr (kInOrder && !V::kVnni) V::hold(d);
        ++n;
    }
    // add(codes, V::bcast32(x)), the broadcast folded into the dot product where V can.
    void add_bcast(I codes, const void* x) {
        if constexpr (requires(typename V::Dot dd) { V::dot_add_bcast(dd, codes, x); }) {
            if (n == kAdds) {
                s = V::dot_end(s, d);
                d = V::dot_begin(s);
                n = 0;
            }
            d = V::dot_add_bcast(d, codes, x);
            ++n;
        } else {
            add(codes, V::bcast32(x));
        }
    }
    I result() const { return V::dot_end(s, d); }

    I s;
    typename V::Dot d;
    int n = 0;
};

}  // namespace
}  // namespace mw::simd
