// Scalar reference code of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M): the specification of their kernels.
//
// Decoding repeats ggml's float operations in its order (the sub-block scale first, then grid
// value and sign), so it is bit-identical to ggml's dequantize_row_*. For the dot products every
// block is unpacked into signed 8-bit values, an integer scale per 16 values and one float factor
// (lattice_unpack): value = factor * scale * w exactly, since ggml's scales are (2s + 1) / 8,
// (2s + 1) / 4 or 2s + 1 times d, and IQ1's delta of 1/8 becomes w = 8 * grid +- 1.
#include <cstring>

#include "base/fp16.h"
#include "tensor/iq_grids.h"
#include "tensor/quants.h"

namespace mw::ref {
namespace {

constexpr float kIq1Delta = 0.125f;

inline const int8_t* point8(uint64_t const& p) {
    return reinterpret_cast<const int8_t*>(&p);
}
inline const uint8_t* upoint8(uint64_t const& p) {
    return reinterpret_cast<const uint8_t*>(&p);
}
inline const uint8_t* upoint4(uint32_t const& p) {
    return reinterpret_cast<const uint8_t*>(&p);
}
inline float sign_of(uint8_t signs, int j) {
    return (signs >> j) & 1 ? -1.0f : 1.0f;
}
inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// IQ2_S's 10-bit grid index l (< 4) of sub-block j, and IQ3_S's 9-bit indices.
inline int iq2s_index(const BlockIQ2_S& b, int j, int l) {
    return b.qs[4 * j + l] | ((b.qh[j] << (8 - 2 * l)) & 0x300);
}
inline int iq3s_index(const BlockIQ3_S& b, int j, int k) {  // k < 8: the k-th point of 4
    return b.qs[8 * j + k] | ((b.qh[j] << (8 - k)) & 256);
}
inline int iq3s_scale(const BlockIQ3_S& b, int j) {
    return (b.scales[j / 2] >> (4 * (j % 2))) & 0xF;
}
inline int iq1_index(const uint8_t* qs, int low3) {
    return *qs | (low3 << 8);
}
// IQ1_M's fp16 d, from the top nibbles of its four scale words.
inline float iq1m_d(const BlockIQ1_M& b) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    return fp16_to_f32(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                (sc[3] & 0xF000)));
}
inline int iq1m_scale(const BlockIQ1_M& b, int half16) {  // half16 < 16
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    const int j = half16 / 2;
    return (sc[j / 2] >> (6 * (j % 2) + 3 * (half16 % 2))) & 7;
}
inline int iq1m_index(const BlockIQ1_M& b, int j, int l) {
    const uint8_t qh = b.qh[2 * j + l / 2];
    return b.qs[4 * j + l] | ((l % 2 ? qh << 4 : qh << 8) & 0x700);
}
inline bool iq1m_minus(const BlockIQ1_M& b, int j, int l) {
    return b.qh[2 * j + l / 2] & (l % 2 ? 0x80 : 0x08);
}

}  // namespace

// ---- Decoding ------------------------------------------------------------------------------

void dequantize_row_iq2_xxs(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ2_XXS*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(blocks[i].d);
        const auto* q8 = reinterpret_cast<const uint8_t*>(blocks[i].qs);
        for (int j = 0; j < 8; ++j) {
            const uint32_t aux = load_u32(q8 + 8 * j + 4);
            const float db = d * (0.5f + float(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t* p = upoint8(g.iq2xxs[q8[8 * j + l]]);
                const uint8_t signs = g.signs[(aux >> (7 * l)) & 127];
                for (int k = 0; k < 8; ++k) y[k] = db * p[k] * sign_of(signs, k);
            }
        }
    }
}

void dequantize_row_iq2_xs(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ2_XS*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ2_XS& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < 8; ++j) {
            const float db[2] = {d * (0.5f + float(b.scales[j] & 0xF)) * 0.25f,
                                 d * (0.5f + float(b.scales[j] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint16_t q = b.qs[4 * j + l];
                const uint8_t* p = upoint8(g.iq2xs[q & 511]);
                const uint8_t signs = g.signs[q >> 9];
                for (int k = 0; k < 8; ++k) y[k] = db[l / 2] * p[k] * sign_of(signs, k);
            }
        }
    }
}

void dequantize_row_iq2_s(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ2_S*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ2_S& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < 8; ++j) {
            const float db[2] = {d * (0.5f + float(b.scales[j] & 0xF)) * 0.25f,
                                 d * (0.5f + float(b.scales[j] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t* p = upoint8(g.iq2s[iq2s_index(b, j, l)]);
                const uint8_t signs = b.qs[32 + 4 * j + l];
                for (int k = 0; k < 8; ++k) y[k] = db[l / 2] * p[k] * sign_of(signs, k);
            }
        }
    }
}

