// Qwen3.5's MTP (next-n) head as a drafter (runtime/mtp.h), on the tiny reference models with an
// MTP block added (random weights: the attention layer's weights copied as the block, random
// eh_proj and norms): greedy text with --spec-type mtp equals the text without speculation for
// several draft lengths, dense and MoE, F16 and Q4_K_M, in a context that fills; the head's draft
// logits match a float64 forward pass written here from the block's definition (llama.cpp's
// graph_mtp); files without MTP layers, or with incomplete ones, are clear errors.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "memwall.h"
#include "model/kv_cache.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "runtime/mtp.h"
#include "runtime/speculative.h"
#include "support/gguf_edit.h"
#include "support/model_inputs.h"
#include "support/spec_generate.h"
#include "support/test_server.h"
#include "support/test_support.h"
#include "tensor/types.h"

namespace mw {
namespace {

// A copy of `base` (a qwen35 / qwen35moe tiny reference model: 4 layers, the fourth full
// attention) with one MTP block as blk.4: the attention layer's tensors, and a random eh_proj
// (F32, std `gain` / sqrt(2 n_embd)), enorm and hnorm (1 + 0.1 N(0, 1)); with `head_norm`, its
// own shared_head_norm. An `echo` head instead passes hnorm(h) through (eh_proj the identity on
// it, the block's attention output and FFN down projections zero, every norm 1): its logits are
// the target's at the position before, so it drafts the pending token again, and the drafts are
// accepted wherever the target's greedy text repeats a token.
std::string mtp_file(const std::string& base, const std::string& name, bool head_norm,
                     float gain = 1.0f, bool echo = false) {
    static std::vector<std::vector<uint8_t>> keep;  // the source bytes the copies point into
    keep.push_back(test::read_file(test::shared_path(base)));
    const gguf::GgufFile f = gguf::GgufFile::parse(keep.back(), base);
    const std::string arch(f.get_string("general.architecture").value_or("qwen35"));
    const uint64_t n_embd = f.tensors().front().ne[0];
    return test::edited_gguf_copy(test::shared_path(base), name, [&](gguf::GgufWriter& w) {
        w.set_u32(arch + ".block_count", 5);
        w.set_u32(arch + ".nextn_predict_layers", 1);
        w.remove(arch + ".attention.recurrent_layers");  // the interval pattern: 3 of 4
        for (const gguf::TensorInfo& t : f.tensors()) {
            if (t.name.rfind("blk.3.", 0) != 0) continue;
            const std::string role(t.name.substr(6));
            if (echo && (role.rfind("attn_output", 0) == 0 || role.rfind("ffn_down", 0) == 0)) {
                const size_t bytes = t.n_bytes;
                w.add_tensor("blk.4." + role, GgmlType(t.type),
                             std::vector<uint64_t>(t.ne, t.ne + std::max(1u, t.n_dims)),
                             [bytes](uint8_t* dst) { std::memset(dst, 0, bytes); });
                continue;
            }
            w.add_tensor("blk.4." + std::string(t.name.substr(6)), GgmlType(t.type),
                         std::vector<uint64_t>(t.ne, t.ne + std::max(1u, t.n_dims)),
                         std::span<const uint8_t>(t.data, t.n_bytes));
        }
        std::mt19937 rng(42);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        auto random = [&](std::vector<uint64_t> ne, float mean, float std) {
            uint64_t n = 1;
            for (uint64_t d : ne) n *= d;
            auto data = std::make_shared<std::vector<float>>(n);
            for (float& x : *data) x = mean + std * nd(rng);
            return [data](uint8_t* dst) {
                std::memcpy(dst, data->data(), data->size() * sizeof(float));
            };
        };
        if (echo) {
            w.add_tensor("blk.4.nextn.eh_proj.weight", GgmlType::F32, {2 * n_embd, n_embd},
                         [n_embd](uint8_t* dst) {
                             std::vector<float> m(2 * n_embd * n_embd, 0.0f);
                             for (uint64_t r = 0; r < n_embd; ++r)
                                 m[r * 2 * n_embd + n_embd + r] = 1;
                             std::memcpy(dst, m.data(), m.size() * sizeof(float));
                         });
            for (const char* norm : {"enorm", "hnorm", "shared_head_norm"}) {
                w.add_tensor(fmt::format("blk.4.nextn.{}.weight", norm), GgmlType::F32, {n_embd},
                             random({n_embd}, 1.0f, 0.0f));
            }
            return;
        }
        w.add_tensor("blk.4.nextn.eh_proj.weight", GgmlType::F32, {2 * n_embd, n_embd},
                     random({2 * n_embd, n_embd}, 0.0f, gain / std::sqrt(2.0f * n_embd)));
        w.add_tensor("blk.4.nextn.enorm.weight", GgmlType::F32, {n_embd},
                     random({n_embd}, 1.0f, 0.1f));
        w.add_tensor("blk.4.nextn.hnorm.weight", GgmlType::F32, {n_embd},
                     random({n_embd}, 1.0f, 0.1f));
        if (head_norm) {
            w.add_tensor("blk.4.nextn.shared_head_norm.weight", GgmlType::F32, {n_embd},
                         random({n_embd}, 1.0f, 0.1f));
        }
    });
}

ContextParams params(uint32_t n_ctx) {
    ContextParams p;
    p.n_ctx = n_ctx;
    p.n_batch = 512;
    p.n_threads = 2;
    p.type_k = p.type_v = GgmlType::F32;
    return p;
}

int32_t argmax(const float* l, uint32_t n) {
    return int32_t(std::max_element(l, l + n) - l);
}

struct GenRun {
    std::vector<int32_t> tokens;
    SpecStats stats;
    size_t n_drafts = 0;       // drafts proposed
    size_t first_pending = 0;  // of them, those whose first token was the pending one
};

// Counts the drafts whose first token repeats the pending token (what the echo head drafts).
class Recording final : public Drafter {
  public:
    Recording(std::unique_ptr<Drafter> inner, GenRun& run) : inner_(std::move(inner)), run_(run) {}
    const char* name() const override { return "mtp"; }
    void propose(std::span<const int32_t> context, uint32_t n_max, Draft& out) override {
        inner_->propose(context, n_max, out);
        if (out.tokens.empty()) return;
        ++run_.n_drafts;
        if (out.tokens[0] == context.back()) ++run_.first_pending;
    }

