// The KV cache fitted to the architecture: sliding-window layers in a ring of window + batch
// positions (checked against llama.cpp's logits with a ring that wraps many times), latent
// attention caching one row per position, quantized caches, and the refusals of both.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "memwall.h"
#include "model/kv_cache.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

struct Case {
    json c;
    std::vector<float> logits;
};

Case load_case(const std::string& id) {
    const std::string dir = mw::test::shared_dir() + "/reference/cases/";
    Case k;
    k.c = json::parse(mw::test::read_text(dir + id + ".json"));
    const std::vector<uint8_t> bytes =
        mw::test::read_file(dir + k.c.at("logits_file").get<std::string>());
    k.logits.resize(bytes.size() / 4);
    std::memcpy(k.logits.data(), bytes.data(), k.logits.size() * 4);
    return k;
}

double rel_rms(const float* a, const float* b, size_t n) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; ++i) {
        d += double(a[i] - b[i]) * double(a[i] - b[i]);
        r += double(b[i]) * double(b[i]);
    }
    return std::sqrt(d / r);
}

struct Loaded {
    mw_model* model = nullptr;
    mw_context* ctx = nullptr;
    ~Loaded() {
        mw_context_free(ctx);
        mw_model_free(model);
    }
};

// Decodes the case's prompt in batches of n_batch and checks every position's logits against
// llama.cpp's within the case's tolerance (or `tol_override`), then the greedy prefix the case
// requires (F16 caches only: llama.cpp ran with one); returns the context's KV bytes.
uint64_t check_case(const std::string& id, uint32_t n_batch, mw_type kv, double tol_override = 0.0,
                    uint32_t n_ctx_extra = 56) {
    const Case k = load_case(id);
    Loaded r;
    const std::string path = mw::test::shared_path(k.c.at("model").get<std::string>());
    EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &r.model), MW_OK) << mw_last_error();
    if (!r.model) return 0;
    const auto tokens = k.c.at("prompt_tokens").get<std::vector<int32_t>>();
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = uint32_t(tokens.size()) + n_ctx_extra;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = kv;
    EXPECT_EQ(mw_context_create(r.model, &cp, &r.ctx), MW_OK) << mw_last_error();
    if (!r.ctx) return 0;
    const size_t n_vocab = size_t(mw_model_n_vocab(r.model));
    const double tol =
        tol_override > 0.0 ? tol_override : k.c.at("tolerance").at("rel_rms").get<double>();
    // Chunk by chunk: each chunk's logits are checked before the next overwrites them.
    for (size_t t0 = 0; t0 < tokens.size(); t0 += n_batch) {
        const int32_t n = int32_t(std::min<size_t>(n_batch, tokens.size() - t0));
        EXPECT_EQ(mw_decode(r.ctx, tokens.data() + t0, n, true), MW_OK) << mw_last_error();
        for (int32_t i = 0; i < n; ++i) {
            const float* ours = mw_get_logits(r.ctx, i);
            EXPECT_LE(rel_rms(ours, k.logits.data() + (t0 + i) * n_vocab, n_vocab), tol)
                << id << " position " << t0 + i;
        }
    }
    // Greedy decoding through the ring: the first greedy_check_prefix tokens must match.
    const auto greedy = k.c.at("greedy_tokens").get<std::vector<int32_t>>();
    const size_t must =
        kv == MW_TYPE_F16 ? k.c.at("tolerance").at("greedy_check_prefix").get<size_t>() : 0;
    const float* last = mw_get_logits(r.ctx, -1);
    int32_t next = int32_t(std::max_element(last, last + n_vocab) - last);
    for (size_t step = 0; step < must; ++step) {
        EXPECT_EQ(next, greedy[step]) << id << " greedy step " << step;
        EXPECT_EQ(mw_decode(r.ctx, &next, 1, false), MW_OK);
        last = mw_get_logits(r.ctx, -1);
        next = int32_t(std::max_element(last, last + n_vocab) - last);
    }
    return mw_context_perf(r.ctx).kv_bytes;
}

