#include "plan/catalogue.h"

#include <fmt/format.h>

#include <cctype>
#include <initializer_list>
#include <string>

namespace mw {
namespace {

// One dense model per row, as in its config.json (hidden_size, num_hidden_layers, ...). RoPE
// settings do not change memory and are left at their defaults.
struct DenseRow {
    const char* id;
    const char* name;
    const char* arch;
    double params_b;  // published parameter count, billions
    uint32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    bool tied;
};

// clang-format off
constexpr DenseRow kDense[] = {
    // id             name               arch       params  vocab   ctx     embd  lay head kv  hd   ff     tied
    {"qwen2.5-0.5b",  "Qwen2.5 0.5B",    "qwen2",    0.494, 151936, 32768,  896,  24, 14, 2,  64,  4864,  true},
    {"qwen2.5-1.5b",  "Qwen2.5 1.5B",    "qwen2",    1.54,  151936, 32768,  1536, 28, 12, 2,  128, 8960,  true},
    {"qwen2.5-3b",    "Qwen2.5 3B",      "qwen2",    3.09,  151936, 32768,  2048, 36, 16, 2,  128, 11008, true},
    {"qwen2.5-7b",    "Qwen2.5 7B",      "qwen2",    7.61,  152064, 32768,  3584, 28, 28, 4,  128, 18944, false},
    {"qwen2.5-14b",   "Qwen2.5 14B",     "qwen2",    14.7,  152064, 32768,  5120, 48, 40, 8,  128, 13824, false},
    {"qwen2.5-32b",   "Qwen2.5 32B",     "qwen2",    32.5,  152064, 32768,  5120, 64, 40, 8,  128, 27648, false},
    {"qwen2.5-72b",   "Qwen2.5 72B",     "qwen2",    72.7,  152064, 32768,  8192, 80, 64, 8,  128, 29568, false},
    {"qwen3-0.6b",    "Qwen3 0.6B",      "qwen3",    0.6,   151936, 40960,  1024, 28, 16, 8,  128, 3072,  true},
    {"qwen3-1.7b",    "Qwen3 1.7B",      "qwen3",    1.7,   151936, 40960,  2048, 28, 16, 8,  128, 6144,  true},
    {"qwen3-4b",      "Qwen3 4B",        "qwen3",    4.0,   151936, 40960,  2560, 36, 32, 8,  128, 9728,  true},
    {"qwen3-8b",      "Qwen3 8B",        "qwen3",    8.2,   151936, 40960,  4096, 36, 32, 8,  128, 12288, false},
    {"qwen3-14b",     "Qwen3 14B",       "qwen3",    14.8,  151936, 40960,  5120, 40, 40, 8,  128, 17408, false},
    {"qwen3-32b",     "Qwen3 32B",       "qwen3",    32.8,  151936, 40960,  5120, 64, 64, 8,  128, 25600, false},
    {"llama-2-7b",    "Llama 2 7B",      "llama",    6.74,  32000,  4096,   4096, 32, 32, 32, 128, 11008, false},
    {"llama-3.2-1b",  "Llama 3.2 1B",    "llama",    1.24,  128256, 131072, 2048, 16, 32, 8,  64,  8192,  true},
    {"llama-3.2-3b",  "Llama 3.2 3B",    "llama",    3.21,  128256, 131072, 3072, 28, 24, 8,  128, 8192,  true},
    {"llama-3.1-8b",  "Llama 3.1 8B",    "llama",    8.03,  128256, 131072, 4096, 32, 32, 8,  128, 14336, false},
    {"llama-3.1-70b", "Llama 3.1 70B",   "llama",    70.6,  128256, 131072, 8192, 80, 64, 8,  128, 28672, false},
    {"llama-3.3-70b", "Llama 3.3 70B",   "llama",    70.6,  128256, 131072, 8192, 80, 64, 8,  128, 28672, false},
    {"mistral-7b",    "Mistral 7B v0.3", "llama",    7.25,  32768,  32768,  4096, 32, 32, 8,  128, 14336, false},
    {"phi-3-mini",    "Phi-3 mini 3.8B", "phi3",     3.82,  32064,  4096,   3072, 32, 32, 32, 96,  8192,  false},
    {"phi-4-mini",    "Phi-4 mini 3.8B", "phi3",     3.84,  200064, 131072, 3072, 32, 24, 8,  128, 8192,  true},
    {"gemma-2-2b",    "Gemma 2 2B",      "gemma2",   2.61,  256000, 8192,   2304, 26, 8,  4,  256, 9216,  true},
    {"gemma-2-9b",    "Gemma 2 9B",      "gemma2",   9.24,  256000, 8192,   3584, 42, 16, 8,  256, 14336, true},
    {"gemma-2-27b",   "Gemma 2 27B",     "gemma2",   27.2,  256000, 8192,   4608, 46, 32, 16, 128, 36864, true},
    {"gemma-3-1b",    "Gemma 3 1B",      "gemma3",   1.0,   262144, 32768,  1152, 26, 4,  1,  256, 6912,  true},
    {"gemma-3-4b",    "Gemma 3 4B",      "gemma3",   4.0,   262208, 131072, 2560, 34, 8,  4,  256, 10240, true},
    {"gemma-3-12b",   "Gemma 3 12B",     "gemma3",   12.0,  262208, 131072, 3840, 48, 16, 8,  256, 15360, true},
    {"gemma-3-27b",   "Gemma 3 27B",     "gemma3",   27.0,  262208, 131072, 5376, 62, 32, 16, 128, 21504, true},
    {"command-r-35b", "Command R 35B",   "command-r", 35.0,  256000, 131072, 8192, 40, 64, 64, 128, 22528, true},
    {"granite-3-2b",  "Granite 3 2B",    "granite",  2.53,  49155,  4096,   2048, 40, 32, 8,  64,  8192,  true},
    // Granite 4.0 Micro: the family's attention-only model (llama.cpp converts it as "granite"):
    // 2560 wide, 40 layers, 40 heads of 64 sharing 8 KV heads, MLP 8192, as IBM's report on the
    // family's 3B dense gives them; vocabulary 100352 and 128K context from its config.json. The
    // 4.0-H models' Mamba-2 layers memwall cannot run (nor plan), so they are not rows.
    {"granite-4-micro", "Granite 4.0 Micro", "granite", 3.4, 100352, 131072, 2560, 40, 40, 8, 64, 8192, true},
    {"smollm3-3b",    "SmolLM3 3B",      "smollm3",  3.08,  128256, 65536,  2048, 36, 16, 4,  128, 11008, true},
};
// clang-format on

ModelSpec from_row(const DenseRow& r) {
    ModelSpec s;
    s.id = r.id;
    s.name = r.name;
    s.arch = r.arch;
    s.nominal_params = r.params_b * 1e9;
    s.n_vocab = r.n_vocab;
    s.n_ctx_train = r.n_ctx_train;
    s.n_embd = r.n_embd;
    s.n_layer = r.n_layer;
    s.n_head = r.n_head;
    s.n_head_kv = r.n_head_kv;
    s.head_dim = r.head_dim;
    s.n_ff = r.n_ff;
    s.tied_embeddings = r.tied;
    s.rope_freqs = s.id.rfind("llama-3", 0) == 0;  // Llama 3.1+ ships rope_freqs.weight
    return s;
}

// A MoE model's experts: n of width ff, `used` per token, shared ones of total width ff_shared.
void set_experts(ModelSpec& s, uint32_t n, uint32_t used, uint32_t ff, uint32_t ff_shared = 0) {
    s.n_expert = n;
    s.n_expert_used = used;
    s.n_ff_expert = ff;
    s.n_ff_shared = ff_shared;
}

// The settings of each family that its GGUF files carry as keys (windows, scales, RoPE variants),
// from the models' config.json files.
void add_family_settings(ModelSpec& s) {
    if (s.arch == "gemma2") {
        s.n_swa = 4096;
        s.swa_pattern = 2;
    } else if (s.arch == "gemma3") {
        s.n_swa = s.id == "gemma-3-1b" ? 512 : 1024;
        s.swa_pattern = 6;
        s.rope_freq_base = 1e6f;
        s.rope_freq_base_swa = 10000.0f;
        if (s.id != "gemma-3-1b") s.rope_scale_linear = 8.0f;
    } else if (s.id == "phi-4-mini") {
        s.n_rot = 96;  // partial_rotary_factor 0.75 of 128
        s.longrope = true;
    } else if (s.arch == "command-r") {
        s.logit_scale = 0.0625f;
    } else if (s.arch == "smollm3") {
        // SmolLM3-3B's config.json (HuggingFaceTB/SmolLM3-3B, as quoted in public code and its
        // blog post): rope_theta 5e6; no RoPE on every fourth layer (llama.cpp's fixed step).
        s.rope_freq_base = 5e6f;
    } else if (s.arch == "granite") {  // Granite 3.0 2B's multipliers
        s.embedding_scale = 12.0f;
        s.residual_scale = 0.22f;
        s.attention_scale = 0.015625f;
        s.logit_scale = 8.0f;
    }
}

// Qwen3.5 (February 2026): three gated DeltaNet layers in every four, the fourth gated full
// attention. Shapes from the public config.json files (text_config) of Qwen/Qwen3.5-0.8B, -2B,
// -4B, -9B, -27B, -35B-A3B and -122B-A10B; read from copies quoted in public code (the 0.8B's and
// 27B's text_config in full, the others' shape fields, each from two or more sources). Common to
// all: vocab 248320, context 262144, head_dim 256, DeltaNet 16 q/k heads of 128 (value heads of
// 128 too), conv kernel 4, full_attention_interval 4, rope_theta 1e7, partial_rotary_factor 0.25,
// mrope_section [11, 11, 10]. tie_word_embeddings: true for 0.8B (config) and 4B (a vLLM loader's
// note); for 2B not found in a quoted copy, taken as true from its published size (2.27 B with
// the vision encoder fits tied, not untied); false for 9B, 27B and the MoEs. params_b: the
// language model as converted (no vision encoder, no MTP layer), so it is below the names for
// the small models.
struct Qwen35Row {
    const char* id;
    const char* name;
    double params_b;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, ssm_v_heads;
    bool tied;
    uint32_t n_expert, n_expert_used, n_ff_expert, n_ff_shared;
};

// clang-format off
constexpr Qwen35Row kQwen35[] = {
    // id                  name                 params  embd  lay head kv  ff     v_heads tied  experts used ff_exp shared
    {"qwen3.5-0.8b",       "Qwen3.5 0.8B",      0.752,  1024, 24, 8,   2,  3584,  16,     true,  0,   0,   0,     0},
    {"qwen3.5-2b",         "Qwen3.5 2B",        1.88,   2048, 24, 8,   2,  6144,  16,     true,  0,   0,   0,     0},
    {"qwen3.5-4b",         "Qwen3.5 4B",        4.21,   2560, 32, 16,  4,  9216,  32,     true,  0,   0,   0,     0},
    {"qwen3.5-9b",         "Qwen3.5 9B",        8.95,   4096, 32, 16,  4,  12288, 32,     false, 0,   0,   0,     0},
    {"qwen3.5-27b",        "Qwen3.5 27B",       26.9,   5120, 64, 24,  4,  17408, 48,     false, 0,   0,   0,     0},
    {"qwen3.5-35b-a3b",    "Qwen3.5 35B-A3B",   34.7,   2048, 40, 16,  2,  0,     32,     false, 256, 8,   512,   512},
    {"qwen3.5-122b-a10b",  "Qwen3.5 122B-A10B", 122.1,  3072, 48, 32,  2,  0,     64,     false, 256, 8,   1024,  1024},
};
// clang-format on

ModelSpec from_qwen35_row(const Qwen35Row& r) {
    ModelSpec s =
        from_row({r.id, r.name, r.n_expert ? "qwen35moe" : "qwen35", r.params_b, 248320, 262144,
                  r.n_embd, r.n_layer, r.n_head, r.n_head_kv, 256, r.n_ff, r.tied});
    s.rope_freq_base = 1e7f;
    s.n_rot = 64;
    s.rope_sections = {11, 11, 10, 0};
    s.full_attn_interval = 4;
    s.ssm_conv_kernel = 4;
    s.ssm_head_dim = 128;
    s.ssm_k_heads = 16;
    s.ssm_v_heads = r.ssm_v_heads;
    set_experts(s, r.n_expert, r.n_expert_used, r.n_ff_expert, r.n_ff_shared);
    return s;
}

// Gemma 4 (2026), the text model of each (no vision or audio encoder), from the public
// config.json files' text_config as quoted in public code (E2B, E4B, 26B-A4B and 31B each from two
// or more sources): vocabulary 262144, sliding heads of 256 (head_dim) and full heads of 512
// (global_head_dim), sliding RoPE base 1e4, full layers proportional RoPE (base 1e6, the
// converter's rope_freqs), final soft-cap 30, all tied. E2B: 4 sliding layers then a full one;
// the others 5 then 1. E2B and E4B share the last num_kv_shared_layers layers' K/V and have
// per-layer embeddings (hidden_size_per_layer_input 256, a table of vocabulary x layers x 256);
// E2B's sharing layers have a double-wide MLP (use_double_wide_mlp). 26B-A4B and 31B: K = V on
// the full layers (attention_k_eq_v) with fewer KV heads there (num_global_key_value_heads);
// 26B-A4B has 128 experts (8 per token) beside a dense MLP in every layer. params_b: the text
// model as converted (Google's "E2B" / "E4B" count 5.1 B / 8 B with the encoders).
struct Gemma4Row {
    const char* id;
    const char* name;
    double params_b;
    uint32_t n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_head_kv_full, n_ff;
    uint32_t n_embd_per_layer, n_kv_shared, swa_pattern, n_swa;
    bool k_eq_v, double_wide;
    uint32_t n_expert, n_expert_used, n_ff_expert;
};

// clang-format off
constexpr Gemma4Row kGemma4[] = {
    // id             name               params ctx     embd  lay head kv  kvf ff     ple  shr pat win   k=v    2xff   exp used ff_exp
    {"gemma-4-e2b",     "Gemma 4 E2B",     4.63,  131072, 1536, 35, 8,   1,  1,  6144,  256, 20, 5,  512,  false, true,  0,   0,   0},
    {"gemma-4-e4b",     "Gemma 4 E4B",     7.46,  131072, 2560, 42, 8,   2,  2,  10240, 256, 18, 6,  512,  false, false, 0,   0,   0},
    {"gemma-4-26b-a4b", "Gemma 4 26B-A4B", 25.2,  262144, 2816, 30, 16,  8,  2,  2112,  0,   0,  6,  1024, true,  false, 128, 8,   704},
    {"gemma-4-31b",     "Gemma 4 31B",     30.7,  262144, 5376, 60, 32,  16, 4,  21504, 0,   0,  6,  1024, true,  false, 0,   0,   0},
};
// clang-format on

ModelSpec from_gemma4_row(const Gemma4Row& r) {
    ModelSpec s = from_row({r.id, r.name, "gemma4", r.params_b, 262144, r.n_ctx_train, r.n_embd,
                            r.n_layer, r.n_head, r.n_head_kv, 512, r.n_ff, true});
    s.head_dim_swa = 256;
    s.n_head_kv_full = r.n_head_kv_full;
    s.full_k_eq_v = r.k_eq_v;
    s.n_kv_shared = r.n_kv_shared;
    s.n_embd_per_layer = r.n_embd_per_layer;
    s.double_wide_shared_ffn = r.double_wide;
    s.swa_pattern = r.swa_pattern;
    s.n_swa = r.n_swa;
    s.rope_freq_base = 1e6f;
    s.rope_freq_base_swa = 10000.0f;
    s.rope_freqs = true;  // the full layers' proportional RoPE
    s.final_softcap = 30.0f;
    set_experts(s, r.n_expert, r.n_expert_used, r.n_ff_expert);
    return s;
}

// LFM2 (Liquid, 2025), from the public config.json files of LiquidAI/LFM2-1.2B and
// LFM2-8B-A1B as quoted in public code (two or more sources each): vocabulary 65536, context
// 128000, conv_L_cache 3, rope_theta 1e6, heads of 64, tied. LFM2-1.2B's block_ff_dim 12288 is
// auto-adjusted (2/3, multiple of 256) to the 8192 its checkpoints hold (intermediate_size).
// Attention layers: 1.2B full_attn_idxs [2, 5, 8, 10, 12, 14]; 8B-A1B layer_types give
// [2, 6, 10, 14, 18, 21]; the 8B-A1B's first 2 layers are dense (7168), then 32 experts of 1792,
// 4 per token, sigmoid-routed with a selection bias.
ModelSpec lfm2_spec(const DenseRow& r, std::initializer_list<uint32_t> attention_layers) {
    ModelSpec s = from_row(r);
    s.rope_freq_base = 1e6f;
    s.shortconv_l_cache = 3;
    s.conv_layers.assign(s.n_layer, true);
    for (uint32_t il : attention_layers) s.conv_layers[il] = false;
    return s;
}

// gpt-oss-20b (OpenAI, 2025; its config.json): 24 layers x 2880, 64 query heads of 64 on 8 KV
// heads, 32 experts of 2880 with 4 per token, sliding window 128 on the even layers, YaRN x32
// from 4096, rope_theta 150000, attention sinks and biases. Ships in MXFP4 (quantize or synth
// with --type MXFP4_MOE).
ModelSpec gpt_oss_20b() {
    ModelSpec s = from_row({"gpt-oss-20b", "gpt-oss-20b", "gpt-oss", 20.9, 201088, 131072, 2880, 24,
                            64, 8, 64, 2880, false});
    s.rope_freq_base = 150000.0f;
    set_experts(s, 32, 4, 2880);
    s.n_swa = 128;
    s.yarn_factor = 32.0f;
    s.yarn_orig_ctx = 4096;
    return s;
}

std::vector<ModelSpec> build_catalogue() {
    std::vector<ModelSpec> all;
    for (const DenseRow& r : kDense) all.push_back(from_row(r));

    // Qwen3-30B-A3B: 128 experts of width 768, 8 used per token.
    ModelSpec q3moe = from_row({"qwen3-30b-a3b", "Qwen3 30B-A3B", "qwen3moe", 30.5, 151936, 40960,
                                2048, 48, 32, 4, 128, 6144, false});
    set_experts(q3moe, 128, 8, 768);
    all.push_back(q3moe);

    // Mixtral 8x7B: 8 experts of the Mistral 7B FFN, 2 used per token.
    ModelSpec mixtral = from_row({"mixtral-8x7b", "Mixtral 8x7B", "llama", 46.7, 32000, 32768, 4096,
                                  32, 32, 8, 128, 14336, false});
    set_experts(mixtral, 8, 2, 14336);
    all.push_back(mixtral);

    // DeepSeek-V2-Lite: latent attention (the cache holds a 512-wide latent plus 64 RoPE dims),
    // 64 routed experts (6 used) and 2 shared ones; the first layer is dense.
    ModelSpec dsv2 = from_row({"deepseek-v2-lite", "DeepSeek-V2-Lite", "deepseek2", 15.7, 102400,
                               163840, 2048, 27, 16, 16, 128, 10944, false});
    set_experts(dsv2, 64, 6, 1408, 2 * 1408);
    dsv2.n_leading_dense = 1;
    dsv2.kv_lora_rank = 512;
    dsv2.qk_rope_dim = 64;
    dsv2.qk_nope_dim = 128;
    dsv2.v_head_dim = 128;
    dsv2.n_shared_experts = 2;
    dsv2.yarn_factor = 40.0f;  // rope_scaling: yarn, factor 40 over 4096, mscale_all_dim 0.707
    dsv2.yarn_orig_ctx = 4096;
    dsv2.yarn_mscale_all_dim = 0.707f;
    all.push_back(dsv2);
    for (const Qwen35Row& r : kQwen35) all.push_back(from_qwen35_row(r));
    for (const Gemma4Row& r : kGemma4) all.push_back(from_gemma4_row(r));
    all.push_back(lfm2_spec(
        {"lfm2-1.2b", "LFM2 1.2B", "lfm2", 1.17, 65536, 128000, 2048, 16, 32, 8, 64, 8192, true},
        {2, 5, 8, 10, 12, 14}));
    ModelSpec lfm2moe = lfm2_spec({"lfm2-8b-a1b", "LFM2 8B-A1B", "lfm2moe", 8.34, 65536, 128000,
                                   2048, 24, 32, 8, 64, 7168, true},
                                  {2, 6, 10, 14, 18, 21});
    set_experts(lfm2moe, 32, 4, 1792);
    lfm2moe.n_leading_dense = 2;
    all.push_back(lfm2moe);
    all.push_back(gpt_oss_20b());
    for (ModelSpec& s : all) add_family_settings(s);
    return all;
}

// Where people get GGUF files of each model: bartowski's conversions name files
// "<stem>-<QUANT>.gguf" (F16 as "f16"; above 50 GB, parts in a "<stem>-<QUANT>/" folder), and
// TheBloke's "<stem>.<QUANT>.gguf".
struct HfRow {
    const char* id;
    const char* repo;
    const char* stem;
    bool thebloke;
};

// clang-format off
constexpr HfRow kHf[] = {
    {"qwen2.5-0.5b",  "bartowski/Qwen2.5-0.5B-Instruct-GGUF",       "Qwen2.5-0.5B-Instruct",        false},
    {"qwen2.5-1.5b",  "bartowski/Qwen2.5-1.5B-Instruct-GGUF",       "Qwen2.5-1.5B-Instruct",        false},
    {"qwen2.5-3b",    "bartowski/Qwen2.5-3B-Instruct-GGUF",         "Qwen2.5-3B-Instruct",          false},
    {"qwen2.5-7b",    "bartowski/Qwen2.5-7B-Instruct-GGUF",         "Qwen2.5-7B-Instruct",          false},
    {"qwen2.5-14b",   "bartowski/Qwen2.5-14B-Instruct-GGUF",        "Qwen2.5-14B-Instruct",         false},
    {"qwen2.5-32b",   "bartowski/Qwen2.5-32B-Instruct-GGUF",        "Qwen2.5-32B-Instruct",         false},
    {"qwen2.5-72b",   "bartowski/Qwen2.5-72B-Instruct-GGUF",        "Qwen2.5-72B-Instruct",         false},
    {"qwen3-0.6b",    "bartowski/Qwen_Qwen3-0.6B-GGUF",             "Qwen_Qwen3-0.6B",              false},
    {"qwen3-1.7b",    "bartowski/Qwen_Qwen3-1.7B-GGUF",             "Qwen_Qwen3-1.7B",              false},
    {"qwen3-4b",      "bartowski/Qwen_Qwen3-4B-GGUF",               "Qwen_Qwen3-4B",                false},
    {"qwen3-8b",      "bartowski/Qwen_Qwen3-8B-GGUF",               "Qwen_Qwen3-8B",                false},
    {"qwen3-14b",     "bartowski/Qwen_Qwen3-14B-GGUF",              "Qwen_Qwen3-14B",               false},
    {"qwen3-32b",     "bartowski/Qwen_Qwen3-32B-GGUF",              "Qwen_Qwen3-32B",               false},
    {"qwen3-30b-a3b", "bartowski/Qwen_Qwen3-30B-A3B-GGUF",          "Qwen_Qwen3-30B-A3B",           false},
    {"llama-2-7b",    "TheBloke/Llama-2-7B-GGUF",                   "llama-2-7b",                   true},
    {"llama-3.2-1b",  "bartowski/Llama-3.2-1B-Instruct-GGUF",       "Llama-3.2-1B-Instruct",        false},
    {"llama-3.2-3b",  "bartowski/Llama-3.2-3B-Instruct-GGUF",       "Llama-3.2-3B-Instruct",        false},
    {"llama-3.1-8b",  "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",  "Meta-Llama-3.1-8B-Instruct",   false},
    {"llama-3.1-70b", "bartowski/Meta-Llama-3.1-70B-Instruct-GGUF", "Meta-Llama-3.1-70B-Instruct",  false},
    {"llama-3.3-70b", "bartowski/Llama-3.3-70B-Instruct-GGUF",      "Llama-3.3-70B-Instruct",       false},
    {"mistral-7b",    "bartowski/Mistral-7B-Instruct-v0.3-GGUF",    "Mistral-7B-Instruct-v0.3",     false},
    {"mixtral-8x7b",  "TheBloke/Mixtral-8x7B-Instruct-v0.1-GGUF",   "mixtral-8x7b-instruct-v0.1",   true},
    {"phi-3-mini",    "bartowski/Phi-3-mini-4k-instruct-GGUF",      "Phi-3-mini-4k-instruct",       false},
    {"phi-4-mini",    "bartowski/microsoft_Phi-4-mini-instruct-GGUF", "microsoft_Phi-4-mini-instruct", false},
    {"gemma-2-2b",    "bartowski/gemma-2-2b-it-GGUF",               "gemma-2-2b-it",                false},
    {"gemma-2-9b",    "bartowski/gemma-2-9b-it-GGUF",               "gemma-2-9b-it",                false},
    {"gemma-2-27b",   "bartowski/gemma-2-27b-it-GGUF",              "gemma-2-27b-it",               false},
    {"gemma-3-1b",    "bartowski/google_gemma-3-1b-it-GGUF",        "google_gemma-3-1b-it",         false},
    {"gemma-3-4b",    "bartowski/google_gemma-3-4b-it-GGUF",        "google_gemma-3-4b-it",         false},
    {"gemma-3-12b",   "bartowski/google_gemma-3-12b-it-GGUF",       "google_gemma-3-12b-it",        false},
    {"gemma-3-27b",   "bartowski/google_gemma-3-27b-it-GGUF",       "google_gemma-3-27b-it",        false},
    {"command-r-35b", "bartowski/c4ai-command-r-v01-GGUF",          "c4ai-command-r-v01",           false},
    {"deepseek-v2-lite", "bartowski/DeepSeek-V2-Lite-Chat-GGUF",    "DeepSeek-V2-Lite-Chat",        false},
    {"granite-3-2b",  "bartowski/granite-3.0-2b-instruct-GGUF",     "granite-3.0-2b-instruct",      false},
    {"granite-4-micro", "ibm-granite/granite-4.0-micro-GGUF",       "granite-4.0-micro",            false},
    // Qwen3.5 in bartowski's naming of Qwen releases (not checked on Hugging Face from here).
    {"qwen3.5-0.8b",  "bartowski/Qwen_Qwen3.5-0.8B-GGUF",           "Qwen_Qwen3.5-0.8B",            false},
    {"qwen3.5-2b",    "bartowski/Qwen_Qwen3.5-2B-GGUF",             "Qwen_Qwen3.5-2B",              false},
    {"qwen3.5-4b",    "bartowski/Qwen_Qwen3.5-4B-GGUF",             "Qwen_Qwen3.5-4B",              false},
    {"qwen3.5-9b",    "bartowski/Qwen_Qwen3.5-9B-GGUF",             "Qwen_Qwen3.5-9B",              false},
    {"qwen3.5-27b",   "bartowski/Qwen_Qwen3.5-27B-GGUF",            "Qwen_Qwen3.5-27B",             false},
    {"qwen3.5-35b-a3b", "bartowski/Qwen_Qwen3.5-35B-A3B-GGUF",      "Qwen_Qwen3.5-35B-A3B",         false},
    {"qwen3.5-122b-a10b", "bartowski/Qwen_Qwen3.5-122B-A10B-GGUF",  "Qwen_Qwen3.5-122B-A10B",       false},
    // The 2025-2026 device models in bartowski's naming (not checked on Hugging Face from here).
    {"gemma-4-e2b",   "bartowski/google_gemma-4-E2B-it-GGUF",       "google_gemma-4-E2B-it",        false},
    {"gemma-4-e4b",   "bartowski/google_gemma-4-E4B-it-GGUF",       "google_gemma-4-E4B-it",        false},
    {"gemma-4-26b-a4b", "bartowski/google_gemma-4-26B-A4B-it-GGUF", "google_gemma-4-26B-A4B-it",    false},
    {"gemma-4-31b",   "bartowski/google_gemma-4-31B-it-GGUF",       "google_gemma-4-31B-it",        false},
    {"lfm2-1.2b",     "bartowski/LiquidAI_LFM2-1.2B-GGUF",          "LiquidAI_LFM2-1.2B",           false},
    {"lfm2-8b-a1b",   "bartowski/LiquidAI_LFM2-8B-A1B-GGUF",        "LiquidAI_LFM2-8B-A1B",         false},
    {"smollm3-3b",    "bartowski/HuggingFaceTB_SmolLM3-3B-GGUF",    "HuggingFaceTB_SmolLM3-3B",     false},
    {"gpt-oss-20b",   "bartowski/openai_gpt-oss-20b-GGUF",          "openai_gpt-oss-20b",           false},
};
// clang-format on

std::string squash(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            out += char(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    return out;
}

}  // namespace

const std::vector<ModelSpec>& model_catalogue() {
    static const std::vector<ModelSpec> catalogue = build_catalogue();
    return catalogue;
}

const ModelSpec* find_catalogue_model(std::string_view name) {
    const std::string wanted = squash(name);
    for (const ModelSpec& s : model_catalogue()) {
        if (squash(s.id) == wanted || squash(s.name) == wanted) return &s;
    }
    return nullptr;
}

HfFile hf_file_for(std::string_view id, std::string_view quant, uint64_t file_bytes) {
    for (const HfRow& r : kHf) {
        if (id != r.id) continue;
        const std::string q(quant);
        if (r.thebloke) {
            if (q == "F16" || q == "BF16" || q == "F32") return {};  // not published there
            return {r.repo, fmt::format("{}.{}.gguf", r.stem, q)};
        }
        const std::string tag = q == "F16" ? "f16" : q == "BF16" ? "bf16" : q;
        if (file_bytes > uint64_t(50e9))
            return {r.repo, fmt::format("{}-{}/ (in parts)", r.stem, tag)};
        return {r.repo, fmt::format("{}-{}.gguf", r.stem, tag)};
    }
    return {};
}

std::vector<const ModelSpec*> seed_models() {
    return {find_catalogue_model("command-r-35b"), find_catalogue_model("qwen3-30b-a3b")};
}

}  // namespace mw
