// Plans under a memory budget (plan/budget_plan.h): the runtime's arithmetic (the same refusals,
// the same expert cache or layer stream as a loaded model gets), the hit rate, bytes read and
// tok/s of the documented model against hand-computed values, and the CLI's JSON and text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/gguf.h"
#include "plan/budget_plan.h"
#include "plan/model_spec.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/expert_cache.h"
#include "runtime/layer_stream.h"
#include "runtime/loaded_model.h"
#include "runtime/memory_budget.h"
#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

constexpr uint64_t MiB = uint64_t(1) << 20;

// A small Mixtral-shaped model in F16 (no quantization rules in the way of hand arithmetic):
// 4 layers of 8 experts of 256 x 512, 2 used per token.
ModelSpec synthetic_moe(uint32_t n_expert = 8) {
    ModelSpec s;
    s.id = s.name = n_expert ? "synthetic-moe" : "synthetic-dense";
    s.arch = "llama";
    s.n_vocab = 1000;
    s.n_ctx_train = 2048;
    s.n_embd = 256;
    s.n_layer = 4;
    s.n_head = 4;
    s.n_head_kv = 4;
    s.n_ff = 512;
    s.n_expert = n_expert;
    s.n_expert_used = n_expert ? 2 : 0;
    s.n_ff_expert = n_expert ? 512 : 0;
    return s;
}

struct Planned {
    std::vector<uint8_t> header;
    gguf::GgufFile file;
    ModelFacts facts;
};

std::unique_ptr<Planned> plan_spec(const ModelSpec& spec) {
    auto p = std::make_unique<Planned>();
    p->header = spec_gguf_header(spec, QuantRecipe::F16);
    p->file = gguf::GgufFile::parse(p->header, spec.name, {.header_only = true});
    p->facts = model_facts(p->file, "F16");
    return p;
}

DeviceProfile test_device() {
    DeviceProfile d = explicit_device(uint64_t(16) << 30, 50e9);
    d.decode_efficiency = 0.5;
    d.storage_random = {{256 << 10, 1e9}, {4 * MiB, 3e9}};
    d.storage_assumed = false;
    d.storage_source = "given by the test";
    return d;
}

const RunSettings kRun{.n_ctx = 256, .n_batch = 64, .n_threads = 2};

TEST(PlanBudget, MoeRowMatchesHandArithmetic) {
    const auto p = plan_spec(synthetic_moe());
    const DeviceProfile dev = test_device();
    // By hand: each expert matrix 256 x 512 F16 = 256 KiB; a slot holds three, each rounded up
    // with a 4 KiB block to spare (260 KiB); 4 layers x 8 experts, 4 x 2 routed per token.
    const uint64_t matrix = 256 * 512 * 2;
    const uint64_t slot = 3 * (matrix + 4096);
    const uint64_t experts = 4 * 8 * 3 * matrix;
    const MemoryPlan memory = plan_memory(p->facts, kRun);
    const uint64_t resident = p->facts.file_bytes - experts;
    const uint64_t base = resident + memory.kv_bytes + memory.compute_bytes;
    const uint64_t budget = budget_leaving(base + 10 * slot, p->facts.model.hp.n_vocab) +
                            slot / 2;  // room for 10 slots

    const BudgetRow r = plan_budget("m", "F16", p->facts, dev, kRun, budget, 0);
    ASSERT_TRUE(r.fits) << r.refusal;
    EXPECT_TRUE(r.moe);
    EXPECT_EQ(r.expert_bytes, experts);
    EXPECT_EQ(r.resident_bytes, resident);
    EXPECT_EQ(r.slot_bytes, slot);
    EXPECT_EQ(r.expert_read_bytes, 3 * matrix);
    EXPECT_EQ(r.experts_total, 32u);
    EXPECT_EQ(r.experts_per_token, 8u);
    EXPECT_EQ(r.cache_slots, 10u);
    EXPECT_DOUBLE_EQ(r.hit_rate, 10.0 / 32);
    EXPECT_DOUBLE_EQ(r.misses_per_token, 8 * (1 - 10.0 / 32));  // 5.5
    EXPECT_DOUBLE_EQ(r.storage_bytes_per_token, 5.5 * double(3 * matrix));
    // One pread per matrix (256 KiB): the device's 256 KiB rate, not its 4 MiB one.
    EXPECT_DOUBLE_EQ(r.storage_bytes_per_s, 1e9);
    const double ram_s = double(p->facts.bytes_per_token) / (50e9 * 0.5);
    EXPECT_NEAR(r.decode_tok_s, 1 / (ram_s + 5.5 * double(3 * matrix) / 1e9), 1e-9);
    EXPECT_NEAR(r.in_ram_decode_tok_s, 1 / ram_s, 1e-9);
    EXPECT_LT(r.decode_tok_s, r.in_ram_decode_tok_s);
    // The skewed end: 2.5 of each layer's 8 experts held, popularity ~ rank^-1.7.
    double all_uses = 0;
    for (int k = 1; k <= 8; ++k) all_uses += std::pow(k, -kRouterSkew);
    const double skewed =
        (1 + std::pow(2, -kRouterSkew) + 0.5 * std::pow(3, -kRouterSkew)) / all_uses;
    EXPECT_NEAR(r.hit_rate_skewed, skewed, 1e-12);
    EXPECT_NEAR(r.decode_tok_s_skewed, 1 / (ram_s + 8 * (1 - skewed) * double(3 * matrix) / 1e9),
                1e-9);
    EXPECT_GT(r.decode_tok_s_skewed, r.decode_tok_s);
    EXPECT_LT(r.decode_tok_s_skewed, r.in_ram_decode_tok_s);

    // Room for every expert: all hits, nothing read, the in-RAM speed.
    const BudgetRow all =
        plan_budget("m", "F16", p->facts, dev, kRun,
                    budget_leaving(base + 40 * slot, p->facts.model.hp.n_vocab), 0);
    ASSERT_TRUE(all.fits) << all.refusal;
    EXPECT_EQ(all.cache_slots, 32u);
    EXPECT_DOUBLE_EQ(all.hit_rate, 1.0);
    EXPECT_DOUBLE_EQ(all.storage_bytes_per_token, 0.0);
    EXPECT_DOUBLE_EQ(all.decode_tok_s, all.in_ram_decode_tok_s);
}