  private:
    std::unique_ptr<Drafter> inner_;
    GenRun& run_;
};

// Greedy: n tokens after the prompt, stopping at a full context (no shift over a recurrent
// state). k > 0: with the MTP head drafting up to k (started before the prompt is read, or
// after it with `late`).
GenRun generate(const LoadedModel& m, const std::vector<int32_t>& prompt, uint32_t n,
                uint32_t n_ctx, uint32_t k, bool late = false) {
    Context ctx(m, params(n_ctx));
    std::shared_ptr<MtpDrafter> head;
    if (k > 0 && !late) head = std::make_shared<MtpDrafter>(ctx, 0.0f);
    ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
    if (k > 0 && late) head = std::make_shared<MtpDrafter>(ctx, 0.0f);
    SamplerParams sp;
    sp.temperature = 0.0f;
    Sampler sampler(sp);
    for (int32_t t : prompt) sampler.accept(t);
    GenRun r;
    std::unique_ptr<Speculator> spec;
    if (head) {
        SpecParams p;
        p.draft_max = k;
        spec = std::make_unique<Speculator>(
            ctx, 0, std::make_unique<Recording>(make_batch_member_drafter(head, 0), r), p);
    }
    r.tokens = test::generate_tokens(ctx, sampler, spec.get(), n, false);
    if (spec) r.stats = spec->stats();
    return r;
}

struct MtpCase {
    const char* base;
    bool head_norm;
    bool echo = false;  // the echo head (mtp_file): some drafts are accepted
};

class MtpGreedy : public testing::TestWithParam<MtpCase> {};

// Greedy text with the MTP head drafting equals plain greedy text for several draft lengths, in
// a context of 80 that fills (the prompt's 24 tokens, then the drafts cut to the room left).
TEST_P(MtpGreedy, DraftsGiveThePlainGreedyText) {
    const MtpCase& c = GetParam();
    std::string name = std::string(c.echo ? "mtp-echo-" : "mtp-") + c.base;
    std::replace(name.begin(), name.end(), '/', '-');
    const auto m =
        LoadedModel::load(mtp_file(c.base, name, c.head_norm, 1.0f, c.echo), LoadOptions{});
    ASSERT_EQ(m->model.nextn.size(), 1u) << m->model.nextn_error;
    EXPECT_NE(m->desc.find("1 MTP layer"), std::string::npos) << m->desc;
    const auto prompt = test::book_tokens(*m, 3000, 24, 1200, 1);
    const uint32_t n_ctx = 80;
    const GenRun plain = generate(*m, prompt, 100, n_ctx, 0);
    ASSERT_EQ(plain.tokens.size(), n_ctx - prompt.size() + 1) << "the context did not fill";
#ifdef MW_TEST_SANITIZED
    // Under the sanitizers (several times slower) the shortest and the longest drafts only: k = 8
    // is the one cut to the room left.
    const std::vector<uint32_t> draft_lengths = {1, 8};
#else
    const std::vector<uint32_t> draft_lengths = {1, 2, 4, 8};
#endif
    for (uint32_t k : draft_lengths) {
        SCOPED_TRACE("k=" + std::to_string(k));
        const GenRun r = generate(*m, prompt, 100, n_ctx, k);
        EXPECT_EQ(r.tokens, plain.tokens);
        EXPECT_GT(r.stats.passes, 0);
        EXPECT_EQ(r.stats.generated, int64_t(plain.tokens.size()) - 1);
        EXPECT_LE(r.stats.accepted, r.stats.drafted);
        if (c.echo) {
            // The echo head's first draft is the target's choice at the position before the
            // pending token, i.e. the pending token itself: only when the head pairs it with
            // the target's hidden state of the last accepted position (a near tie may round
            // the other way in the head's products).
            EXPECT_GE(double(r.first_pending), 0.9 * double(r.n_drafts))
                << r.first_pending << " of " << r.n_drafts;
            // And it is accepted wherever the target's text repeats a token.
            size_t repeats = 0;
            for (size_t i = 1; i < plain.tokens.size(); ++i)
                repeats += plain.tokens[i] == plain.tokens[i - 1];
            if (repeats > 0) {
                EXPECT_GT(r.stats.accepted, 0);
            }
        }
        std::printf(
            "[ mtp ] %s%s k=%u: %lld passes + %lld plain steps, %lld drafted, %lld accepted, "
            "first draft = pending in %zu of %zu\n",
            c.base, c.echo ? " (echo)" : "", k, static_cast<long long>(r.stats.passes),
            static_cast<long long>(r.stats.plain_steps), static_cast<long long>(r.stats.drafted),
            static_cast<long long>(r.stats.accepted), r.first_pending, r.n_drafts);
    }
    // Started after the prompt was read: the head fills the prompt's positions with h = 0;
    // worse drafts, the same text.
    const GenRun late = generate(*m, prompt, 100, n_ctx, 3, true);
    EXPECT_EQ(late.tokens, plain.tokens);
}

INSTANTIATE_TEST_SUITE_P(
    Models, MtpGreedy,
    testing::Values(MtpCase{"reference/models/qwen35-tiny-F16.gguf", false},
                    MtpCase{"reference/models/qwen35-tiny-Q4_K_M.gguf", true},
                    MtpCase{"reference/models/qwen35moe-tiny-F16.gguf", true},
                    MtpCase{"reference/models/qwen35moe-tiny-Q4_K_M.gguf", false},
                    MtpCase{"reference/models/qwen35-tiny-F16.gguf", true, true},
                    MtpCase{"reference/models/qwen35moe-tiny-Q4_K_M.gguf", true, true}),
    [](const testing::TestParamInfo<MtpCase>& p) {
        std::string name = p.param.base;
        name = name.substr(name.rfind('/') + 1);
        name = name.substr(0, name.find(".gguf"));
        std::replace(name.begin(), name.end(), '-', '_');
        return p.param.echo ? name + "_echo" : name;
    });

// Keeps the target's final hidden state of every position of sequence 0.
class HiddenCapture final : public DecodeObserver {
  public:
    explicit HiddenCapture(uint32_t n_embd) : n_embd_(n_embd) {}
    void on_chunk(const ForwardBatch& b, const float* hidden) override {
        for (uint32_t r = 0; r < b.n_seqs; ++r) {
            const ForwardSeq& s = b.seqs[r];
            rows.resize(size_t(s.pos0 + s.n_tokens) * n_embd_);
            std::copy(hidden + size_t(s.first_token) * n_embd_,
                      hidden + size_t(s.first_token + s.n_tokens) * n_embd_,
                      rows.begin() + long(s.pos0) * n_embd_);
        }
    }
    void on_shift(uint32_t, uint32_t, uint32_t) override {}
    std::vector<float> rows;

