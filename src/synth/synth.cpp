#include "synth/synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "format/ggml_types.h"
#include "plan/catalogue.h"
#include "tensor/types.h"

namespace mw {
namespace {

// splitmix64: fast, good enough for random weights, identical on every platform.
struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Approximately normal: the sum of four uniforms, scaled to unit variance.
    float normal() {
        const uint64_t r = next();
        float sum = 0.0f;
        for (int i = 0; i < 4; ++i) sum += float((r >> (16 * i)) & 0xffff) / 65535.0f;
        return (sum - 2.0f) * 1.7320508f;
    }
};

void fill_bytes(Rng& rng, uint8_t* dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint64_t r = rng.next();
        std::memcpy(dst + i, &r, 8);
    }
    if (i < n) {
        const uint64_t r = rng.next();
        std::memcpy(dst + i, &r, n - i);
    }
}

void put_half(uint8_t* block, size_t offset, float value) {
    const uint16_t h = f32_to_fp16(value);
    std::memcpy(block + offset, &h, 2);
}

// Where each block type keeps its fp16 scale fields, and what to put there so that dequantized
// weights have a standard deviation of about 0.02 around zero.
struct ScaleFields {
    size_t d_offset;
    float d;
    int dmin_offset;  // -1: none
    float dmin;
};

ScaleFields scale_fields(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
            return {0, 0.004f, -1, 0};
        case GgmlType::Q4_1:
            return {0, 0.004f, 2, -0.03f};
        case GgmlType::Q5_0:
            return {0, 0.002f, -1, 0};
        case GgmlType::Q5_1:
            return {0, 0.002f, 2, -0.031f};
        case GgmlType::Q8_0:
            return {0, 0.0003f, -1, 0};
        case GgmlType::Q2_K:
            return {80, 0.002f, 82, 0.001f};
        case GgmlType::Q3_K:
            return {108, 0.0006f, -1, 0};
        case GgmlType::Q4_K:
            return {0, 0.0003f, 2, 0.003f};
        case GgmlType::Q5_K:
            return {0, 0.00015f, 2, 0.003f};
        case GgmlType::Q6_K:
            return {208, 0.000015f, -1, 0};
        case GgmlType::IQ4_NL:
            return {0, 0.00025f, -1, 0};
        case GgmlType::IQ4_XS:
            return {0, 0.00002f, -1, 0};
        case GgmlType::TQ1_0:
            return {52, 0.02f, -1, 0};
        case GgmlType::TQ2_0:
            return {64, 0.02f, -1, 0};
        case GgmlType::MXFP4:
            return {0, 0.0f, -1, 0};  // an E8M0 exponent byte, set in fill_random_blocks
        default:
            fail(ErrorKind::invalid_argument, "synth: no random block generator for this type");
    }
}

// A tensor's random contents, generated where it is written (bounded memory).
// Per row of a MoE router (ne = {n_embd, n_expert}): the factor that makes expert popularity
// follow rank^-skew (a row with a larger scale wins the top-k more often), ranks shuffled by the
// tensor's seed so that each layer favours other experts.
std::vector<float> router_row_scales(const TensorDesc& t, float skew, uint64_t seed) {
    const bool router =
        t.name.size() > 19 && t.name.compare(t.name.size() - 19, 19, "ffn_gate_inp.weight") == 0;
    if (!router || skew <= 0.0f || t.ne.size() < 2) return {};
    std::vector<uint32_t> rank(size_t(t.ne[1]));
    for (size_t e = 0; e < rank.size(); ++e) rank[e] = uint32_t(e);
    Rng rng{seed ^ 0x5ca1ab1eull};
    for (size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[rng.next() % i]);
    std::vector<float> scale(rank.size());
    for (size_t e = 0; e < rank.size(); ++e) scale[e] = std::pow(float(rank[e] + 1), -skew);
    return scale;
}