TEST(PlanBudget, RefusalsNameTheNumbersAsTheRuntimesDo) {
    const auto p = plan_spec(synthetic_moe());
    const DeviceProfile dev = test_device();
    const BudgetRow ample = plan_budget("m", "F16", p->facts, dev, kRun, uint64_t(1) << 30, 0);
    ASSERT_TRUE(ample.fits);
    // One byte short of the dense part, the process and the 2 experts a layer needs.
    const uint64_t load_min =
        budget_leaving(ample.resident_bytes + 2 * ample.slot_bytes, p->facts.model.hp.n_vocab);
    const BudgetRow load = plan_budget("m", "F16", p->facts, dev, kRun, load_min - 1, 0);
    EXPECT_FALSE(load.fits);
    EXPECT_EQ(load.decode_tok_s, 0.0);
    EXPECT_NE(load.refusal.find("too small"), std::string::npos) << load.refusal;
    EXPECT_NE(
        load.refusal.find(fmt::format("takes {:.1f} MiB", double(ample.resident_bytes) / MiB)),
        std::string::npos)
        << load.refusal;
    EXPECT_NE(load.refusal.find(fmt::format("at least {:.1f} MiB", double(load_min) / MiB)),
              std::string::npos)
        << load.refusal;
    // Loads, but the context's KV cache and scratch do not fit beside it.
    const BudgetRow ctx =
        plan_budget("m", "F16", p->facts, dev, kRun, load_min + ample.kv_bytes, 0);
    EXPECT_FALSE(ctx.fits);
    EXPECT_NE(ctx.refusal.find("too small for this context"), std::string::npos) << ctx.refusal;
    EXPECT_NE(ctx.refusal.find(fmt::format("KV cache {:.1f} MiB", double(ample.kv_bytes) / MiB)),
              std::string::npos)
        << ctx.refusal;
    // The same text the runtime's own check gives for those figures.
    BudgetFigures f{.budget = load_min - 1,
                    .resident = ample.resident_bytes,
                    .slot_bytes = ample.slot_bytes,
                    .experts_per_token = 2,
                    .experts_total = 32,
                    .n_vocab = p->facts.model.hp.n_vocab};
    EXPECT_EQ(load.refusal, load_refusal("m", f));
}

