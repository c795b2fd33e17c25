// ARMv8.0 NEON kernels (every ARM64 CPU): the activation quantizers, the F32 / F16 / BF16 dot
// products and matrix kernels, and the quantized kernels on widening multiplies, the fallback for
// CPUs without SDOT. Also the level choice and installation of the ARM64 kernel sets.
#include "tensor/arm/neon.h"

#include <cstring>

#include "base/fp16.h"
#include "tensor/arm/dot.h"

namespace mw::neon {
namespace {

// ---- Activation quantizers: bit-identical to the mw::ref versions ----------------------------

// Q8_0 and Q8_1: d = amax / 127 (stored as fp16, applied in float), q = round(x / d), ties away
// from zero as std::round.
inline float quantize_32(const float* src, int8_t* qs) {
    float32x4_t v[8];
    float32x4_t amax = vdupq_n_f32(0.0f);
    for (int j = 0; j < 8; ++j) {
        v[j] = vld1q_f32(src + 4 * j);
        amax = vmaxq_f32(amax, vabsq_f32(v[j]));
    }
    const float d = vmaxvq_f32(amax) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int h = 0; h < 2; ++h) {
        int16x8_t q16[2];
        for (int k = 0; k < 2; ++k) {
            const int32x4_t a = vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 2 * k], id));
            const int32x4_t b = vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 2 * k + 1], id));
            q16[k] = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
        }
        vst1q_s8(qs + 16 * h, vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1])));
    }
    return d;
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        blocks[i].d = f32_to_fp16(quantize_32(src, blocks[i].qs));
    }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
        BlockQ8_1& b = blocks[i];
        const float d = quantize_32(src, b.qs);
        const int sum = vaddlvq_s8(vld1q_s8(b.qs)) + vaddlvq_s8(vld1q_s8(b.qs + 16));
        b.d = f32_to_fp16(d);
        b.s = f32_to_fp16(float(sum) * d);
    }
}

// Q8_K: scale -127 / (the first element of largest |x|), q rounded to nearest even.
void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
        BlockQ8_K& b = blocks[i];
        float32x4_t amax4 = vdupq_n_f32(0.0f);
        for (int j = 0; j < kQK_K; j += 4) amax4 = vmaxq_f32(amax4, vabsq_f32(vld1q_f32(src + j)));
        const float amax = vmaxvq_f32(amax4);
        if (amax == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        float max = 0.0f;
        for (int j = 0; j < kQK_K; j += 4) {
            if (vmaxvq_u32(vceqq_f32(vabsq_f32(vld1q_f32(src + j)), vdupq_n_f32(amax))) == 0) {
                continue;
            }
            int k = j;
            while (src[k] != amax && src[k] != -amax) ++k;
            max = src[k];
            break;
        }
        const float iscale = -127.0f / max;
        const int32x4_t limit = vdupq_n_s32(127);
        for (int c = 0; c < kQK_K / 16; ++c) {
            int16x8_t q16[2];
            for (int k = 0; k < 2; ++k) {
                const float* p = src + 16 * c + 8 * k;
                const int32x4_t a =
                    vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(p), iscale)), limit);
                const int32x4_t e =
                    vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(p + 4), iscale)), limit);
                q16[k] = vcombine_s16(vmovn_s32(a), vmovn_s32(e));
            }
            const int8x16_t q = vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1]));
            vst1q_s8(b.qs + 16 * c, q);
            b.bsums[c] = int16_t(vaddlvq_s8(q));
        }
        b.d = 1 / iscale;
    }
}

// F16: the conversion instruction rounds to nearest even like f32_to_fp16; NaNs become the
// reference's quiet NaN (sign | 0x7e00).
void f16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(src + i);
        const uint32x4_t bits = vreinterpretq_u32_f32(v);
        const uint32x4_t nan =
            vcgtq_u32(vandq_u32(bits, vdupq_n_u32(0x7fffffff)), vdupq_n_u32(0x7f800000));
        const uint16x4_t quiet = vorr_u16(
            vmovn_u32(vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x8000))), vdup_n_u16(0x7e00));
        const uint16x4_t converted = vreinterpret_u16_f16(vcvt_f16_f32(v));
        vst1_u16(h + i, vbsl_u16(vmovn_u32(nan), quiet, converted));
    }
    for (; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

// BF16: round to nearest even on the bits, NaNs quieted (f32_to_bf16).
void bf16_from_float(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32x4_t bits = vreinterpretq_u32_f32(vld1q_f32(src + i));
        const uint32x4_t odd = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
        const uint32x4_t rounded =
            vshrq_n_u32(vaddq_u32(bits, vaddq_u32(vdupq_n_u32(0x7fff), odd)), 16);
        const uint32x4_t quiet = vorrq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(64));
        const uint32x4_t nan =
            vcgtq_u32(vandq_u32(bits, vdupq_n_u32(0x7fffffff)), vdupq_n_u32(0x7f800000));
        vst1_u16(h + i, vmovn_u32(vbslq_u32(nan, quiet, rounded)));
    }
    for (; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

// ---- F32 / F16 / BF16 -------------------------------------------------------------------------
// Products accumulate in float32 lanes (the reference sums in double: the difference is the
// float rounding of long sums, within the tests' tolerance).

struct F32Elems {
    using Elem = float;
    static float32x4_t load(const float* p) { return vld1q_f32(p); }
    static float one(const float* p) { return *p; }
};

struct F16Elems {
    using Elem = uint16_t;
    static float32x4_t load(const uint16_t* p) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
    }
    static float one(const uint16_t* p) { return fp16_to_f32(*p); }
};