void dequantize_row_iq3_xxs(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ3_XXS*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ3_XXS& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < 8; ++j) {
            const uint32_t aux = load_u32(b.qs + 64 + 4 * j);
            const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t signs = g.signs[(aux >> (7 * l)) & 127];
                const uint8_t* p1 = upoint4(g.iq3xxs[b.qs[8 * j + 2 * l]]);
                const uint8_t* p2 = upoint4(g.iq3xxs[b.qs[8 * j + 2 * l + 1]]);
                for (int k = 0; k < 4; ++k) {
                    y[k] = db * p1[k] * sign_of(signs, k);
                    y[k + 4] = db * p2[k] * sign_of(signs, k + 4);
                }
            }
        }
    }
}

void dequantize_row_iq3_s(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ3_S*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ3_S& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < 8; ++j) {
            const float db = d * float(1 + 2 * iq3s_scale(b, j));
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t* p1 = upoint4(g.iq3s[iq3s_index(b, j, 2 * l)]);
                const uint8_t* p2 = upoint4(g.iq3s[iq3s_index(b, j, 2 * l + 1)]);
                const uint8_t signs = b.signs[4 * j + l];
                for (int k = 0; k < 4; ++k) {
                    y[k] = db * p1[k] * sign_of(signs, k);
                    y[k + 4] = db * p2[k] * sign_of(signs, k + 4);
                }
            }
        }
    }
}

void dequantize_row_iq1_s(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ1_S*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ1_S& b = blocks[i];
        const float d = fp16_to_f32(b.d);
        for (int j = 0; j < 8; ++j) {
            const float dl = d * float(2 * ((b.qh[j] >> 12) & 7) + 1);
            const float delta = b.qh[j] & 0x8000 ? -kIq1Delta : kIq1Delta;
            for (int l = 0; l < 4; ++l, y += 8) {
                const int8_t* p =
                    point8(g.iq1s[iq1_index(b.qs + 4 * j + l, (b.qh[j] >> (3 * l)) & 7)]);
                for (int k = 0; k < 8; ++k) y[k] = dl * (float(p[k]) + delta);
            }
        }
    }
}

void dequantize_row_iq1_m(const void* src, float* y, int64_t n) {
    const IqGrids& g = iq_grids();
    const auto* blocks = static_cast<const BlockIQ1_M*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const BlockIQ1_M& b = blocks[i];
        const float d = iq1m_d(b);
        for (int j = 0; j < 8; ++j) {
            for (int l = 0; l < 4; ++l, y += 8) {
                const float dl = d * float(2 * iq1m_scale(b, 2 * j + l / 2) + 1);
                const float delta = iq1m_minus(b, j, l) ? -kIq1Delta : kIq1Delta;
                const int8_t* p = point8(g.iq1s[iq1m_index(b, j, l)]);
                for (int k = 0; k < 8; ++k) y[k] = dl * (float(p[k]) + delta);
            }
        }
    }
}

// ---- Unpacking for the dot products ---------------------------------------------------------

namespace {

void put_signed(const uint8_t* p, uint8_t signs, int count, int8_t* w) {
    for (int k = 0; k < count; ++k) w[k] = int8_t((signs >> k) & 1 ? -p[k] : p[k]);
}

}  // namespace