// A dense model below its file streams its layers: 4 layers of 4 x (256 x 256) + 3 x (256 x 512)
// F16 matrices, 1,310,720 bytes each; a slot holds one with a 4 KiB block to spare per matrix.
TEST(PlanBudget, DenseRowMatchesHandArithmetic) {
    const auto p = plan_spec(synthetic_moe(0));
    const DeviceProfile dev = test_device();
    const BudgetRow ample = plan_budget("d", "F16", p->facts, dev, kRun, uint64_t(1) << 30, 0);
    ASSERT_TRUE(ample.fits) << ample.refusal;
    EXPECT_FALSE(ample.moe);
    EXPECT_TRUE(ample.streams_layers);
    constexpr uint64_t kLayer = 4 * 256 * 256 * 2 + 3 * 256 * 512 * 2;
    EXPECT_EQ(kLayer, 1310720u);
    EXPECT_EQ(ample.slot_bytes, kLayer + 7 * 4096);
    EXPECT_EQ(ample.resident_bytes, p->facts.file_bytes - 4 * kLayer);
    EXPECT_EQ(ample.n_layer, 4u);
    EXPECT_EQ(ample.cache_slots, 4u);  // every layer fits: nothing read after the first token
    EXPECT_EQ(ample.storage_bytes_per_token, 0.0);
    EXPECT_DOUBLE_EQ(ample.decode_tok_s, ample.in_ram_decode_tok_s);

    // Three slots: two take turns, one layer stays; three layers read per token.
    const uint64_t budget = budget_leaving(ample.resident_bytes + ample.kv_bytes +
                                               ample.scratch_bytes + 3 * ample.slot_bytes,
                                           p->facts.model.hp.n_vocab) +
                            100;
    const BudgetRow r = plan_budget("d", "F16", p->facts, dev, kRun, budget, 0);
    ASSERT_TRUE(r.fits) << r.refusal;
    EXPECT_EQ(r.cache_slots, 3u);
    EXPECT_EQ(r.layers_pinned, 1u);
    EXPECT_DOUBLE_EQ(r.storage_bytes_per_token, 3.0 * kLayer);
    EXPECT_DOUBLE_EQ(r.hit_rate, 0.25);
    // Layers are read in order: the device's rate in order (the explicit device's assumed UFS
    // 4.0: 3.5 GB/s), or without one its random rate at the mean matrix's size (4 layers' bytes
    // over their 28 matrices).
    EXPECT_DOUBLE_EQ(r.storage_bytes_per_s, 3.5e9);
    DeviceProfile random_only = dev;
    random_only.storage_seq_bytes_per_s = 0;
    EXPECT_DOUBLE_EQ(
        plan_budget("d", "F16", p->facts, random_only, kRun, budget, 0).storage_bytes_per_s,
        dev.storage_random_bytes_per_s(4 * kLayer / 28));
    // Each layer is read while the one before computes: the slower of the two.
    const double seconds = std::max(double(r.ram_bytes_per_token) / (50e9 * 0.5),
                                    3.0 * kLayer / r.storage_bytes_per_s);
    EXPECT_NEAR(r.decode_tok_s, 1 / seconds, 1e-9 / seconds);
    EXPECT_LT(r.decode_tok_s, r.in_ram_decode_tok_s);

    // Below the resident part and one layer: refused, with the runtime's words.
    const BudgetRow small =
        plan_budget("d", "F16", p->facts, dev, kRun,
                    budget_leaving(ample.resident_bytes, p->facts.model.hp.n_vocab), 0);
    EXPECT_FALSE(small.fits);
    EXPECT_EQ(small.decode_tok_s, 0.0);
    EXPECT_NE(small.refusal.find("outside the layers' matrices"), std::string::npos)
        << small.refusal;
    EXPECT_THROW(plan_budgets("d", "F16", p->facts, dev, kRun, {1.5}, {}), Error);
}

