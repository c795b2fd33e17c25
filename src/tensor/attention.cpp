#include "tensor/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "tensor/attention_kernels.h"
#include "tensor/cpu_features.h"

namespace mw {

// ---- Kernel sets --------------------------------------------------------------------------

namespace {

void scores_scalar(const float* q, int n_q, const float* k, int ld_k, int n_k, int head_dim,
                   float* s, int ld_s) {
    for (int i = 0; i < n_q; ++i) {
        const float* qi = q + size_t(i) * head_dim;
        for (int j = 0; j < n_k; ++j) {
            const float* kj = k + size_t(j) * ld_k;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; ++d) dot += qi[d] * kj[d];
            s[size_t(i) * ld_s + j] = dot;
        }
    }
}

void accumulate_scalar(const float* p, int ld_p, int n_q, const float* v, int ld_v, int n_v,
                       int head_dim, float* acc) {
    for (int i = 0; i < n_q; ++i) {
        float* ai = acc + size_t(i) * head_dim;
        for (int j = 0; j < n_v; ++j) {
            const float pij = p[size_t(i) * ld_p + j];
            const float* vj = v + size_t(j) * ld_v;
            for (int d = 0; d < head_dim; ++d) ai[d] += pij * vj[d];
        }
    }
}

float exp_sum_scalar(float* x, int n, float max) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] - max));
    return sum;
}

void scale_scalar(float a, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] *= a;
}

// The specification: S = decay S; delta = beta (v - S^T k); S += k delta^T; out = S^T q scale.
// The decay is applied on the fly: the first pass only reads the state.
void delta_step_scalar(float* s, const float* q, const float* k, const float* v, float decay,
                       float beta, float scale, float* out, float* tmp, int d) {
    for (int j = 0; j < d; ++j) tmp[j] = 0.0f;
    for (int i = 0; i < d; ++i) {
        const float* row = s + size_t(i) * d;
        for (int j = 0; j < d; ++j) tmp[j] += row[j] * k[i];
    }
    for (int j = 0; j < d; ++j) tmp[j] = beta * (v[j] - decay * tmp[j]);
    for (int j = 0; j < d; ++j) out[j] = 0.0f;
    for (int i = 0; i < d; ++i) {
        float* row = s + size_t(i) * d;
        const float qi = q[i] * scale;
        for (int j = 0; j < d; ++j) {
            row[j] = decay * row[j] + k[i] * tmp[j];
            out[j] += row[j] * qi;
        }
    }
}

constexpr AttentionKernels kScalar = {
    "scalar", scores_scalar, accumulate_scalar, exp_sum_scalar, scale_scalar,
    nullptr,  nullptr,       nullptr,           nullptr,        delta_step_scalar};

}  // namespace

#if defined(__x86_64__)
// Defined in x86/attention_avx2.cpp / x86/attention_avx512.cpp (compiled with their ISA flags).
const AttentionKernels& attention_kernels_avx2_set();
const AttentionKernels& attention_kernels_avx512_set();
#endif

#if defined(__aarch64__)
// Defined in arm/attention_neon_dotprod.cpp.
const AttentionKernels& attention_kernels_neon_set();
#endif

const AttentionKernels* attention_kernels_scalar() {
    return &kScalar;
}

const AttentionKernels* attention_kernels_avx2() {
#if defined(__x86_64__)
    const CpuFeatures& cpu = cpu_features();
    if (cpu.avx2 && cpu.fma && cpu.f16c) return &attention_kernels_avx2_set();
#endif
    return nullptr;
}

const AttentionKernels* attention_kernels_avx512() {
#if defined(__x86_64__)
    const CpuFeatures& cpu = cpu_features();
    if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq && cpu.avx2 && cpu.fma &&
        cpu.f16c) {
        return &attention_kernels_avx512_set();
    }
#endif
    return nullptr;
}

const AttentionKernels* attention_kernels_neon() {
#if defined(__aarch64__)
    if (cpu_features().dotprod) return &attention_kernels_neon_set();
#endif
    return nullptr;
}

const AttentionKernels& attention_kernels() {
    static const AttentionKernels* chosen = [] {
        const char* env = std::getenv("MEMWALL_ISA");
        auto is = [env](const char* name) { return env && !std::strcmp(env, name); };
        // MEMWALL_ISA caps the kernel set; attention follows: a set below AVX-512 gets the AVX2
        // loops, and ARM's plain "neon" (what an ARMv8.0 core runs) the scalar ones.
        if (is("scalar") || is("neon")) return attention_kernels_scalar();
        if (!is("avx2") && !is("avxvnni")) {
            if (const AttentionKernels* k = attention_kernels_avx512()) return k;
        }
        if (const AttentionKernels* k = attention_kernels_avx2()) return k;
        if (const AttentionKernels* k = attention_kernels_neon()) return k;
        return attention_kernels_scalar();
    }();
    return *chosen;
}

