// qwen2moe (shared expert with a sigmoid gate, top-k weights not renormalised) and qwen3moe
// (per-head Q/K RMSNorm, renormalised top-k) on tiny generated models with random F32 weights,
// against a plain double-precision forward pass written here from the architectures' definitions
// (llama.cpp has no reference outputs for these two). Also: the weight bytes a decode step reads
// count only the experts the router chose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "memwall.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace {

using Vec = std::vector<double>;

struct MoeSpec {
    std::string arch;  // qwen2moe or qwen3moe
    int n_embd = 64;
    int n_layer = 2;
    int n_head = 4;
    int n_head_kv = 2;
    int head_dim = 32;  // differs from n_embd / n_head on purpose
    int n_expert = 8;
    int n_expert_used = 2;
    int n_ff = 32;         // per expert
    int n_ff_shared = 48;  // qwen2moe's shared expert
    float rope_base = 10000.0f;
    float eps = 1e-6f;
    uint32_t seed = 1;
};

// A tensor: row-major n_rows x n_cols (per expert for stacks), GGUF ne = {n_cols, n_rows[, n]}.
struct Tensor {
    std::vector<uint64_t> ne;
    std::vector<float> data;
};

class TinyMoe {
  public:
    explicit TinyMoe(const MoeSpec& s) : s_(s), rng_(s.seed) {
        const int n_q = s.n_head * s.head_dim, n_kv = s.n_head_kv * s.head_dim;
        const bool qwen2 = s.arch == "qwen2moe";
        add_normal("token_embd.weight", {uint64_t(s.n_embd), n_vocab()}, 1.0);
        add_uniform("output_norm.weight", {uint64_t(s.n_embd)});
        add_matrix("output.weight", s.n_embd, int(n_vocab()));
        for (int il = 0; il < s.n_layer; ++il) {
            const std::string p = "blk." + std::to_string(il) + ".";
            add_uniform(p + "attn_norm.weight", {uint64_t(s.n_embd)});
            add_matrix(p + "attn_q.weight", s.n_embd, n_q);
            add_matrix(p + "attn_k.weight", s.n_embd, n_kv);
            add_matrix(p + "attn_v.weight", s.n_embd, n_kv);
            add_matrix(p + "attn_output.weight", n_q, s.n_embd);
            if (qwen2) {
                add_normal(p + "attn_q.bias", {uint64_t(n_q)}, 0.1);
                add_normal(p + "attn_k.bias", {uint64_t(n_kv)}, 0.1);
                add_normal(p + "attn_v.bias", {uint64_t(n_kv)}, 0.1);
            } else {
                add_uniform(p + "attn_q_norm.weight", {uint64_t(s.head_dim)});
                add_uniform(p + "attn_k_norm.weight", {uint64_t(s.head_dim)});
            }
            add_uniform(p + "ffn_norm.weight", {uint64_t(s.n_embd)});
            // Router logits of spread ~2: decisive top-k choices (checked in the test).
            add_normal(p + "ffn_gate_inp.weight", {uint64_t(s.n_embd), uint64_t(s.n_expert)},
                       2.0 / std::sqrt(double(s.n_embd)));
            const uint64_t e = uint64_t(s.n_expert), d = uint64_t(s.n_embd), f = uint64_t(s.n_ff);
            add_normal(p + "ffn_gate_exps.weight", {d, f, e}, 1.0 / std::sqrt(double(d)));
            add_normal(p + "ffn_up_exps.weight", {d, f, e}, 1.0 / std::sqrt(double(d)));
            add_normal(p + "ffn_down_exps.weight", {f, d, e}, 1.0 / std::sqrt(double(f)));
            if (qwen2) {
                add_normal(p + "ffn_gate_inp_shexp.weight", {d, 1}, 1.0 / std::sqrt(double(d)));
                add_matrix(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shared);
                add_matrix(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shared);
                add_matrix(p + "ffn_down_shexp.weight", s.n_ff_shared, s.n_embd);
            }
        }
    }

    uint64_t n_vocab() const { return mw::test::tiny_vocab_size(mw::test::TinyVocab::spm); }