// The plan's expert cache (a dense model's layer stream) is the one the runtime allocates for
// the same file and context: three slots, the same resident part and slot size.
void expect_plan_slots_as_loaded(const std::string& relative, bool moe) {
    const std::string path = test::shared_path(relative);
    const std::vector<uint8_t> bytes = test::read_file(path);
    const gguf::GgufFile header = gguf::GgufFile::parse(bytes, path, {.header_only = true});
    const ModelFacts facts = model_facts(header, "");
    const RunSettings run{.n_ctx = 64, .n_batch = 16, .n_threads = 2};
    const BudgetRow ample = plan_budget("m", "", facts, test_device(), run, uint64_t(1) << 30, 0);
    ASSERT_EQ(ample.moe, moe);
    ASSERT_EQ(ample.streams_layers, !moe);
    EXPECT_EQ(ample.file_bytes, bytes.size());
    const uint64_t budget = budget_leaving(ample.resident_bytes + ample.kv_bytes +
                                               ample.scratch_bytes + 3 * ample.slot_bytes,
                                           facts.model.hp.n_vocab) +
                            100;
    const BudgetRow r = plan_budget("m", "", facts, test_device(), run, budget, 0);
    ASSERT_TRUE(r.fits) << r.refusal;
    EXPECT_EQ(r.cache_slots, 3u);

    LoadOptions o;
    o.mem_budget = budget;
    const auto m = LoadedModel::load(path, o);
    ASSERT_TRUE(m->budget &&
                (moe ? m->budget->experts() != nullptr : m->budget->layers() != nullptr));
    EXPECT_EQ(m->budget->resident(), r.resident_bytes);
    EXPECT_EQ(moe ? m->budget->experts()->slot_bytes() : m->budget->layers()->slot_bytes(),
              r.slot_bytes);
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_threads = 2;
    const Context ctx(*m, cp);
    EXPECT_EQ(moe ? m->budget->experts()->n_slots() : m->budget->layers()->n_slots(),
              r.cache_slots);
    if (!moe) {
        EXPECT_EQ(m->budget->layers()->stats().pinned, r.layers_pinned);
    }
}

// The reserve grows with the budget by the page tables of what it holds (8 bytes per 4 KiB page),
// which a memory cgroup charges: a large budget filled to the byte would be OOM-killed without.
TEST(PlanBudget, ReserveHoldsThePageTablesOfTheBudget) {
    for (const uint64_t budget : {uint64_t(64) << 20, uint64_t(8848) << 20, uint64_t(48) << 30}) {
        EXPECT_GE(process_reserve(budget), kProcessReserve + budget / 4096 * 8) << budget;
    }
    // The tokenizer's tables: qwen3-30b-a3b's 151,936 tokens were OOM-killed under 4.3 GiB
    // with 41 MiB; what it took (own memory, growth, kernel memory) came to ~55 MiB.
    const uint64_t qwen3 = process_reserve(uint64_t(4424) << 20, 151936);
    EXPECT_GE(qwen3, uint64_t(60) << 20);
    EXPECT_LT(qwen3, uint64_t(72) << 20);
    // budget_leaving is the smallest budget that leaves the bytes beside its reserve.
    for (const uint32_t n_vocab : {0u, 512u, 151936u}) {
        for (const uint64_t bytes :
             {uint64_t(1), uint64_t(511), uint64_t(123456789), uint64_t(17) << 30}) {
            const uint64_t b = budget_leaving(bytes, n_vocab);
            EXPECT_GE(b - process_reserve(b, n_vocab), bytes) << bytes << " " << n_vocab;
            EXPECT_LT(b - 1 - std::min(b - 1, process_reserve(b - 1, n_vocab)), bytes)
                << bytes << " " << n_vocab;
        }
    }
}

TEST(PlanBudget, SlotsAndResidentAgreeWithALoadedModel) {
    expect_plan_slots_as_loaded("reference/models/moe-tiny-F16.gguf", true);
}

TEST(PlanBudget, DenseSlotsAndResidentAgreeWithALoadedModel) {
    expect_plan_slots_as_loaded("models/stories260K.gguf", false);
}

std::string cli(const std::string& args) {
    return "XDG_CACHE_HOME=" + test::temp_dir() + " " + test::cli_path() + " " + args;
}