  private:
    uint32_t n_embd_;
};

// The file's tensors in float64, from the bytes (not the loaded model, whose matrices repacking
// may have rewritten).
struct Weights {
    std::vector<uint8_t> bytes;
    gguf::GgufFile f;
    explicit Weights(const std::string& path)
        : bytes(test::read_file(path)), f(gguf::GgufFile::parse(bytes, path)) {}
    std::vector<double> get(const std::string& name) const {
        const gguf::TensorInfo* t = f.find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        if (!t) return {};
        const TypeTraits* tr = type_traits(t->type);
        std::vector<float> tmp(t->n_elements);
        tr->to_float(t->data, tmp.data(), int64_t(t->n_elements));
        return {tmp.begin(), tmp.end()};
    }
};

std::vector<double> rms(const std::vector<double>& x, size_t off, size_t n,
                        const std::vector<double>& w, double eps) {
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    const double s = 1.0 / std::sqrt(ss / double(n) + eps);
    std::vector<double> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = x[off + i] * s * w[i];
    return y;
}

std::vector<double> matvec(const std::vector<double>& w, const std::vector<double>& x,
                           size_t rows) {
    const size_t cols = x.size();
    std::vector<double> y(rows, 0.0);
    for (size_t r = 0; r < rows; ++r) {
        double s = 0;
        for (size_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
        y[r] = s;
    }
    return y;
}

// The MTP head in float64 (llama.cpp's graph_mtp for qwen35): per position, its token and the
// hidden state that goes with it; returns each position's logits and head-norm output.
struct Ref64 {
    const Weights& w;
    const HParams& hp;
    bool own_head_norm;
    std::vector<std::vector<double>> keys, values;  // per position: n_kv x head_dim

    std::pair<std::vector<double>, std::vector<double>> step(int32_t token,
                                                             const std::vector<double>& h,
                                                             uint32_t pos) {
        const size_t E = hp.n_embd, hd = hp.head_dim_k, nh = hp.n_head, nkv = hp.n_head_kv;
        const double eps = hp.norm_eps;
        const auto embd = w.get("token_embd.weight");
        std::vector<double> e(embd.begin() + long(size_t(token) * E),
                              embd.begin() + long(size_t(token + 1) * E));
        std::vector<double> cat = rms(e, 0, E, w.get("blk.4.nextn.enorm.weight"), eps);
        const auto hn = rms(h, 0, E, w.get("blk.4.nextn.hnorm.weight"), eps);
        cat.insert(cat.end(), hn.begin(), hn.end());
        std::vector<double> x = matvec(w.get("blk.4.nextn.eh_proj.weight"), cat, E);
        const auto a = rms(x, 0, E, w.get("blk.4.attn_norm.weight"), eps);
        const auto qf = matvec(w.get("blk.4.attn_q.weight"), a, 2 * nh * hd);
        const auto kf = matvec(w.get("blk.4.attn_k.weight"), a, nkv * hd);
        const auto vf = matvec(w.get("blk.4.attn_v.weight"), a, nkv * hd);
        const auto qn = w.get("blk.4.attn_q_norm.weight"), kn = w.get("blk.4.attn_k_norm.weight");
        auto rope = [&](std::vector<double>& v) {  // NEOX halves over the first n_rot dims
            const size_t half = hp.n_rot / 2;
            for (size_t i = 0; i < half; ++i) {
                const double theta =
                    double(pos) * std::pow(double(hp.rope_freq_base), -2.0 * double(i) / hp.n_rot);
                const double c = std::cos(theta), s = std::sin(theta);
                const double x0 = v[i], x1 = v[i + half];
                v[i] = x0 * c - x1 * s;
                v[i + half] = x0 * s + x1 * c;
            }
        };
        std::vector<double> k_all, v_all(vf);
        for (size_t g = 0; g < nkv; ++g) {
            auto k = rms(kf, g * hd, hd, kn, eps);
            rope(k);
            k_all.insert(k_all.end(), k.begin(), k.end());
        }
        keys.push_back(k_all);
        values.push_back(v_all);
        std::vector<double> attn(nh * hd, 0.0);
        for (size_t hh = 0; hh < nh; ++hh) {
            auto q = rms(qf, hh * 2 * hd, hd, qn, eps);
            rope(q);
            const size_t g = hh / (nh / nkv);
            std::vector<double> sc(keys.size());
            double mx = -1e300;
            for (size_t p = 0; p < keys.size(); ++p) {
                double s = 0;
                for (size_t i = 0; i < hd; ++i) s += q[i] * keys[p][g * hd + i];
                sc[p] = s / std::sqrt(double(hd));
                mx = std::max(mx, sc[p]);
            }
            double sum = 0;
            for (double& s : sc) sum += (s = std::exp(s - mx));
            for (size_t p = 0; p < keys.size(); ++p) {
                for (size_t i = 0; i < hd; ++i)
                    attn[hh * hd + i] += sc[p] / sum * values[p][g * hd + i];
            }
            for (size_t i = 0; i < hd; ++i) {
                const double gate = qf[hh * 2 * hd + hd + i];
                attn[hh * hd + i] *= 1.0 / (1.0 + std::exp(-gate));
            }
        }
        const auto o = matvec(w.get("blk.4.attn_output.weight"), attn, E);
        for (size_t i = 0; i < E; ++i) x[i] += o[i];
        const auto f = rms(x, 0, E, w.get("blk.4.post_attention_norm.weight"), eps);
        const size_t nff = hp.n_ff;
        const auto gt = matvec(w.get("blk.4.ffn_gate.weight"), f, nff);
        const auto up = matvec(w.get("blk.4.ffn_up.weight"), f, nff);
        std::vector<double> act(nff);
        for (size_t i = 0; i < nff; ++i) act[i] = gt[i] / (1.0 + std::exp(-gt[i])) * up[i];
        const auto dn = matvec(w.get("blk.4.ffn_down.weight"), act, E);
        for (size_t i = 0; i < E; ++i) x[i] += dn[i];
        const auto g =
            rms(x, 0, E,
                w.get(own_head_norm ? "blk.4.nextn.shared_head_norm.weight" : "output_norm.weight"),
                eps);
        const bool tied = w.f.find_tensor("output.weight") == nullptr;
        auto logits = matvec(w.get(tied ? "token_embd.weight" : "output.weight"), g, hp.n_vocab);
        return {logits, g};
    }
};

// The head's draft logits (three chained drafts after a 12-token prompt) against the float64
// forward pass above, given the same target hidden states: relative RMS error below 1e-2 (F16
// block weights, whose products round the activations to F16; F32 KV cache) and the same
// argmax wherever the reference's top-2 margin is clear.
TEST(MtpReference, DraftLogitsMatchAFloat64Forward) {
    for (bool head_norm : {false, true}) {
        SCOPED_TRACE(head_norm ? "own shared_head_norm" : "the model's output_norm");
        const std::string path = mtp_file("reference/models/qwen35-tiny-F16.gguf",
                                          head_norm ? "mtp-ref-hn" : "mtp-ref", head_norm, 2.0f);
        const auto m = LoadedModel::load(path, LoadOptions{});
        ASSERT_EQ(m->model.nextn.size(), 1u) << m->model.nextn_error;
        const HParams& hp = m->model.hp;
        const uint32_t E = hp.n_embd, V = hp.n_vocab;
        const auto prompt = test::book_tokens(*m, 500, 12, 600, 1);
        const uint32_t n = uint32_t(prompt.size());

        Context capture_ctx(*m, params(64));
        HiddenCapture capture(E);
        capture_ctx.set_decode_observer(&capture);
        capture_ctx.decode(prompt.data(), n, false);
        const int32_t pending = argmax(capture_ctx.logits(-1), V);
        capture_ctx.set_decode_observer(nullptr);

        Context ctx(*m, params(64));
        MtpDrafter head(ctx, 0.0f);
        head.keep_draft_logits(true);
        ctx.decode(prompt.data(), n, false);
        EXPECT_EQ(head.seq_len(0), n);
        std::vector<int32_t> context = prompt;
        context.push_back(pending);
        Draft draft;
        const BatchDrafter::Request req{0, context, 3, &draft};
        head.propose({&req, 1});
        ASSERT_EQ(draft.tokens.size(), 3u);
        ASSERT_EQ(head.draft_logits().size(), size_t(3) * V);

        Weights w(path);
        Ref64 ref{w, hp, head_norm, {}, {}};
        auto h_of = [&](int64_t p) {
            if (p < 0) return std::vector<double>(E, 0.0);
            return std::vector<double>(capture.rows.begin() + long(p * E),
                                       capture.rows.begin() + long((p + 1) * E));
        };
        for (uint32_t p = 0; p < n; ++p) ref.step(prompt[p], h_of(int64_t(p) - 1), p);
        std::vector<double> h = h_of(int64_t(n) - 1);
        int32_t token = pending;
        for (uint32_t i = 0; i < 3; ++i) {
            SCOPED_TRACE("draft " + std::to_string(i));
            auto [logits, g] = ref.step(token, h, n + i);
            const float* got = head.draft_logits().data() + size_t(i) * V;
            double num = 0, den = 0;
            for (uint32_t v = 0; v < V; ++v) {
                num += (got[v] - logits[v]) * (got[v] - logits[v]);
                den += logits[v] * logits[v];
            }
            const double rel = std::sqrt(num / den);
            EXPECT_LT(rel, 1e-2);
            std::printf("[ mtp ] draft %u: rel_rms %.2e against fp64\n", i, rel);
            std::vector<double> sorted(logits);
            std::sort(sorted.rbegin(), sorted.rend());
            const int32_t top =
                int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            if (sorted[0] - sorted[1] > 0.05 * (std::abs(sorted[0]) + 1)) {
                EXPECT_EQ(draft.tokens[i], top);
            }
            // The chain goes on from the head's own draft and output, as llama.cpp's does.
            token = draft.tokens[i];
            h = g;
        }
    }
}

// The head follows a verification pass that rejected drafts: rolled back with the target (its
// cache is then as long as the target's), and the hidden state it pairs with the next pending
// token is the target's at the last accepted position, not the draft's.
TEST(MtpReference, HeadFollowsRollbacksAndChunks) {
    const std::string path = mtp_file("reference/models/qwen35-tiny-F16.gguf", "mtp-roll", false);
    const auto m = LoadedModel::load(path, LoadOptions{});
    ASSERT_EQ(m->model.nextn.size(), 1u);
    // A prompt longer than a batch of 16 (the head follows chunk by chunk).
    ContextParams p = params(96);
    p.n_batch = 16;
    Context ctx(*m, p);
    MtpDrafter head(ctx, 0.0f);
    const auto prompt = test::book_tokens(*m, 0, 40, 800, 1);
    ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
    EXPECT_EQ(head.seq_len(0), prompt.size());
    SamplerParams sp;
    sp.temperature = 0.0f;
    Sampler sampler(sp);
    SpecParams spp;
    spp.draft_max = 6;
    Speculator spec(
        ctx, 0,
        make_batch_member_drafter(std::shared_ptr<BatchDrafter>(&head, [](BatchDrafter*) {}), 0),
        spp);
    int32_t pending = argmax(ctx.logits(-1), m->model.hp.n_vocab);
    std::vector<int32_t> out;
    for (int i = 0; i < 10; ++i) {
        out.clear();
        spec.step(pending, sampler, 100, out);
        pending = out.back();
        // After the verification pass the head holds every position the pass decoded; its
        // next draft drops the rejected ones.
        EXPECT_GE(head.seq_len(0), ctx.seq_len(0));
    }
    EXPECT_GT(spec.stats().drafted, 0);
}

// --draft-p-min: a head whose top probability is below it drafts nothing (1: never sure
// enough); outside 0..1 it is refused.
TEST(MtpReference, PMinStopsTheDraft) {
    const std::string path = mtp_file("reference/models/qwen35-tiny-F16.gguf", "mtp-pmin", false);
    const auto m = LoadedModel::load(path, LoadOptions{});
    Context ctx(*m, params(64));
    EXPECT_THROW(MtpDrafter(ctx, 2.0f), Error);
    const auto prompt = test::book_tokens(*m, 0, 8, 400, 1);
    for (float p_min : {0.0f, 1.0f}) {
        SCOPED_TRACE(p_min);
        MtpDrafter head(ctx, p_min);
        ctx.seq_truncate(0, 0);
        ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
        std::vector<int32_t> context = prompt;
        context.push_back(argmax(ctx.logits(-1), m->model.hp.n_vocab));
        Draft draft;
        const BatchDrafter::Request req{0, context, 4, &draft};
        head.propose({&req, 1});
        EXPECT_EQ(draft.tokens.size(), p_min > 0.0f ? 0u : 4u);
    }
}

TEST(MtpErrors, FilesWithoutOrWithIncompleteMtpLayersAreClearErrors) {
    const auto plain = test::load_shared("reference/models/qwen35-tiny-F16.gguf");
    {
        Context ctx(*plain, params(64));
        try {
            MtpDrafter head(ctx, 0.0f);
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("has no MTP layers"), std::string::npos)
                << e.what();
        }
    }
    // block_count 5 and nextn_predict_layers 1 but only eh_proj: the model runs (its four
    // layers), the head is refused naming what is missing.
    const std::string path = test::edited_gguf_copy(
        test::shared_path("reference/models/qwen35-tiny-F16.gguf"), "mtp-incomplete",
        [](gguf::GgufWriter& w) {
            w.set_u32("qwen35.block_count", 5);
            w.set_u32("qwen35.nextn_predict_layers", 1);
            w.remove("qwen35.attention.recurrent_layers");
            w.add_tensor("blk.4.nextn.eh_proj.weight", GgmlType::F32, {512, 256},
                         [](uint8_t* dst) { std::memset(dst, 0, 512 * 256 * 4); });
        });
    const auto m = LoadedModel::load(path, LoadOptions{});
    EXPECT_EQ(m->model.hp.n_layer, 4u);
    EXPECT_TRUE(m->model.nextn.empty());
    EXPECT_NE(m->desc.find("1 MTP layer (incomplete: not runnable)"), std::string::npos) << m->desc;
    Context ctx(*m, params(64));
    try {
        MtpDrafter head(ctx, 0.0f);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("cannot be run"), std::string::npos) << what;
        EXPECT_NE(what.find("blk.4.attn_q.weight"), std::string::npos) << what;
    }
}

// The plan with --spec-type mtp adds the head's KV cache (one attention layer at the context's
// size) to the target's, its scratch and a row of logits per drafted token to the compute, and
// the saved recurrent state speculation keeps; what the drafter allocates stays within it.
TEST(MtpPlan, CountsTheHeadsCacheScratchAndLogits) {
    const std::string path = mtp_file("reference/models/qwen35-tiny-F16.gguf", "mtp-plan", false);
    RunSettings run;
    run.n_ctx = 512;
    run.n_threads = 2;
    const FitCheck plain = check_fit(path, run);
    run.mtp = true;
    run.draft_max = 4;
    const FitCheck mtp = check_fit(path, run);
    const auto m = LoadedModel::load(path, LoadOptions{});
    const Model head = nextn_model(m->model);
    EXPECT_EQ(mtp.memory.kv_bytes - plain.memory.kv_bytes,
              KvCache::bytes_needed(head.hp, 512, GgmlType::F16, GgmlType::F16));
    EXPECT_GT(mtp.memory.compute_bytes,
              plain.memory.compute_bytes + 4ull * m->model.hp.n_vocab * sizeof(float));
    EXPECT_GT(mtp.memory.state_bytes, plain.memory.state_bytes);
    EXPECT_EQ(mtp.memory.weights_bytes, plain.memory.weights_bytes);  // in the file already
    ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    Context ctx(*m, cp);
    const MtpDrafter d(ctx, 0.0f);
    EXPECT_LE(d.bytes(), MtpDrafter::planned_bytes(m->model, 512, 512, 1, GgmlType::F16,
                                                   GgmlType::F16, ctx.max_threads()));
}

// Four server slots drafting with the MTP head at once (one head pass per drafted position for
// all of them, beside prompt chunks) give each request the greedy text a server without
// speculation gives; the responses count the drafts. The echo head makes some acceptable.
TEST(MtpServer, FourSlotsGiveThePlainGreedyTexts) {
    const std::string path =
        mtp_file("reference/models/qwen35-tiny-F16.gguf", "mtp-server", true, 1.0f, /*echo=*/true);
    const std::vector<std::string> prompts = {
        "Once upon a time", "The little dog ran to the park and saw a big red ball. The dog",
        "Lily wanted to", "One day, a big bird flew over the house. One day, a big"};
    auto complete = [](const test::Server& s, const std::string& prompt) {
        int status = 0;
        const nlohmann::json r = test::post(
            s, "/v1/completions",
            nlohmann::json{{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}}.dump(),
            &status);
        EXPECT_EQ(status, 200) << r.dump();
        return r;
    };
    std::vector<std::string> plain;
    {
        test::Server s(mw_server_default_params(), 4, 512, path);
        for (const std::string& p : prompts)
            plain.push_back(complete(s, p)["choices"][0]["text"].get<std::string>());
    }
    for (int k : {2, 5}) {
        SCOPED_TRACE("k=" + std::to_string(k));
        mw_spec_params spec = mw_spec_default_params();
        spec.type = MW_SPEC_MTP;
        spec.draft_max = k;
        mw_server_params sp = mw_server_default_params();
        sp.speculative = &spec;
        test::Server s(sp, 4, 512, path);
        ASSERT_NE(s.server, nullptr) << mw_last_error();
        std::vector<std::future<nlohmann::json>> together;
        for (const std::string& p : prompts) {
            together.push_back(std::async(std::launch::async, [&, p] { return complete(s, p); }));
        }
        int64_t drafted = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            const nlohmann::json r = together[i].get();
            EXPECT_EQ(r["choices"][0]["text"].get<std::string>(), plain[i]) << "prompt " << i;
            drafted += r["timings"].value("draft_n", int64_t(0));
        }
        EXPECT_GT(drafted, 0);
        EXPECT_EQ(mw_server_spec_stats(s.server).n_drafted, drafted);
    }
}

