// The inner loops of attention (tensor/attention_kernels.h), written once over a vector type V
// (tensor/x86/simd.h: V256, V512; tensor/arm/simd.h: V128) and instantiated per instruction set:
// scores and value sums for four queries at a time, so that each key or value chunk is loaded once
// for the four; a vector exp for the online softmax; the cache's row decoders.
//
// The row decoders are bit-exact with the scalar reference (each conversion is exact and each
// element is one float product). Scores and sums add in another order than the scalar set.
// Besides the vector type's common functions, V provides the few attention needs: maxf, round
// (to nearest), exp2i (2^n of integral n in [-126, 127]), loadf_n / storef_n (the first n
// lanes, n < kLanes), reduce4 (four horizontal sums) and load_bf16.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/attention_kernels.h"
#include "tensor/simd/common.h"

namespace mw::simd {
namespace {

template <class V>
struct Attention {
    using F = typename V::F;
    static constexpr int L = V::kLanes;

    // Scores of M (1 or 4) queries against every key.
    template <int M>
    static void scores_rows(const float* q, const float* k, int ld_k, int n_k, int hd, float* s,
                            int ld_s) {
        const int whole = hd / L * L;
        for (int j = 0; j < n_k; ++j) {
            const float* kj = k + size_t(j) * ld_k;
            F a[4] = {V::zerof(), V::zerof(), V::zerof(), V::zerof()};
            for (int d = 0; d < whole; d += L) {
                const F kv = V::loadf(kj + d);
                for (int r = 0; r < M; ++r)
                    a[r] = V::fmadd(V::loadf(q + size_t(r) * hd + d), kv, a[r]);
            }
            if (whole < hd) {
                const F kv = V::loadf_n(kj + whole, hd - whole);
                for (int r = 0; r < M; ++r) {
                    a[r] = V::fmadd(V::loadf_n(q + size_t(r) * hd + whole, hd - whole), kv, a[r]);
                }
            }
            if constexpr (M == 4) {
                float out[4];
                V::reduce4(a[0], a[1], a[2], a[3], out);
                for (int r = 0; r < 4; ++r) s[size_t(r) * ld_s + j] = out[r];
            } else {
                s[j] = V::reduce(a[0]);
            }
        }
    }

    static void scores(const float* q, int n_q, const float* k, int ld_k, int n_k, int hd, float* s,
                       int ld_s) {
        int i = 0;
        for (; i + 4 <= n_q; i += 4)
            scores_rows<4>(q + size_t(i) * hd, k, ld_k, n_k, hd, s + size_t(i) * ld_s, ld_s);
        for (; i < n_q; ++i)
            scores_rows<1>(q + size_t(i) * hd, k, ld_k, n_k, hd, s + size_t(i) * ld_s, ld_s);
    }

    // acc_r += sum_j p_rj v_j for M queries over `width` (<= L) lanes starting at d: each value
    // chunk is loaded once for all M, the accumulators stay in registers over the block.
    template <int M, bool kWhole>
    [[gnu::always_inline]] static void accumulate_chunk(const float* p, int ld_p, const float* v,
                                                        int ld_v, int n_v, int hd, float* acc,
                                                        int d, int width) {
        auto load = [width](const float* x) {
            if constexpr (kWhole) {
                (void)width;
                return V::loadf(x);
            } else {
                return V::loadf_n(x, width);
            }
        };
        F a[M];
        for (int r = 0; r < M; ++r) a[r] = load(acc + size_t(r) * hd + d);
        for (int j = 0; j < n_v; ++j) {
            const F vv = load(v + size_t(j) * ld_v + d);
            for (int r = 0; r < M; ++r) a[r] = V::fmadd(V::set1(p[size_t(r) * ld_p + j]), vv, a[r]);
        }
        for (int r = 0; r < M; ++r) {
            if constexpr (kWhole) {
                V::storef(acc + size_t(r) * hd + d, a[r]);
            } else {
                V::storef_n(acc + size_t(r) * hd + d, a[r], width);
            }
        }
    }

    template <int M>
    static void accumulate_rows(const float* p, int ld_p, const float* v, int ld_v, int n_v, int hd,
                                float* acc) {
        const int whole = hd / L * L;
        for (int d = 0; d < whole; d += L)
            accumulate_chunk<M, true>(p, ld_p, v, ld_v, n_v, hd, acc, d, L);
        if (whole < hd)
            accumulate_chunk<M, false>(p, ld_p, v, ld_v, n_v, hd, acc, whole, hd - whole);
    }

    static void accumulate(const float* p, int ld_p, int n_q, const float* v, int ld_v, int n_v,
                           int hd, float* acc) {
        int i = 0;
        for (; i + 4 <= n_q; i += 4) {
            accumulate_rows<4>(p + size_t(i) * ld_p, ld_p, v, ld_v, n_v, hd, acc + size_t(i) * hd);
        }
        for (; i < n_q; ++i) {
            accumulate_rows<1>(p + size_t(i) * ld_p, ld_p, v, ld_v, n_v, hd, acc + size_t(i) * hd);
        }
    }