TEST(PlanBudgetCli, JsonRowsAndTextForAMoeAndADenseModel) {
    const test::CommandResult r = test::run_command(
        cli("plan --model qwen3-30b-a3b --device phone-12g --budgets --mem-budget 6G --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json plan = json::parse(r.out);
    // 25, 50 and 75 % of the 17.3 GiB file: only 25 % is within the 8 GiB the phone has free;
    // the size given is planned.
    ASSERT_EQ(plan["budget_rows"].size(), 2u);
    EXPECT_DOUBLE_EQ(plan["budget_rows"][0]["budget_fraction"].get<double>(), 0.25);
    for (const json& row : plan["budget_rows"])
        EXPECT_LE(row["budget_bytes"].get<uint64_t>(), plan["devices"][0]["usable_bytes"]);
    for (const json& row : plan["budget_rows"]) {
        for (const char* key :
             {"budget_bytes", "budget_fraction", "file_bytes", "resident_bytes", "kv_bytes",
              "scratch_bytes", "slot_bytes", "experts_total", "fits", "refusal", "cache_slots",
              "hit_rate", "misses_per_token", "storage_bytes_per_token", "ram_bytes_per_s",
              "storage_bytes_per_s", "storage_assumed", "decode_tok_s", "in_ram_decode_tok_s"}) {
            EXPECT_TRUE(row.contains(key)) << key;
        }
        EXPECT_TRUE(row["moe"].get<bool>());
        EXPECT_TRUE(row["storage_assumed"].get<bool>());  // a profile: UFS 4.0 assumed
        if (row["fits"].get<bool>()) {
            EXPECT_GT(row["decode_tok_s"].get<double>(), 0);
            EXPECT_LT(row["decode_tok_s"].get<double>(), row["in_ram_decode_tok_s"].get<double>());
        }
    }
    EXPECT_EQ(plan["budget_rows"][1]["budget_bytes"].get<uint64_t>(), uint64_t(6) << 30);
    EXPECT_TRUE(plan["budget_rows"][1]["fits"].get<bool>());
    EXPECT_EQ(plan["devices"][0]["storage"]["assumed"], true);
    // A larger budget caches more and decodes faster.
    EXPECT_LT(plan["budget_rows"][0]["hit_rate"].get<double>(),
              plan["budget_rows"][1]["hit_rate"].get<double>());

    const test::CommandResult text =
        test::run_command(cli("plan --model qwen3-30b-a3b --device phone-12g --mem-budget 6G"));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Under a memory budget"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("(assumed)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("UFS 4.0"), std::string::npos) << text.out;

    const test::CommandResult dense =
        test::run_command(cli("plan --model qwen3-8b --device phone-12g --budgets"));
    ASSERT_EQ(dense.exit_code, 0) << dense.err;
    EXPECT_NE(dense.out.find("refused: "), std::string::npos) << dense.out;  // 25 %: its KV cache
    EXPECT_NE(dense.out.find("layers streamed: "), std::string::npos) << dense.out;
    // Without a budget asked for, no budget table.
    const test::CommandResult plain =
        test::run_command(cli("plan --model qwen3-30b-a3b --device phone-12g"));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out.find("Under a memory budget"), std::string::npos) << plain.out;

    const test::CommandResult bad =
        test::run_command(cli("plan --model qwen3-30b-a3b --device phone-12g --mem-budget 6Q"));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--mem-budget"), std::string::npos) << bad.err;
}

TEST(PlanBudget, SkewedHitRateByHand) {
    EXPECT_DOUBLE_EQ(skewed_hit_rate(0.25, 8, 0), 0.25);  // no skew: uniform
    EXPECT_NEAR(skewed_hit_rate(0.25, 8, 1),
                1.5 / (1 + 1 / 2. + 1 / 3. + 1 / 4. + 1 / 5. + 1 / 6. + 1 / 7. + 1 / 8.), 1e-12);
    EXPECT_DOUBLE_EQ(skewed_hit_rate(1, 128, kRouterSkew), 1.0);
    EXPECT_DOUBLE_EQ(skewed_hit_rate(0, 128, kRouterSkew), 0.0);
    // The stated skew: a layer's two most used of 8 experts take about 75 % of the uses.
    EXPECT_NEAR(skewed_hit_rate(2.0 / 8, 8, kRouterSkew), 0.75, 0.01);
}

TEST(PlanBudget, BudgetArgumentsReadBackExactly) {
    EXPECT_EQ(budget_arg(uint64_t(15) << 29), "7.5G");
    EXPECT_EQ(budget_arg(uint64_t(8) << 30), "8G");
    EXPECT_EQ(budget_arg(336 * MiB), "336M");
    DeviceProfile phone = *find_device_profile("phone-12g");  // 8 GiB free
    EXPECT_EQ(device_stream_budget(phone), uint64_t(15) << 29);
    phone.ram_bytes = phone.os_reserve_bytes + 700 * MiB;
    EXPECT_EQ(device_stream_budget(phone), 656 * MiB);  // 665 MiB down to 16 MiB steps
}