ToFloatFn attention_row_decoder(const AttentionKernels& kernels, const TypeTraits& traits) {
    ToFloatFn fn = nullptr;
    switch (traits.type) {
        case GgmlType::F16:
            fn = kernels.f16_to_float;
            break;
        case GgmlType::BF16:
            fn = kernels.bf16_to_float;
            break;
        case GgmlType::Q8_0:
            fn = kernels.q8_0_to_float;
            break;
        case GgmlType::Q4_0:
            fn = kernels.q4_0_to_float;
            break;
        default:
            break;
    }
    return fn ? fn : traits.to_float;
}

// ---- Planning -----------------------------------------------------------------------------

namespace {

constexpr int kBlock = 32;         // KV positions per block: a block of decoded keys stays in L1
constexpr int kTileQueries = 16;   // queries that share each decoded block (tokens x GQA group)
constexpr int kMinSplitLen = 256;  // positions below which splitting a decode step doesn't pay

struct Layout {
    int group;        // query heads per KV head
    int tile_tokens;  // tokens per work item
    int max_queries;  // tile_tokens * group
    size_t queries, kblock, vblock, scores, acc, maxes, sums, per_thread;
};

Layout layout_of(const AttentionShape& s) {
    Layout l{};
    l.group = s.n_head / s.n_head_kv;
    l.tile_tokens = int(std::clamp<uint32_t>(uint32_t(std::max(1, kTileQueries / l.group)), 1,
                                             std::max<uint32_t>(1, s.max_batch)));
    l.max_queries = l.tile_tokens * l.group;
    size_t off = 0;
    auto take = [&](size_t n) {
        const size_t at = off;
        off += (n + 15) / 16 * 16;  // every part starts at a multiple of 16 floats
        return at;
    };
    l.queries = take(size_t(l.max_queries) * s.head_dim_k);
    l.kblock = take(size_t(kBlock) * s.head_dim_k);
    l.vblock = take(size_t(kBlock) * s.head_dim_v);
    l.scores = take(size_t(l.max_queries) * kBlock);
    l.acc = take(size_t(l.max_queries) * s.head_dim_v);
    l.maxes = take(size_t(l.max_queries));
    l.sums = take(size_t(l.max_queries));
    l.per_thread = off;
    return l;
}

// Per-thread floats for every KV head count a batch of this shape may have (the layout depends on
// the GQA group).
size_t per_thread_floats(const AttentionShape& s) {
    size_t most = layout_of(s).per_thread;
    for (int kv = s.min_head_kv > 0 ? s.min_head_kv : s.n_head_kv; kv < s.n_head_kv; ++kv) {
        if (s.n_head % kv != 0) continue;
        AttentionShape other = s;
        other.n_head_kv = kv;
        most = std::max(most, layout_of(other).per_thread);
    }
    return most;
}

// Partial states of split decoding: per sequence, query head and split: max, sum, accumulator.
size_t partial_floats(const AttentionShape& s) {
    return size_t(std::max<uint32_t>(1, s.max_seqs)) * size_t(s.n_head) *
           size_t(std::max(1, s.n_threads)) * size_t(s.head_dim_v + 2);
}

}  // namespace

uint64_t AttentionScratch::planned_bytes(const AttentionShape& s) {
    return (per_thread_floats(s) * size_t(std::max(1, s.n_threads)) + partial_floats(s)) *
               sizeof(float) +
           (size_t(std::max<uint32_t>(1, s.max_seqs)) + 1) * sizeof(uint32_t);
}

AttentionScratch::AttentionScratch(const AttentionShape& s) : shape_(s) {
    per_thread_ = per_thread_floats(s);
    partials_ = partial_floats(s);
    buffer_.assign(per_thread_ * size_t(std::max(1, s.n_threads)) + partials_, 0.0f);
    tiles_.assign(size_t(std::max<uint32_t>(1, s.max_seqs)) + 1, 0);
}

// ---- The computation ----------------------------------------------------------------------

