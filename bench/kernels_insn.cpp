// One matrix kernel run CALLS times on fixed plausible weights, nothing else: what
// bench/arm-insn-count runs under qemu to count the instructions a kernel executes per weight
// byte (the count of a run with 1 call subtracted from one with 3 leaves exactly 2 calls, the
// set-up cancelling). Not a benchmark of time; no dependency on Google Benchmark, so it builds
// in the ARM64 cross build too.
//
// usage: kernels_insn SET TYPE ROWS COLS TOKENS CALLS [packed]
//   SET     a kernel set this CPU runs (scalar, neon, neon-dotprod, neon-i8mm, avx2, avx512, ...)
//   TYPE    a weight type (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, ...)
//   packed  use the set's packed layout of TYPE (tensor/repack.h) instead of the GGUF layout
// Prints the weight bytes one call reads.
//
//        kernels_insn attention SET OP POSITIONS CALLS
//   attention's inner loops (tensor/attention_kernels.h) on POSITIONS cached positions, head
//   size 128, four queries: SET scalar, avx2, avx512 or neon; OP scores, accumulate, exp,
//   decode_q4_0 or decode_f16. Prints the positions one call covers.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/attention_kernels.h"
#include "tensor/kernels.h"
#include "tensor/repack.h"
#include "tensor/types.h"
#include "weights.h"

namespace {

// `bytes` of weights of type t: random codes (a cheap generator: under emulation every
// instruction of the set-up is logged) with small positive fp16 scales.
void cheap_weights(const mw::TypeTraits& t, uint8_t* dst, size_t bytes) {
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < bytes; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        dst[i] = uint8_t(x);
    }
    for (size_t block = 0; block < bytes / t.type_size; ++block) {
        for (size_t off : mw::half_fields(t.type)) {
            const uint16_t h = mw::f32_to_fp16(0.001f * float(1 + block % 16));
            std::memcpy(dst + block * t.type_size + off, &h, 2);
        }
    }
}

int attention_main(int argc, char** argv) {
    using namespace mw;
    if (argc < 6) {
        std::fprintf(stderr, "usage: kernels_insn attention SET OP POSITIONS CALLS\n");
        return 2;
    }
    const std::string set_name = argv[2], op = argv[3];
    const int n_pos = std::atoi(argv[4]);
    const int64_t calls = std::atoll(argv[5]);
    const AttentionKernels* k = nullptr;
    for (const AttentionKernels* c : {attention_kernels_scalar(), attention_kernels_avx2(),
                                      attention_kernels_avx512(), attention_kernels_neon()}) {
        if (c && set_name == c->isa) k = c;
    }
    if (!k || n_pos <= 0) {
        std::fprintf(stderr, "kernels_insn: this CPU runs no attention set %s\n", argv[2]);
        return 1;
    }
    constexpr int kHd = 128, kQueries = 4;
    std::vector<float> q(size_t(kQueries) * kHd, 0.01f), keys(size_t(n_pos) * kHd),
        s(size_t(kQueries) * size_t(n_pos), 0.001f), acc(q.size()), out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = float(int(i % 17) - 8) * 0.1f;
    const TypeTraits& q4 = *type_traits(GgmlType::Q4_0);
    const TypeTraits& f16 = *type_traits(GgmlType::F16);
    std::vector<uint8_t> rows(row_bytes(f16, int64_t(keys.size())));
    const bool decode_q4 = op == "decode_q4_0";
    (decode_q4 ? q4 : f16).from_float(keys.data(), rows.data(), int64_t(keys.size()));
    float sum = 0;
    for (int64_t c = 0; c < calls; ++c) {
        if (op == "scores") {
            k->scores(q.data(), kQueries, keys.data(), kHd, n_pos, kHd, s.data(), n_pos);
        } else if (op == "accumulate") {
            k->accumulate(s.data(), n_pos, kQueries, keys.data(), kHd, n_pos, kHd, acc.data());
        } else if (op == "exp") {
            for (int i = 0; i < kQueries; ++i)
                sum += k->exp_sum(s.data() + size_t(i) * n_pos, n_pos, 1.0f);
        } else if (decode_q4 || op == "decode_f16") {
            attention_row_decoder(*k, decode_q4 ? q4 : f16)(rows.data(), out.data(),
                                                            int64_t(out.size()));
        } else {
            std::fprintf(stderr, "kernels_insn: unknown attention operation %s\n", argv[3]);
            return 2;
        }
    }
    for (float v : s) sum += v;
    for (float v : acc) sum += v;
    for (float v : out) sum += v;
    std::printf("%d %g\n", n_pos, double(sum));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mw;
    if (argc > 1 && std::string(argv[1]) == "attention") return attention_main(argc, argv);
    if (argc < 7) {
        std::fprintf(stderr, "usage: kernels_insn SET TYPE ROWS COLS TOKENS CALLS [packed]\n");
        return 2;
    }
    const std::string set_name = argv[1], type_name = argv[2];
    const int64_t n_rows = std::atoll(argv[3]), n_cols = std::atoll(argv[4]);
    const int64_t n_tokens = std::atoll(argv[5]), calls = std::atoll(argv[6]);
    const bool packed = argc > 7 && std::string(argv[7]) == "packed";
    for (const KernelSet& set : available_kernel_sets()) {
        if (set_name != set.name) continue;
        const TypeTraits* w = nullptr;
        for (const TypeTraits& t : set.table) {
            if (type_name == t.name) w = &t;
        }
        if (w && packed) {
            const TypeTraits* p = nullptr;
            for (int k = 0; k < set.n_packed; ++k) {
                if (set.packed[size_t(k)].type == w->type) p = &set.packed[size_t(k)];
            }
            w = p;
        }
        if (!w || !w->matmul || n_rows <= 0 || n_cols % int64_t(w->block_size) != 0 ||
            (w->pack_rows && n_rows % w->pack_rows != 0)) {
            std::fprintf(stderr, "kernels_insn: no %s%s kernel of %s for %lld x %lld\n",
                         type_name.c_str(), packed ? " (packed)" : "", set.name, (long long)n_rows,
                         (long long)n_cols);
            return 1;
        }
        const size_t rb = row_bytes(*w, n_cols);
        std::vector<uint8_t> m(rb * size_t(n_rows));
        cheap_weights(*w, m.data(), m.size());
        if (is_packed(w)) {
            const std::vector<uint8_t> native = m;
            repack_matrix(*w, native.data(), m.data(), n_rows, n_cols);
        }
        const auto act = encode_activations(*w, n_cols, n_tokens);
        const size_t stride = act.size() / size_t(n_tokens);
        std::vector<float> y(size_t(n_rows * n_tokens));
        for (int64_t c = 0; c < calls; ++c) {
            w->matmul(m.data(), rb, n_cols, 0, n_rows, act.data(), stride, n_tokens, y.data(),
                      n_rows);
        }
        float sum = 0;
        for (float v : y) sum += v;
        std::printf("%zu %g\n", m.size(), double(sum));
        return 0;
    }
    std::fprintf(stderr, "kernels_insn: this CPU does not run the kernel set %s\n", argv[1]);
    return 1;
}