gguf::GgufWriter::Producer producer_for(const TensorDesc& t, GgmlType type, uint64_t seed,
                                        float router_skew) {
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    const std::vector<float> row_scale = router_row_scales(t, router_skew, seed);
    const uint64_t row_len = t.ne.empty() ? 1 : t.ne[0];
    const bool is_norm = t.name.find("norm") != std::string::npos;
    // Qwen3.5's A = -exp(A_log) < 0, so that each step's decay exp(A softplus(.)) is below 1
    // (a positive value would grow the recurrent state without bound).
    const bool is_ssm_a = t.name.size() > 6 && t.name.compare(t.name.size() - 6, 6, ".ssm_a") == 0;
    // Frequency divisors (Llama 3.1 rope_freqs, phi3 LongRoPE factors): 1, the plain RoPE.
    const bool is_rope_freqs = t.name.rfind("rope_f", 0) == 0;
    return [=](uint8_t* dst) {
        Rng rng{seed};
        if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
            for (uint64_t i = 0; i < n; ++i) {
                float v = 0.02f * rng.normal();
                if (is_norm) v = 1.0f + 0.05f * rng.normal();
                if (is_rope_freqs) v = 1.0f;
                if (is_ssm_a) v = -std::exp(0.5f * rng.normal());
                if (!row_scale.empty()) v *= row_scale[size_t(i / row_len)];
                if (type == GgmlType::F32) {
                    std::memcpy(dst + 4 * i, &v, 4);
                } else {
                    const uint16_t h = type == GgmlType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
                    std::memcpy(dst + 2 * i, &h, 2);
                }
            }
            return;
        }
        const auto layout = ggml_layout(static_cast<uint32_t>(type));
        fill_random_blocks(type, dst, n / layout->block_size, rng.next());
    };
}