namespace {

// One work item: the queries of one KV head for a tile of one sequence's tokens, over its
// positions [kv_begin, kv_end) (each query also stops at its causal limit).
struct Item {
    const AttentionSeq* seq;
    int kv_head;
    uint32_t t0, t1;  // batch tokens [t0, t1)
    uint32_t pos_t0;  // position of token t0
    uint32_t kv_begin, kv_end;
};

// A block of key or value rows as floats: an F32 cache is read in place, any other type is
// decoded into `buffer` (once for every query of the item).
struct FloatRows {
    const float* data;
    int ld;
};

class Worker {
  public:
    Worker(const AttentionBatch& b, const Layout& l, float* ws, const AttentionKernels& kern,
           ToFloatFn k_decode, ToFloatFn v_decode)
        : b_(b),
          l_(l),
          kern_(kern),
          queries_(ws + l.queries),
          kblock_(ws + l.kblock),
          vblock_(ws + l.vblock),
          scores_(ws + l.scores),
          acc_(ws + l.acc),
          maxes_(ws + l.maxes),
          sums_(ws + l.sums),
          k_decode_(k_decode),
          v_decode_(v_decode) {}

    // Runs the item, leaving each query's unnormalised state in acc_/maxes_/sums_.
    int run(const Item& it) {
        const int group = l_.group;
        const int hd_k = b_.head_dim_k, hd_v = b_.head_dim_v;
        const int n_q = int(it.t1 - it.t0) * group;
        // The item's queries, pre-scaled, side by side.
        for (int i = 0; i < n_q; ++i) {
            const float* q = query(it, i);
            for (int d = 0; d < hd_k; ++d) queries_[size_t(i) * hd_k + d] = q[d] * b_.scale;
        }
        std::fill(maxes_, maxes_ + n_q, -INFINITY);
        std::fill(sums_, sums_ + n_q, 0.0f);
        std::fill(acc_, acc_ + size_t(n_q) * hd_v, 0.0f);

        for (uint32_t j0 = it.kv_begin; j0 < it.kv_end; j0 += kBlock) {
            const int nb = int(std::min<uint32_t>(kBlock, it.kv_end - j0));
            // Positions of this block each query sees: queries are ordered by token, so the
            // counts never decrease with the query index.
            auto seen = [&](int i) {
                const int64_t limit = int64_t(it.pos_t0) + i / group + 1;
                return int(std::clamp<int64_t>(limit - j0, 0, nb));
            };
            const int most = seen(n_q - 1);
            if (most == 0) break;
            int first = 0;  // the first query that sees any position of the block
            while (seen(first) == 0) ++first;
            const int n_seeing = n_q - first;

            // Scores of the block, the running maximum and sum, and the rescaling of what was
            // accumulated under a smaller maximum. Positions a query does not see weigh 0.
            const FloatRows keys = rows(it.seq->k, it.kv_head, j0, most, hd_k, k_decode_, kblock_);
            float* s = scores_ + size_t(first) * kBlock;
            kern_.scores(queries_ + size_t(first) * hd_k, n_seeing, keys.data, keys.ld, most, hd_k,
                         s, kBlock);
            for (int i = first; i < n_q; ++i, s += kBlock) {
                const int c = seen(i);
                // A sliding window hides the positions before the query's first one.
                const int lo =
                    b_.window ? int(std::clamp<int64_t>(window_start(it, i) - int64_t(j0), 0, c))
                              : 0;
                if (lo == c) {
                    std::fill(s, s + most, 0.0f);
                    continue;
                }
                if (b_.softcap > 0.0f) {
                    const float cap = b_.softcap, inv = 1.0f / b_.softcap;
                    for (int j = lo; j < c; ++j) s[j] = cap * std::tanh(s[j] * inv);
                }
                const float block_max = *std::max_element(s + lo, s + c);
                if (block_max > maxes_[i]) {
                    if (sums_[i] > 0.0f) {
                        const float f = std::exp(maxes_[i] - block_max);
                        sums_[i] *= f;
                        kern_.scale(f, acc_ + size_t(i) * hd_v, hd_v);
                    }
                    maxes_[i] = block_max;
                }
                sums_[i] += kern_.exp_sum(s + lo, c - lo, maxes_[i]);
                std::fill(s, s + lo, 0.0f);
                std::fill(s + c, s + most, 0.0f);
            }

            // The values, weighted.
            const FloatRows values =
                rows(it.seq->v, it.kv_head, j0, most, hd_v, v_decode_, vblock_);
            kern_.accumulate(scores_ + size_t(first) * kBlock, kBlock, n_seeing, values.data,
                             values.ld, most, hd_v, acc_ + size_t(first) * hd_v);
        }
        return n_q;
    }