    std::vector<uint8_t> gguf_bytes() const {
        mw::gguf::GgufWriter w;
        const std::string a = s_.arch + ".";
        w.set_string("general.architecture", s_.arch);
        w.set_string("general.name", "tiny-" + s_.arch);
        w.set_u32(a + "context_length", 256);
        w.set_u32(a + "embedding_length", uint32_t(s_.n_embd));
        w.set_u32(a + "block_count", uint32_t(s_.n_layer));
        w.set_u32(a + "feed_forward_length", uint32_t(s_.n_ff));
        w.set_u32(a + "attention.head_count", uint32_t(s_.n_head));
        w.set_u32(a + "attention.head_count_kv", uint32_t(s_.n_head_kv));
        w.set_u32(a + "attention.key_length", uint32_t(s_.head_dim));
        w.set_u32(a + "attention.value_length", uint32_t(s_.head_dim));
        w.set_f32(a + "attention.layer_norm_rms_epsilon", s_.eps);
        w.set_f32(a + "rope.freq_base", s_.rope_base);
        w.set_u32(a + "expert_count", uint32_t(s_.n_expert));
        w.set_u32(a + "expert_used_count", uint32_t(s_.n_expert_used));
        w.set_u32(a + "expert_feed_forward_length", uint32_t(s_.n_ff));
        if (s_.arch == "qwen2moe") {
            w.set_u32(a + "expert_shared_feed_forward_length", uint32_t(s_.n_ff_shared));
        }
        mw::test::add_tiny_vocab(w, mw::test::TinyVocab::spm);
        for (const auto& [name, t] : tensors_) {
            const std::vector<float>& data = t.data;
            w.add_tensor(name, mw::GgmlType::F32, t.ne, [&data](uint8_t* dst) {
                std::memcpy(dst, data.data(), data.size() * sizeof(float));
            });
        }
        return w.to_bytes();
    }

    // ---- The reference forward pass, in double ----------------------------------------------

    struct Routing {
        double min_gap = INFINITY;  // smallest k-th minus (k+1)-th router probability
    };

    // Logits of every position of `tokens` (n_tokens x n_vocab).
    std::vector<Vec> forward(const std::vector<int32_t>& tokens, Routing& routing) const {
        const size_t n = tokens.size(), hd = size_t(s_.head_dim), n_head = size_t(s_.n_head);
        const size_t group = n_head / size_t(s_.n_head_kv);
        std::vector<Vec> x;
        for (int32_t tok : tokens) x.push_back(row("token_embd.weight", tok, s_.n_embd));
        for (int il = 0; il < s_.n_layer; ++il) {
            const std::string p = "blk." + std::to_string(il) + ".";
            std::vector<Vec> q, k, v;
            for (size_t t = 0; t < n; ++t) {
                const Vec h = rms_norm(x[t], &at(p + "attn_norm.weight").data);
                q.push_back(matvec(p + "attn_q.weight", h));
                k.push_back(matvec(p + "attn_k.weight", h));
                v.push_back(matvec(p + "attn_v.weight", h));
                if (s_.arch == "qwen2moe") {
                    add(q[t], at(p + "attn_q.bias").data);
                    add(k[t], at(p + "attn_k.bias").data);
                    add(v[t], at(p + "attn_v.bias").data);
                } else {
                    head_norm(q[t], at(p + "attn_q_norm.weight").data);
                    head_norm(k[t], at(p + "attn_k_norm.weight").data);
                }
                rope_neox(q[t], int(t));
                rope_neox(k[t], int(t));
            }
            for (size_t t = 0; t < n; ++t) {
                Vec attn(n_head * hd, 0.0);
                for (size_t h = 0; h < n_head; ++h) {
                    const size_t kvh = h / group;
                    Vec score;
                    for (size_t j = 0; j <= t; ++j) {
                        double dot = 0.0;
                        for (size_t i = 0; i < hd; ++i)
                            dot += q[t][h * hd + i] * k[j][kvh * hd + i];
                        score.push_back(dot / std::sqrt(double(hd)));
                    }
                    softmax(score);
                    for (size_t j = 0; j <= t; ++j) {
                        for (size_t i = 0; i < hd; ++i)
                            attn[h * hd + i] += score[j] * v[j][kvh * hd + i];
                    }
                }
                add(x[t], matvec(p + "attn_output.weight", attn));
            }
            for (size_t t = 0; t < n; ++t) {
                const Vec h = rms_norm(x[t], &at(p + "ffn_norm.weight").data);
                add(x[t], moe(p, h, routing));
            }
        }
        std::vector<Vec> logits;
        for (size_t t = 0; t < n; ++t) {
            logits.push_back(
                matvec("output.weight", rms_norm(x[t], &at("output_norm.weight").data)));
        }
        return logits;
    }

  private:
    const Tensor& at(const std::string& name) const { return tensors_.at(name); }