struct BF16Elems {
    using Elem = uint16_t;
    static float32x4_t load(const uint16_t* p) {
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
    }
    static float one(const uint16_t* p) { return bf16_to_f32(*p); }
};

template <class L>
float vec_dot_float(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const typename L::Elem*>(w);
    const auto* b = static_cast<const typename L::Elem*>(x);
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                          vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = vfmaq_f32(acc[k], L::load(a + i + 4 * k), L::load(b + i + 4 * k));
        }
    }
    for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], L::load(a + i), L::load(b + i));
    float tail = 0.0f;
    for (; i < n; ++i) tail += L::one(a + i) * L::one(b + i);
    return vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3]))) + tail;
}

// 4 rows x kTokens tokens; n_cols arrives as the block count (block size 1).
template <class L, int kTokens>
void tile_float(const uint8_t* const rows[4], const uint8_t* const tokens[], int64_t n_cols,
                float32x4_t out[]) {
    using Elem = typename L::Elem;
    const Elem* w[4];
    const Elem* x[kTokens];
    for (int r = 0; r < 4; ++r) w[r] = reinterpret_cast<const Elem*>(rows[r]);
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const Elem*>(tokens[t]);
    float32x4_t acc[4][kTokens];
    for (int r = 0; r < 4; ++r) {
        for (int t = 0; t < kTokens; ++t) acc[r][t] = vdupq_n_f32(0.0f);
    }
    int64_t i = 0;
    for (; i + 4 <= n_cols; i += 4) {
        float32x4_t wv[4];
        for (int r = 0; r < 4; ++r) wv[r] = L::load(w[r] + i);
        for (int t = 0; t < kTokens; ++t) {
            const float32x4_t xv = L::load(x[t] + i);
            for (int r = 0; r < 4; ++r) acc[r][t] = vfmaq_f32(acc[r][t], wv[r], xv);
        }
    }
    for (int t = 0; t < kTokens; ++t) {
        float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int64_t k = i; k < n_cols; ++k) {
            for (int r = 0; r < 4; ++r) tail[r] += L::one(w[r] + k) * L::one(x[t] + k);
        }
        const float32x4_t sums =
            vpaddq_f32(vpaddq_f32(acc[0][t], acc[1][t]), vpaddq_f32(acc[2][t], acc[3][t]));
        out[t] = vaddq_f32(sums, vld1q_f32(tail));
    }
}

template <class L>
void matmul_float(const uint8_t* w, size_t w_row_bytes, int64_t n_cols, int64_t r0, int64_t r1,
                  const uint8_t* act, size_t act_stride, int64_t n_tokens, float* y, int64_t ldy) {
    matmul_tiles<4>(tile_float<L, 4>, nullptr, tile_float<L, 1>, 1, w, w_row_bytes, n_cols, r0, r1,
                    act, act_stride, n_tokens, y, ldy);
}

template <class L>
void set_float(TraitsArray& table, GgmlType type, FromFloatFn from_float) {
    TypeTraits& t = row_of(table, type);
    if (from_float) t.from_float = from_float;
    t.vec_dot = vec_dot_float<L>;
    t.matmul = matmul_float<L>;
    t.isa = "neon";
}

}  // namespace

TypeTraits& row_of(TraitsArray& table, GgmlType type) {
    for (TypeTraits& t : table) {
        if (t.type == type) return t;
    }
    __builtin_trap();  // every type the kernels install is in the table
}

Level best_level(const CpuFeatures& cpu) {
    if (cpu.dotprod && cpu.i8mm) return Level::i8mm;
    if (cpu.dotprod) return Level::dotprod;
    return Level::neon;
}

void install(KernelSet& set, Level level) {
    set.name = "neon";
    install_neon(set);
    if (level == Level::neon) return;
    set.name = "neon-dotprod";
    install_dotprod(set);
    if (level == Level::dotprod) return;
    set.name = "neon-i8mm";
    install_i8mm(set);
}

void install_neon(KernelSet& set) {
    TraitsArray& table = set.table;
    row_of(table, GgmlType::Q8_0).from_float = quantize_row_q8_0;
    row_of(table, GgmlType::Q8_1).from_float = quantize_row_q8_1;
    row_of(table, GgmlType::Q8_K).from_float = quantize_row_q8_k;
    set_float<F32Elems>(table, GgmlType::F32, nullptr);
    set_float<F16Elems>(table, GgmlType::F16, f16_from_float);
    set_float<BF16Elems>(table, GgmlType::BF16, bf16_from_float);
    install_quantized<BaseEngine>(table, "neon");
}

}  // namespace mw::neon