TEST(ArchKvCache, SlidingWindowRingMatchesLlamaCpp) {
    // gemma2/3-tiny: window 32, every other layer sliding. With batches of 32 the ring holds 64
    // positions, so the 267-token prompt wraps it four times.
    for (const char* id : {"gemma2-tiny-F16.wap", "gemma3-tiny-F16.wap"}) {
        const uint64_t ring = check_case(id, 32, MW_TYPE_F16);
        const uint64_t full = check_case(id, 1024, MW_TYPE_F16);  // no ring: batch >= n_ctx
        // One global layer of 11 pages and one sliding layer's ring of 2, against 11 + 11.
        EXPECT_EQ(ring * 22, full * 13) << id;
    }
}

TEST(ArchKvCache, QuantizedCachesWork) {
    // Q8_0 keys and values: gemma3's heads of 128 (in the ring), deepseek2's latent rows of 288.
    // llama.cpp published no Q8_0-cache logits; the bound is a third of the tolerance of the
    // same models with Q8_0 weights (0.14 and 0.18), which quantize far more.
    check_case("gemma3-tiny-F16.wap", 64, MW_TYPE_Q8_0, 0.045);
    check_case("deepseek2-tiny-F16.once", 64, MW_TYPE_Q8_0, 0.06);
}

TEST(ArchKvCache, LatentAttentionCachesOneRowPerPosition) {
    Loaded r;
    const std::string path = mw::test::shared_path("reference/models/deepseek2-tiny-F16.gguf");
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &r.model), MW_OK) << mw_last_error();
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 256;
    cp.type_k = cp.type_v = MW_TYPE_F16;
    ASSERT_EQ(mw_context_create(r.model, &cp, &r.ctx), MW_OK) << mw_last_error();
    // 2 layers x (256 latent + 32 rope) F16 per position: no value rows.
    EXPECT_EQ(mw_context_perf(r.ctx).kv_bytes, 256u * 2 * (256 + 32) * 2);
    mw_context_free(r.ctx);
    r.ctx = nullptr;
    // Keys and values are one row: different types are refused, naming the reason.
    cp.type_v = MW_TYPE_Q8_0;
    EXPECT_EQ(mw_context_create(r.model, &cp, &r.ctx), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("latent"), std::string::npos) << mw_last_error();
}

mw::HParams window_hparams() {
    mw::HParams hp;
    hp.arch = "gemma2";
    hp.n_layer = 2;
    hp.n_head = hp.n_head_kv = 1;
    hp.head_dim_k = hp.head_dim_v = 32;
    hp.n_rot = 32;
    hp.n_swa = 32;
    hp.swa_pattern = 2;
    return hp;
}

TEST(ArchKvCache, RingRefusesToGoBackPastWhatItHolds) {
    const mw::HParams hp = window_hparams();
    // Batches of 32: a ring of 64 positions per sequence for layer 0; layer 1 is paged.
    mw::KvCache kv(hp, 1024, 2, mw::GgmlType::F16, mw::GgmlType::F16, 32);
    EXPECT_EQ(kv.ring_positions(), 64u);
    EXPECT_LT(kv.bytes(),
              mw::KvCache::bytes_needed(hp, 1024, mw::GgmlType::F16, mw::GgmlType::F16, 2, 1024));
    EXPECT_EQ(kv.bytes(),
              mw::KvCache::bytes_needed(hp, 1024, mw::GgmlType::F16, mw::GgmlType::F16, 2, 32));
    for (uint32_t i = 0; i < 10; ++i) {
        kv.reserve(0, 32);
        kv.set_len(0, (i + 1) * 32);
    }
    // 320 held: the ring has 256..319; position 288's window (257..288) is there, 200's is not.
    EXPECT_EQ(kv.keepable(0, 300), 300u);
    EXPECT_EQ(kv.keepable(0, 288), 288u);
    EXPECT_EQ(kv.keepable(0, 200), 0u);
    EXPECT_EQ(kv.keepable(0, 0), 0u);
    try {
        kv.truncate(0, 200);
        ADD_FAILURE() << "truncating past the ring was accepted";
    } catch (const mw::Error& e) {
        EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
    }
    EXPECT_THROW(kv.copy(0, 1, 100), mw::Error);
    kv.copy(0, 1, 300);
    EXPECT_EQ(kv.seq_len(1), 300u);
    kv.truncate(0, 0);  // always possible
    EXPECT_EQ(kv.seq_len(0), 0u);
}

}  // namespace