    void add_normal(const std::string& name, std::vector<uint64_t> ne, double sd) {
        uint64_t n = 1;
        for (uint64_t x : ne) n *= x;
        std::normal_distribution<double> normal(0.0, sd);
        Tensor t{std::move(ne), std::vector<float>(n)};
        for (float& x : t.data) x = float(normal(rng_));
        tensors_[name] = std::move(t);
    }
    void add_uniform(const std::string& name, std::vector<uint64_t> ne) {
        std::uniform_real_distribution<double> u(0.5, 1.5);
        Tensor t{ne, std::vector<float>(ne[0])};
        for (float& x : t.data) x = float(u(rng_));
        tensors_[name] = std::move(t);
    }
    void add_matrix(const std::string& name, int n_cols, int n_rows) {
        add_normal(name, {uint64_t(n_cols), uint64_t(n_rows)}, 1.0 / std::sqrt(double(n_cols)));
    }

    Vec row(const std::string& name, int64_t r, int n_cols, int64_t offset_rows = 0) const {
        const float* p = at(name).data.data() + size_t(offset_rows + r) * size_t(n_cols);
        return Vec(p, p + n_cols);
    }

    // y = W x for a matrix (or expert `e` of a stack).
    Vec matvec(const std::string& name, const Vec& x, int e = 0) const {
        const Tensor& t = at(name);
        const size_t n_cols = t.ne[0], n_rows = t.ne[1];
        const float* w = t.data.data() + size_t(e) * n_rows * n_cols;
        Vec y(n_rows, 0.0);
        for (size_t r = 0; r < n_rows; ++r) {
            for (size_t c = 0; c < n_cols; ++c) y[r] += double(w[r * n_cols + c]) * x[c];
        }
        return y;
    }

    static void add(Vec& x, const Vec& y) {
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    static void add(Vec& x, const std::vector<float>& y) {
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }

    Vec rms_norm(const Vec& x, const std::vector<float>* w) const {
        double ss = 0.0;
        for (double a : x) ss += a * a;
        const double scale = 1.0 / std::sqrt(ss / double(x.size()) + s_.eps);
        Vec y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * (w ? (*w)[i] : 1.0);
        return y;
    }

    void head_norm(Vec& x, const std::vector<float>& w) const {
        const size_t hd = size_t(s_.head_dim);
        for (size_t h = 0; h < x.size() / hd; ++h) {
            const Vec part =
                rms_norm(Vec(x.begin() + long(h * hd), x.begin() + long((h + 1) * hd)), &w);
            std::copy(part.begin(), part.end(), x.begin() + long(h * hd));
        }
    }

    // NeoX RoPE (qwen2/qwen3 families): dims i and i + head_dim/2 rotate together.
    void rope_neox(Vec& x, int pos) const {
        const int hd = s_.head_dim, half = hd / 2;
        for (size_t h = 0; h < x.size() / size_t(hd); ++h) {
            double* v = x.data() + h * size_t(hd);
            for (int i = 0; i < half; ++i) {
                const double theta = pos * std::pow(double(s_.rope_base), -2.0 * i / hd);
                const double a = v[i], b = v[i + half];
                v[i] = a * std::cos(theta) - b * std::sin(theta);
                v[i + half] = a * std::sin(theta) + b * std::cos(theta);
            }
        }
    }

    static void softmax(Vec& x) {
        const double m = *std::max_element(x.begin(), x.end());
        double sum = 0.0;
        for (double& a : x) sum += (a = std::exp(a - m));
        for (double& a : x) a /= sum;
    }

    static double silu(double a) { return a / (1.0 + std::exp(-a)); }

    Vec swiglu_ffn(const std::string& gate, const std::string& up, const std::string& down,
                   const Vec& h, int e) const {
        Vec g = matvec(gate, h, e);
        const Vec u = matvec(up, h, e);
        for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
        return matvec(down, g, e);
    }

    Vec moe(const std::string& p, const Vec& h, Routing& routing) const {
        Vec probs = matvec(p + "ffn_gate_inp.weight", h);
        softmax(probs);
        std::vector<int> order(probs.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)]; });
        const int k = s_.n_expert_used;
        routing.min_gap = std::min(
            routing.min_gap, probs[size_t(order[size_t(k - 1)])] - probs[size_t(order[size_t(k)])]);
        double total = 0.0;
        for (int j = 0; j < k; ++j) total += probs[size_t(order[size_t(j)])];
        const bool renormalise = s_.arch == "qwen3moe";
        Vec out(h.size(), 0.0);
        for (int j = 0; j < k; ++j) {
            const int e = order[size_t(j)];
            const double w = probs[size_t(e)] / (renormalise ? total : 1.0);
            const Vec y = swiglu_ffn(p + "ffn_gate_exps.weight", p + "ffn_up_exps.weight",
                                     p + "ffn_down_exps.weight", h, e);
            for (size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
        }
        if (s_.arch == "qwen2moe") {
            const double gate =
                1.0 / (1.0 + std::exp(-matvec(p + "ffn_gate_inp_shexp.weight", h)[0]));
            const Vec y = swiglu_ffn(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight",
                                     p + "ffn_down_shexp.weight", h, 0);
            for (size_t i = 0; i < out.size(); ++i) out[i] += gate * y[i];
        }
        return out;
    }

    MoeSpec s_;
    std::mt19937_64 rng_;
    std::map<std::string, Tensor> tensors_;
};