// The seeds' question: a 12 GB phone and Qwen3 30B-A3B. It does not fit in RAM; the plan runs it
// at the phone's own budget, in the quantization fastest there, as the runtime would load it.
TEST(PlanStream, MoeLargerThanThePhoneRunsWithExpertsStreamedAtItsBudget) {
    PlanRequest request;
    request.models = {{ModelSource::Kind::catalogue, "Qwen3 30B-A3B"}};
    request.devices = {*find_device_profile("phone-12g")};
    const PlanResult plan = make_plan(request);
    ASSERT_EQ(plan.recommendations.size(), 1u);
    const Recommendation& rec = plan.recommendations[0];
    const DeviceProfile& dev = plan.devices[0];
    EXPECT_FALSE(rec.found);
    ASSERT_TRUE(rec.streamed.has_value()) << rec.advice;
    const StreamPlan& s = *rec.streamed;
    EXPECT_LE(s.budget_bytes, dev.usable_bytes());
    EXPECT_EQ(s.budget_arg, "7.5G");
    EXPECT_NE(rec.advice.find("runs with --mem-budget 7.5G, experts streamed"), std::string::npos)
        << rec.advice;
    ASSERT_FALSE(s.options.empty());
    const BudgetRow& best = s.options.front();
    EXPECT_TRUE(best.moe);
    EXPECT_TRUE(best.fits) << best.refusal;
    EXPECT_EQ(best.budget_bytes, s.budget_bytes);
    EXPECT_GT(best.storage_bytes_per_token, 0);  // it really streams
    EXPECT_GT(best.decode_tok_s, 0);
    EXPECT_GE(best.decode_tok_s_skewed, best.decode_tok_s);
    EXPECT_LT(best.decode_tok_s_skewed, best.in_ram_decode_tok_s);
    EXPECT_NE(best.storage_source.find("UFS 4.0"), std::string::npos);
    // The fastest of every quantization planned under that budget, each as plan_budget plans it.
    for (const BudgetRow& o : s.options) {
        EXPECT_LE(o.decode_tok_s, best.decode_tok_s) << o.quant;
        EXPECT_TRUE(o.fits) << o.quant;
    }
    EXPECT_GE(s.options.size(), 3u);  // Q2_K, Q3_K_M, Q4_K_M at least
    EXPECT_EQ(s.run_command,
              fmt::format("memwall run -m Qwen_Qwen3-30B-A3B-{}.gguf --mem-budget 7.5G "
                          "-c 4096 -p \"Hello\"",
                          best.quant));

    // A dense model that fits has nothing streamed; one that fits nowhere streams its layers.
    request.models = {{ModelSource::Kind::catalogue, "qwen3-8b"},
                      {ModelSource::Kind::catalogue, "qwen2.5-72b"}};
    const PlanResult dense = make_plan(request);
    ASSERT_EQ(dense.recommendations.size(), 2u);
    EXPECT_TRUE(dense.recommendations[0].found);
    EXPECT_FALSE(dense.recommendations[0].streamed.has_value());
    const Recommendation& large = dense.recommendations[1];
    EXPECT_FALSE(large.found);
    ASSERT_TRUE(large.streamed.has_value()) << large.advice;
    const BudgetRow& layers = large.streamed->options.front();
    EXPECT_TRUE(layers.streams_layers);
    EXPECT_DOUBLE_EQ(layers.decode_tok_s_skewed, layers.decode_tok_s);
    EXPECT_NE(large.advice.find("layers streamed"), std::string::npos) << large.advice;
}

TEST(PlanStreamCli, TableRecommendationAndJsonSayHowItRuns) {
    const test::CommandResult r =
        test::run_command(cli("plan --model \"Qwen3 30B-A3B\" --device phone-12g --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json rec = json::parse(r.out)["recommendations"][0];
    ASSERT_TRUE(rec.contains("streamed")) << rec.dump(1);
    const json& s = rec["streamed"];
    EXPECT_EQ(s["kind"], "experts");
    EXPECT_EQ(s["budget_arg"], "7.5G");
    EXPECT_EQ(s["ctx"], 4096);
    EXPECT_EQ(s["hf_repo"], "bartowski/Qwen_Qwen3-30B-A3B-GGUF");
    for (const char* key : {"decode_tok_s", "decode_tok_s_skewed", "hit_rate_skewed", "router_skew",
                            "storage_source", "storage_assumed"})
        EXPECT_TRUE(s["options"][0].contains(key)) << key;

    const test::CommandResult text =
        test::run_command(cli("plan --model \"Qwen3 30B-A3B\" --device phone-12g"));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    for (const char* part :
         {"streamed at the device's --mem-budget", "does not fit: even Q2_K",
          "with --mem-budget 7.5G (95 % of its free memory), experts streamed from storage: ",
          "tok/s from uniform routing (the worst case) to expert popularity ~ rank^-1.7",
          "storage assumed: UFS 4.0", "memwall run -m ", " --mem-budget 7.5G -c 4096"})
        EXPECT_NE(text.out.find(part), std::string::npos) << part << " in:\n" << text.out;
    EXPECT_EQ(text.out.find("Under a memory budget"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace mw