uint64_t tensor_seed(uint64_t seed, const std::string& name) {
    uint64_t h = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// A SentencePiece-style vocabulary of n tokens: <unk>, <s>, </s>, the 256 byte tokens, then
// filler words. Enough for both engines to load and tokenize; the text is meaningless.
void add_synthetic_vocab(gguf::GgufWriter& w, uint32_t n_vocab) {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    tokens.reserve(n_vocab);
    tokens = {"<unk>", "<s>", "</s>"};
    scores = {0.0f, 0.0f, 0.0f};
    types = {2, 3, 3};
    for (int b = 0; b < 256 && tokens.size() < n_vocab; ++b) {
        tokens.push_back(fmt::format("<0x{:02X}>", b));
        scores.push_back(0.0f);
        types.push_back(6);
    }
    for (uint32_t i = 0; tokens.size() < n_vocab; ++i) {
        tokens.push_back(fmt::format("\u2581w{}", i));
        scores.push_back(-float(i));
        types.push_back(1);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_array_strings("tokenizer.ggml.tokens", tokens);
    w.set_array_f32("tokenizer.ggml.scores", scores);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
}

ModelSpec make_spec(const char* id, const char* name, const char* arch, uint32_t n_vocab,
                    uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv,
                    uint32_t n_ff) {
    ModelSpec s;
    s.id = id;
    s.name = name;
    s.arch = arch;
    s.n_vocab = n_vocab;
    s.n_ctx_train = 32768;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.n_ff = n_ff;
    s.rope_freq_base = 1e6f;
    return s;
}

}  // namespace

void fill_random_blocks(GgmlType type, uint8_t* dst, uint64_t n_blocks, uint64_t seed) {
    const auto layout = ggml_layout(static_cast<uint32_t>(type));
    if (!layout) fail(ErrorKind::invalid_argument, "synth: unknown type");
    Rng rng{seed};
    const size_t block = layout->type_size;
    if (type == GgmlType::MXFP4) {
        // One power-of-two scale byte (E8M0) per block of E2M1 values (magnitudes up to 6):
        // 2^-7 (the byte 120) to 2^-6 gives a standard deviation of about 0.02.
        for (uint64_t b = 0; b < n_blocks; ++b) {
            uint8_t* p = dst + b * block;
            fill_bytes(rng, p, block);
            p[0] = uint8_t(120 + (rng.next() & 1));
        }
        return;
    }
    const ScaleFields f = scale_fields(type);
    for (uint64_t b = 0; b < n_blocks; ++b) {
        uint8_t* p = dst + b * block;
        fill_bytes(rng, p, block);
        if (type == GgmlType::MXFP4) {
            p[0] = uint8_t(119 + (rng.next() & 1));  // 2^-9 or 2^-8 times values up to 12
            continue;
        }
        if (type == GgmlType::TQ2_0) {
            // Ternary codes only (0..2): a code 3 becomes 2.
            for (size_t k = 0; k < 64; ++k) p[k] = uint8_t(p[k] & ~(p[k] & (p[k] >> 1) & 0x55));
        }
        // Vary the scale a little per block, as real blocks do.
        const float jitter = 0.75f + 0.5f * float(rng.next() & 0xff) / 255.0f;
        put_half(p, f.d_offset, f.d * jitter);
        if (f.dmin_offset >= 0) put_half(p, size_t(f.dmin_offset), f.dmin * jitter);
    }
}

std::vector<SynthPreset> synth_presets() {
    std::vector<SynthPreset> presets;
    // An 8-expert top-2 MoE at the 1B-class llama shape: 2.0 B parameters, 0.8 B active per token.
    // The synthetic MoEs: 64-wide heads, 8 experts of which 2 per token, rope base 1e4.
    const auto small_moe = [](ModelSpec spec, uint32_t n_ff_expert) {
        spec.head_dim = 64;
        spec.n_expert = 8;
        spec.n_expert_used = 2;
        spec.n_ff_expert = n_ff_expert;
        spec.rope_freq_base = 1e4f;
        return spec;
    };
    const ModelSpec moe =
        small_moe(make_spec("mixtral-small-moe", "Mixtral-style small MoE (synthetic)", "llama",
                            32000, 2048, 16, 32, 8, 0),
                  2048);
    presets.push_back(
        {moe.id, "8 experts, top-2, 16 layers x 2048 (1.9 B total, 0.7 B active)", moe});
    // The 8-expert top-2 MoE of the memory-budget work (docs/memory-budget.md): 16 layers x 1024,
    // expert FFN 2816 (~750 MB at Q4_K_M); and the same at 8 layers (~390 MB) for CI's cgroup
    // test.
    const ModelSpec budget_moe =
        small_moe(make_spec("moe-750m", "8-expert MoE, 16 x 1024 (synthetic)", "llama", 32000, 1024,
                            16, 16, 4, 0),
                  2816);
    presets.push_back(
        {budget_moe.id, "8 experts, top-2, 16 layers x 1024, expert FFN 2816", budget_moe});
    ModelSpec ci_moe = budget_moe;
    ci_moe.id = "moe-390m";
    ci_moe.name = "8-expert MoE, 8 x 1024 (synthetic)";
    ci_moe.n_layer = 8;
    presets.push_back({ci_moe.id, "8 experts, top-2, 8 layers x 1024, expert FFN 2816", ci_moe});
    // The dense model with the MoE preset's active size: its two experts as one FFN.
    ModelSpec dense = make_spec("mixtral-small-dense", "Dense equivalent of mixtral-small-moe",
                                "llama", 32000, 2048, 16, 32, 8, 4096);
    dense.head_dim = 64;
    dense.rope_freq_base = 1e4f;
    presets.push_back({dense.id, "dense, the active size of mixtral-small-moe (FFN 4096)", dense});
    // Command R7B's shapes in the command-r layout (the released R7B is llama.cpp's cohere2,
    // which adds sliding-window layers; memwall does not read cohere2 files).
    ModelSpec r7 = make_spec("command-r-7b", "Command R 7B shape (command-r layout)", "command-r",
                             256000, 4096, 32, 32, 8, 14336);
    r7.head_dim = 128;
    r7.n_ctx_train = 131072;
    r7.tied_embeddings = true;
    r7.logit_scale = 0.25f;
    presets.push_back({r7.id, "Command R 7B shape in the command-r layout", r7});
    for (const ModelSpec& s : model_catalogue()) presets.push_back({s.id, s.name + " shape", s});
    return presets;
}

ModelSpec synth_preset(std::string_view id) {
    for (const SynthPreset& p : synth_presets()) {
        if (p.id == id) return p.spec;
    }
    if (const ModelSpec* s = find_catalogue_model(id)) {
        for (const SynthPreset& p : synth_presets()) {
            if (p.id == s->id) return p.spec;
        }
    }
    std::string names;
    for (const SynthPreset& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.id;
    fail(ErrorKind::invalid_argument, "synth: unknown preset \"{}\" (presets: {})", id, names);
}

void write_synth_model(const SynthOptions& options, const std::string& path,
                       const std::function<void(const SynthProgress&)>& progress) {
    const ModelSpec spec = options.spec ? *options.spec : synth_preset(options.preset);
    gguf::GgufWriter w =
        spec_gguf_writer(spec, options.recipe, [&](const TensorDesc& t, GgmlType type) {
            return producer_for(t, type, tensor_seed(options.seed, t.name), options.router_skew);
        });
    w.set_string("general.name", fmt::format("{} (synthetic {}, seed {})", spec.name,
                                             recipe_name(options.recipe), options.seed));
    w.set_u32("general.quantization_version", 2);
    add_synthetic_vocab(w, spec.n_vocab);
    SynthProgress p;
    p.tensors_total = w.tensor_count();
    p.bytes_total = w.total_bytes();
    w.write_file(path, [&](size_t done, size_t total) {
        p.tensors_done = done;
        p.tensors_total = total;
        p.bytes_done =
            uint64_t(double(p.bytes_total) * double(done) / double(std::max<size_t>(total, 1)));
        if (progress) progress(p);
    });
}

}  // namespace mw