double rel_rms(const float* ours, const Vec& ref) {
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        diff += (ours[i] - ref[i]) * (ours[i] - ref[i]);
        norm += ref[i] * ref[i];
    }
    return std::sqrt(diff / norm);
}

struct ModelFile {
    mw_model* model = nullptr;
    ~ModelFile() { mw_model_free(model); }
};

// Prompt in one batch (all logits), then single-token decode steps, against the reference.
void check_against_reference(const MoeSpec& spec) {
    SCOPED_TRACE(spec.arch);
    const TinyMoe tiny(spec);
    const std::string path = mw::test::temp_dir() + "/" + spec.arch + ".gguf";
    {
        const std::vector<uint8_t> bytes = tiny.gguf_bytes();
        FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
        std::fclose(f);
    }
    ModelFile m;
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &m.model), MW_OK) << mw_last_error();
    ASSERT_STREQ(mw_model_arch(m.model), spec.arch.c_str());
    const size_t n_vocab = size_t(mw_model_n_vocab(m.model));

    std::vector<int32_t> tokens;
    std::mt19937 rng(spec.seed + 99);
    for (int i = 0; i < 24; ++i) tokens.push_back(int32_t(rng() % n_vocab));
    TinyMoe::Routing routing;
    const std::vector<Vec> ref = tiny.forward(tokens, routing);
    // The comparison only means something when no expert choice is a near tie.
    ASSERT_GT(routing.min_gap, 1e-4) << "pick another seed: a router near-tie";

    const size_t n_prompt = 16;
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.type_k = MW_TYPE_F32;
    cp.type_v = MW_TYPE_F32;
    mw_context* ctx = nullptr;
    ASSERT_EQ(mw_context_create(m.model, &cp, &ctx), MW_OK) << mw_last_error();
    ASSERT_EQ(mw_decode(ctx, tokens.data(), int32_t(n_prompt), true), MW_OK) << mw_last_error();
    double worst = 0.0;
    for (size_t t = 0; t < n_prompt; ++t) {
        worst = std::max(worst, rel_rms(mw_get_logits(ctx, int32_t(t)), ref[t]));
    }
    for (size_t t = n_prompt; t < tokens.size(); ++t) {
        ASSERT_EQ(mw_decode(ctx, &tokens[t], 1, false), MW_OK) << mw_last_error();
        worst = std::max(worst, rel_rms(mw_get_logits(ctx, -1), ref[t]));
    }
    std::printf("[ %s ] worst rel_rms vs fp64 %.3g, smallest routing gap %.3g\n", spec.arch.c_str(),
                worst, routing.min_gap);
    EXPECT_LT(worst, 1e-5);

    // A single-token decode step reads the dense weights and n_expert_used experts per layer.
    const mw_perf perf = mw_context_perf(ctx);
    ASSERT_EQ(perf.n_decode_tokens, int32_t(tokens.size() - n_prompt));
    EXPECT_EQ(perf.decode_weight_bytes / uint64_t(perf.n_decode_tokens),
              mw_model_bytes_per_token(m.model));
    // Left out of a token's bytes: the experts not chosen, and all but one row of the embedding.
    const uint64_t expert_bytes = uint64_t(3) * spec.n_ff * spec.n_embd * sizeof(float);
    const uint64_t unused =
        uint64_t(spec.n_layer) * (spec.n_expert - spec.n_expert_used) * expert_bytes +
        (n_vocab - 1) * spec.n_embd * sizeof(float);
    EXPECT_EQ(mw_model_weight_bytes(m.model) - mw_model_bytes_per_token(m.model), unused);
    mw_context_free(ctx);
}

TEST(Moe, Qwen2MoeMatchesDoublePrecision) {
    MoeSpec spec;
    spec.arch = "qwen2moe";
    spec.rope_base = 1000000.0f;
    spec.n_expert_used = 3;
    spec.seed = 5;
    check_against_reference(spec);
}

TEST(Moe, Qwen3MoeMatchesDoublePrecision) {
    MoeSpec spec;
    spec.arch = "qwen3moe";
    spec.seed = 7;
    check_against_reference(spec);
}

}  // namespace