    // exp(x) for x <= 0 (Cephes' single-precision polynomial, about 1 ulp); below -87.3 it
    // returns about 1e-38 rather than 0, which no softmax sum notices.
    static F exp_nonpositive(F x) {
        x = V::maxf(x, V::set1(-87.33654f));
        const F n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
        F r = V::fnmadd(n, V::set1(0.693359375f), x);
        r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
        F p = V::set1(1.9875691500e-4f);
        p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
        p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
        p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
        p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
        p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
        p = V::fmadd(V::mul(p, r), r, V::add(r, V::set1(1.0f)));
        return V::ldexp(p, n);  // n >= -126 after the clamp: 2^n is a normal number
    }

    static float exp_sum(float* x, int n, float max) {
        const F vmax = V::set1(max);
        F sum = V::zerof();
        int j = 0;
        for (; j + L <= n; j += L) {
            const F e = exp_nonpositive(V::sub(V::loadf(x + j), vmax));
            V::storef(x + j, e);
            sum = V::add(sum, e);
        }
        float total = V::reduce(sum);
        if (j < n) {
            // The lanes past n hold exp(-max) of zeros: stored nowhere, summed from x alone.
            const F e = exp_nonpositive(V::sub(V::loadf_n(x + j, n - j), vmax));
            V::storef_n(x + j, e, n - j);
            for (int i = j; i < n; ++i) total += x[i];
        }
        return total;
    }

    static void scale(float a, float* y, int n) {
        const F va = V::set1(a);
        int i = 0;
        for (; i + L <= n; i += L) V::storef(y + i, V::mul(va, V::loadf(y + i)));
        if (i < n) V::storef_n(y + i, V::mul(va, V::loadf_n(y + i, n - i)), n - i);
    }

    static void f16_to_float(const void* src, float* dst, int64_t n) {
        const uint16_t* h = static_cast<const uint16_t*>(src);
        int64_t i = 0;
        for (; i + L <= n; i += L) V::storef(dst + i, V::load_halfs(h + i));
        for (; i < n; ++i) dst[i] = half(h[i]);
    }

    static void bf16_to_float(const void* src, float* dst, int64_t n) {
        const uint16_t* h = static_cast<const uint16_t*>(src);
        int64_t i = 0;
        for (; i + L <= n; i += L) V::storef(dst + i, V::load_bf16(h + i));
        for (; i < n; ++i) {
            const uint32_t bits = uint32_t(h[i]) << 16;
            std::memcpy(dst + i, &bits, 4);
        }
    }

    static void q8_0_to_float(const void* src, float* dst, int64_t n) {
        const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
        for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
            const F d = V::set1(half(b[ib].d));
            for (int j = 0; j < kQK; j += L)
                V::storef(dst + j, V::mul(V::load_s8(b[ib].qs + j), d));
        }
    }

    static void q4_0_to_float(const void* src, float* dst, int64_t n) {
        const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
        for (int64_t ib = 0; ib < n / kQK; ++ib, dst += kQK) {
            const F d = V::set1(half(b[ib].d));
            alignas(16) int8_t codes[kQK];
            V::q4_0_codes(b[ib].qs, codes);
            for (int j = 0; j < kQK; j += L) V::storef(dst + j, V::mul(V::load_s8(codes + j), d));
        }
    }

    // The gated delta rule (attention_kernels.h): per chunk of L value lanes, the state's column
    // chunk is read once for S^T k (all rows, one accumulator) and once to write the updated
    // state and accumulate the read-out.
    template <bool kWhole>
    [[gnu::always_inline]] static void delta_chunk(float* s, const float* q, const float* k,
                                                   const float* v, F decay, float beta, float scale,
                                                   float* out, int d, int j, int width) {
        auto load = [width](const float* x) {
            if constexpr (kWhole) {
                (void)width;
                return V::loadf(x);
            } else {
                return V::loadf_n(x, width);
            }
        };
        auto store = [width](float* x, F val) {
            if constexpr (kWhole) {
                (void)width;
                V::storef(x, val);
            } else {
                V::storef_n(x, val, width);
            }
        };
        F ks = V::zerof();
        for (int i = 0; i < d; ++i) ks = V::fmadd(load(s + size_t(i) * d + j), V::set1(k[i]), ks);
        const F delta = V::mul(V::set1(beta), V::fnmadd(decay, ks, load(v + j)));
        F o = V::zerof();
        for (int i = 0; i < d; ++i) {
            float* row = s + size_t(i) * d + j;
            const F updated = V::fmadd(V::set1(k[i]), delta, V::mul(decay, load(row)));
            store(row, updated);
            o = V::fmadd(updated, V::set1(q[i] * scale), o);
        }
        store(out + j, o);
    }

    static void delta_step(float* s, const float* q, const float* k, const float* v, float decay,
                           float beta, float scale, float* out, float* tmp, int d) {
        (void)tmp;
        const F dec = V::set1(decay);
        int j = 0;
        for (; j + L <= d; j += L) delta_chunk<true>(s, q, k, v, dec, beta, scale, out, d, j, L);
        if (j < d) delta_chunk<false>(s, q, k, v, dec, beta, scale, out, d, j, d - j);
    }

    static constexpr AttentionKernels kernels(const char* isa) {
        return {isa,          scores,        accumulate,    exp_sum,       scale,
                f16_to_float, bf16_to_float, q8_0_to_float, q4_0_to_float, delta_step};
    }
};

}  // namespace
}  // namespace mw::simd