    // out = acc / sum for each query of the item (the sum with the head's sink, if any).
    void finish(const Item& it, int n_q) const {
        for (int i = 0; i < n_q; ++i) {
            float* out = output(it, i);
            const float* acc = acc_ + size_t(i) * b_.head_dim_v;
            float sum = sums_[i];
            if (b_.sinks) sum += std::exp(b_.sinks[head(it, i)] - maxes_[i]);
            const float inv = 1.0f / sum;
            for (int d = 0; d < b_.head_dim_v; ++d) out[d] = acc[d] * inv;
        }
    }

    // Copies query i's state to `dst` (max, sum, accumulator).
    void save(int i, float* dst) const {
        dst[0] = maxes_[i];
        dst[1] = sums_[i];
        std::copy(acc_ + size_t(i) * b_.head_dim_v, acc_ + size_t(i + 1) * b_.head_dim_v, dst + 2);
    }

  private:
    // Rows [j0, j0 + n) of one head; a block never straddles two pages (kKvPageSize is a
    // multiple of kBlock and blocks start at multiples of kBlock).
    static FloatRows rows(const KvRows& kv, int head, uint32_t j0, int n, int head_dim,
                          ToFloatFn decode, float* buffer) {
        const uint8_t* first = kv.row(head, j0);
        if (kv.traits->type == GgmlType::F32 && kv.stride % sizeof(float) == 0) {
            return {reinterpret_cast<const float*>(first), int(kv.stride / sizeof(float))};
        }
        for (int j = 0; j < n; ++j)
            decode(first + size_t(j) * kv.stride, buffer + size_t(j) * head_dim, head_dim);
        return {buffer, head_dim};
    }

    // The first position query i sees under the sliding window.
    int64_t window_start(const Item& it, int i) const {
        return int64_t(it.pos_t0) + i / l_.group + 1 - int64_t(b_.window);
    }
    int head(const Item& it, int i) const { return it.kv_head * l_.group + i % l_.group; }
    uint32_t token(const Item& it, int i) const { return it.t0 + uint32_t(i / l_.group); }
    const float* query(const Item& it, int i) const {
        return b_.q + (size_t(token(it, i)) * b_.n_head + head(it, i)) * b_.head_dim_k;
    }
    float* output(const Item& it, int i) const {
        return b_.out + (size_t(token(it, i)) * b_.n_head + head(it, i)) * b_.head_dim_v;
    }

    const AttentionBatch& b_;
    const Layout& l_;
    const AttentionKernels& kern_;
    float* queries_;
    float* kblock_;
    float* vblock_;
    float* scores_;
    float* acc_;
    float* maxes_;
    float* sums_;
    ToFloatFn k_decode_;
    ToFloatFn v_decode_;
};

// Combines the split states of one query head into its output (the online-softmax merge), with
// the head's sink logit in the denominator when `sink` is not null.
void merge_splits(const float* parts, int n_split, int hd_v, const float* sink, float* out) {
    float m = -INFINITY;
    for (int s = 0; s < n_split; ++s) {
        const float* p = parts + size_t(s) * (hd_v + 2);
        if (p[1] > 0.0f) m = std::max(m, p[0]);
    }
    float sum = 0.0f;
    std::fill(out, out + hd_v, 0.0f);
    for (int s = 0; s < n_split; ++s) {
        const float* p = parts + size_t(s) * (hd_v + 2);
        if (!(p[1] > 0.0f)) continue;
        const float w = std::exp(p[0] - m);
        sum += p[1] * w;
        for (int d = 0; d < hd_v; ++d) out[d] += w * p[2 + d];
    }
    if (sink) sum += std::exp(*sink - m);
    const float inv = 1.0f / sum;
    for (int d = 0; d < hd_v; ++d) out[d] *= inv;
}

}  // namespace