// The command line: --spec-type mtp runs (greedy text as without it, acceptance reported with
// --verbose); without MTP layers it is refused before loading.
TEST(MtpCli, RunWithSpecTypeMtp) {
    const std::string path = mtp_file("reference/models/qwen35-tiny-F16.gguf", "mtp-cli", false);
    const std::string base = test::cli_path() + " run -m " + path +
                             " -p 'Once upon a time' -n 24 " + "--temp 0 -c 128 -t 2";
    const test::CommandResult plain = test::run_command(base);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const test::CommandResult mtp =
        test::run_command(base + " --spec-type mtp --draft-max 3 --verbose");
    ASSERT_EQ(mtp.exit_code, 0) << mtp.err;
    EXPECT_EQ(mtp.out, plain.out);
    EXPECT_NE(mtp.err.find("speculative: MTP head of"), std::string::npos) << mtp.err;
    EXPECT_NE(mtp.err.find("accepted"), std::string::npos) << mtp.err;
    const test::CommandResult without = test::run_command(
        test::cli_path() + " run -m " + test::shared_path("reference/models/qwen35-tiny-F16.gguf") +
        " --spec-type mtp -p hi");
    EXPECT_EQ(without.exit_code, 2);
    EXPECT_NE(without.err.find("has no MTP layers"), std::string::npos) << without.err;
}

}  // namespace
}  // namespace mw
