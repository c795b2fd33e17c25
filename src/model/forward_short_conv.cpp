// LFM2's gated short convolution, per sequence: [B | C | X] = in_proj h; bx = B * X; a causal
// depthwise convolution of l_cache taps over bx (the last l_cache - 1 inputs kept per sequence,
// zeros before the first token); y = out_proj(C * conv).
#include "model/forward_step.h"

namespace mw {

void ForwardStep::short_conv(uint32_t il) {
    const HParams& hp = m.hp;
    const Layer& l = *layer;
    const int64_t e = hp.n_embd, taps = hp.shortconv_l_cache, hist = taps - 1;
    float* bcx = s.dn_qkv.data();  // n x 3e
    float* y = s.dn_conv.data();   // n x e

    matmul(l.wqkv, s.xb.data(), n, bcx);
    for_each_token(n, e, [&](uint32_t t) {
        float* row = bcx + int64_t(t) * 3 * e;
        for (int64_t c = 0; c < e; ++c) row[c] *= row[2 * e + c];  // bx, in B's place
    });
    for (uint32_t r = 0; r < b.n_seqs; ++r) {
        const ForwardSeq& fs = b.seqs[r];
        float* past = rs.conv(il, fs.seq);  // hist x e, oldest first
        const int64_t t0 = fs.first_token, nt = fs.n_tokens;
        auto bx = [&](int64_t at, int64_t c) {  // input at token offset `at` (< 0: the state)
            return at < 0 ? past[(hist + at) * e + c] : bcx[(t0 + at) * 3 * e + c];
        };
        parallel_for_work(par, e * nt * taps, [&](int ith, int nth) {
            const Range cr = split_range(e, ith, nth);
            for (int64_t c = cr.begin; c < cr.end; ++c) {
                const float* w = l.ssm_conv.data() + c * taps;
                for (int64_t t = 0; t < nt; ++t) {
                    float sum = 0.0f;
                    for (int64_t j = 0; j < taps; ++j) sum += w[j] * bx(t - hist + j, c);
                    y[(t0 + t) * e + c] = sum * bcx[(t0 + t) * 3 * e + e + c];  // times C
                }
                for (int64_t h = 0; h < hist; ++h) past[h * e + c] = bx(nt - hist + h, c);
            }
        });
    }
    matmul(l.wo, y, n, s.xb2.data());
}

}  // namespace mw