void lattice_unpack(GgmlType type, const void* block, LatticeBlock* out) {
    const IqGrids& g = iq_grids();
    int8_t* w = out->w;
    int16_t* sc = out->scale;
    switch (type) {
        case GgmlType::IQ2_XXS: {
            const auto& b = *static_cast<const BlockIQ2_XXS*>(block);
            const auto* q8 = reinterpret_cast<const uint8_t*>(b.qs);
            for (int j = 0; j < 8; ++j) {
                const uint32_t aux = load_u32(q8 + 8 * j + 4);
                sc[2 * j] = sc[2 * j + 1] = int16_t(2 * (aux >> 28) + 1);
                for (int l = 0; l < 4; ++l) {
                    put_signed(upoint8(g.iq2xxs[q8[8 * j + l]]), g.signs[(aux >> (7 * l)) & 127], 8,
                               w + 32 * j + 8 * l);
                }
            }
            out->factor = fp16_to_f32(b.d) * 0.125f;
            break;
        }
        case GgmlType::IQ2_XS: {
            const auto& b = *static_cast<const BlockIQ2_XS*>(block);
            for (int j = 0; j < 8; ++j) {
                sc[2 * j] = int16_t(2 * (b.scales[j] & 0xF) + 1);
                sc[2 * j + 1] = int16_t(2 * (b.scales[j] >> 4) + 1);
                for (int l = 0; l < 4; ++l) {
                    const uint16_t q = b.qs[4 * j + l];
                    put_signed(upoint8(g.iq2xs[q & 511]), g.signs[q >> 9], 8, w + 32 * j + 8 * l);
                }
            }
            out->factor = fp16_to_f32(b.d) * 0.125f;
            break;
        }
        case GgmlType::IQ2_S: {
            const auto& b = *static_cast<const BlockIQ2_S*>(block);
            for (int j = 0; j < 8; ++j) {
                sc[2 * j] = int16_t(2 * (b.scales[j] & 0xF) + 1);
                sc[2 * j + 1] = int16_t(2 * (b.scales[j] >> 4) + 1);
                for (int l = 0; l < 4; ++l) {
                    put_signed(upoint8(g.iq2s[iq2s_index(b, j, l)]), b.qs[32 + 4 * j + l], 8,
                               w + 32 * j + 8 * l);
                }
            }
            out->factor = fp16_to_f32(b.d) * 0.125f;
            break;
        }
        case GgmlType::IQ3_XXS: {
            const auto& b = *static_cast<const BlockIQ3_XXS*>(block);
            for (int j = 0; j < 8; ++j) {
                const uint32_t aux = load_u32(b.qs + 64 + 4 * j);
                sc[2 * j] = sc[2 * j + 1] = int16_t(2 * (aux >> 28) + 1);
                for (int l = 0; l < 4; ++l) {
                    const uint8_t signs = g.signs[(aux >> (7 * l)) & 127];
                    int8_t* wl = w + 32 * j + 8 * l;
                    put_signed(upoint4(g.iq3xxs[b.qs[8 * j + 2 * l]]), signs, 4, wl);
                    put_signed(upoint4(g.iq3xxs[b.qs[8 * j + 2 * l + 1]]), uint8_t(signs >> 4), 4,
                               wl + 4);
                }
            }
            out->factor = fp16_to_f32(b.d) * 0.25f;
            break;
        }
        case GgmlType::IQ3_S: {
            const auto& b = *static_cast<const BlockIQ3_S*>(block);
            for (int j = 0; j < 8; ++j) {
                sc[2 * j] = sc[2 * j + 1] = int16_t(2 * iq3s_scale(b, j) + 1);
                for (int l = 0; l < 4; ++l) {
                    const uint8_t signs = b.signs[4 * j + l];
                    int8_t* wl = w + 32 * j + 8 * l;
                    put_signed(upoint4(g.iq3s[iq3s_index(b, j, 2 * l)]), signs, 4, wl);
                    put_signed(upoint4(g.iq3s[iq3s_index(b, j, 2 * l + 1)]), uint8_t(signs >> 4), 4,
                               wl + 4);
                }
            }
            out->factor = fp16_to_f32(b.d);
            break;
        }
        case GgmlType::IQ1_S: {
            const auto& b = *static_cast<const BlockIQ1_S*>(block);
            for (int j = 0; j < 8; ++j) {
                sc[2 * j] = sc[2 * j + 1] = int16_t(2 * ((b.qh[j] >> 12) & 7) + 1);
                const int delta = b.qh[j] & 0x8000 ? -1 : 1;
                for (int l = 0; l < 4; ++l) {
                    const int8_t* p =
                        point8(g.iq1s[iq1_index(b.qs + 4 * j + l, (b.qh[j] >> (3 * l)) & 7)]);
                    for (int k = 0; k < 8; ++k) w[32 * j + 8 * l + k] = int8_t(8 * p[k] + delta);
                }
            }
            out->factor = fp16_to_f32(b.d) * 0.125f;
            break;
        }
        case GgmlType::IQ1_M: {
            const auto& b = *static_cast<const BlockIQ1_M*>(block);
            for (int h = 0; h < 16; ++h) sc[h] = int16_t(2 * iq1m_scale(b, h) + 1);
            for (int j = 0; j < 8; ++j) {
                for (int l = 0; l < 4; ++l) {
                    const int delta = iq1m_minus(b, j, l) ? -1 : 1;
                    const int8_t* p = point8(g.iq1s[iq1m_index(b, j, l)]);
                    for (int k = 0; k < 8; ++k) w[32 * j + 8 * l + k] = int8_t(8 * p[k] + delta);
                }
            }
            out->factor = iq1m_d(b) * 0.125f;
            break;
        }
        default:
            std::memset(out, 0, sizeof *out);
            break;
    }
}

namespace {

template <GgmlType kType, typename Block>
float lattice_dot(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* xb = static_cast<const BlockQ8_K*>(x);
    LatticeBlock u;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        lattice_unpack(kType, wb + i, &u);
        int isum = 0;
        for (int h = 0; h < 16; ++h) {
            int s = 0;
            for (int k = 0; k < 16; ++k) s += u.w[16 * h + k] * xb[i].qs[16 * h + k];
            isum += u.scale[h] * s;
        }
        sum += u.factor * xb[i].d * float(isum);
    }
    return sum;
}

}  // namespace

float vec_dot_iq2_xxs_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ2_XXS, BlockIQ2_XXS>(n, w, x);
}
float vec_dot_iq2_xs_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ2_XS, BlockIQ2_XS>(n, w, x);
}
float vec_dot_iq2_s_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ2_S, BlockIQ2_S>(n, w, x);
}
float vec_dot_iq3_xxs_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ3_XXS, BlockIQ3_XXS>(n, w, x);
}
float vec_dot_iq3_s_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ3_S, BlockIQ3_S>(n, w, x);
}
float vec_dot_iq1_s_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ1_S, BlockIQ1_S>(n, w, x);
}
float vec_dot_iq1_m_q8_k(int64_t n, const void* w, const void* x) {
    return lattice_dot<GgmlType::IQ1_M, BlockIQ1_M>(n, w, x);
}

}  // namespace mw::ref