void attention(Parallel& par, const AttentionBatch& b, AttentionScratch& scratch) {
    const AttentionShape& shape = scratch.shape_;
    AttentionShape this_batch = shape;  // the GQA group of this batch's layer
    this_batch.n_head_kv = b.n_head_kv;
    const Layout l = layout_of(this_batch);
    const AttentionKernels& kern = attention_kernels();
    if (b.n_seqs == 0) return;
    // The cache types are the same for every sequence of a layer.
    const ToFloatFn k_decode = attention_row_decoder(kern, *b.seqs[0].k.traits);
    const ToFloatFn v_decode = attention_row_decoder(kern, *b.seqs[0].v.traits);

    // Work items: (sequence, KV head, tile of its tokens). When every sequence decodes a single
    // token and there are fewer of those items than threads, long contexts are also split into
    // ranges of positions so that every thread has work (flash decoding).
    int64_t work = 0;
    uint32_t n_kv_max = 0;
    bool all_single = true;
    uint32_t* tiles = scratch.tiles_.data();  // items before each sequence, per split
    tiles[0] = 0;
    for (uint32_t s = 0; s < b.n_seqs; ++s) {
        const AttentionSeq& q = b.seqs[s];
        const uint32_t n_kv = q.pos0 + q.n_tokens;
        n_kv_max = std::max(n_kv_max, n_kv);
        all_single = all_single && q.n_tokens == 1;
        work += int64_t(q.n_tokens) * b.n_head * n_kv * (b.head_dim_k + b.head_dim_v);
        const uint32_t n_tiles =
            (q.n_tokens + uint32_t(l.tile_tokens) - 1) / uint32_t(l.tile_tokens);
        tiles[s + 1] = tiles[s] + n_tiles * uint32_t(b.n_head_kv);
    }
    const int n_threads = work < kMinParallelWork ? 1 : std::min(par.n_threads(), shape.n_threads);
    int n_split = 1;
    uint32_t split_len = n_kv_max;
    const int64_t n_base_items = tiles[b.n_seqs];
    if (all_single && n_base_items < n_threads) {
        n_split = std::min<int>(int((n_threads + n_base_items - 1) / n_base_items),
                                int(std::max<uint32_t>(1, n_kv_max / kMinSplitLen)));
        n_split = std::max(1, std::min(n_split, std::max(1, shape.n_threads)));
        split_len = (n_kv_max + uint32_t(n_split) - 1) / uint32_t(n_split);
        split_len = (split_len + kBlock - 1) / kBlock * kBlock;
        n_split = int((n_kv_max + split_len - 1) / split_len);
    }
    const int64_t n_items = n_base_items * n_split;
    float* partials =
        scratch.buffer_.data() + scratch.per_thread_ * size_t(std::max(1, shape.n_threads));
    const size_t part_floats = size_t(b.head_dim_v + 2);

    auto run_items = [&](int ith, int nth) {
        Worker w(b, l, scratch.buffer_.data() + size_t(ith) * scratch.per_thread_, kern, k_decode,
                 v_decode);
        const Range r = split_range(n_items, ith, nth);
        uint32_t s = 0;  // the sequence of the current item (items are in sequence order)
        for (int64_t idx = r.begin; idx < r.end; ++idx) {
            const int split = int(idx % n_split);
            const uint32_t base = uint32_t(idx / n_split);
            while (base >= tiles[s + 1]) ++s;
            const AttentionSeq& q = b.seqs[s];
            const uint32_t local = base - tiles[s];
            Item it{};
            it.seq = &q;
            it.kv_head = int(local % uint32_t(b.n_head_kv));
            const uint32_t tile = local / uint32_t(b.n_head_kv);
            const uint32_t t0 = tile * uint32_t(l.tile_tokens);
            const uint32_t t1 = std::min(q.n_tokens, t0 + uint32_t(l.tile_tokens));
            it.t0 = q.first_token + t0;
            it.t1 = q.first_token + t1;
            it.pos_t0 = q.pos0 + t0;
            it.kv_begin = uint32_t(split) * split_len;
            it.kv_end = std::min(q.pos0 + t1, it.kv_begin + split_len);
            if (b.window > 0 && it.pos_t0 + 1 > b.window) {
                // Blocks wholly before the tile's first window are skipped.
                const uint32_t first_seen = it.pos_t0 + 1 - b.window;
                it.kv_begin = std::max(it.kv_begin, first_seen / kBlock * kBlock);
            }
            if (it.kv_begin >= it.kv_end) it.kv_end = it.kv_begin;  // a split past a short context
            const int n_q = w.run(it);
            if (n_split == 1) {
                w.finish(it, n_q);
            } else {
                for (int i = 0; i < n_q; ++i) {
                    const int h = it.kv_head * l.group + i;
                    w.save(i,
                           partials + ((size_t(s) * b.n_head + h) * n_split + split) * part_floats);
                }
            }
        }
    };
    if (n_threads == 1) {
        run_items(0, 1);
    } else {
        par.for_each_thread([&](int ith, int nth) {
            const int used = std::min(nth, n_threads);  // never more than the scratch has room for
            if (ith < used) run_items(ith, used);
        });
    }
    if (n_split > 1) {
        for (uint32_t s = 0; s < b.n_seqs; ++s) {
            for (int h = 0; h < b.n_head; ++h) {
                merge_splits(partials + (size_t(s) * b.n_head + h) * n_split * part_floats, n_split,
                             b.head_dim_v, b.sinks ? b.sinks + h : nullptr,
                             b.out + (size_t(b.seqs[s].first_token) * b.n_head + h) * b.head_dim_v);
            }
        }
    }
}

}  // namespace mw
