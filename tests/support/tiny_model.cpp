#include "support/tiny_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace mw::test {
namespace {

// Deterministic bytes in [0, 0x3C): read as fp16, bf16 or f32 (at any alignment) they are finite
// and below 1, so every block scale a decoder reads is a number.
uint8_t weight_byte(uint64_t seed, uint64_t i) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return uint8_t(x % 0x3C);
}

GgmlLayout layout_of(GgmlType type) {
    return ggml_layout(uint32_t(type)).value_or(GgmlLayout{"?", 1, 1});
}

class TensorWriter {
  public:
    TensorWriter(gguf::GgufWriter& w, GgmlType type, uint32_t seed)
        : w_(w), type_(type), seed_(seed) {}

    // A matrix (or a stack of experts) in the model's type when its rows hold whole blocks.
    void matrix(const std::string& name, std::vector<uint64_t> ne) {
        const GgmlType t = ne[0] % layout_of(type_).block_size == 0 ? type_ : GgmlType::F16;
        filled(name, t, std::move(ne));
    }

    void filled(const std::string& name, GgmlType t, std::vector<uint64_t> ne) {
        const GgmlLayout layout = layout_of(t);
        uint64_t n = 1;
        for (uint64_t d : ne) n *= d;
        const uint64_t n_bytes = n / layout.block_size * layout.type_size;
        const uint64_t seed = uint64_t(seed_) << 32 | n_tensors_++;
        w_.add_tensor(name, t, std::move(ne), [seed, n_bytes](uint8_t* dst) {
            for (uint64_t i = 0; i < n_bytes; ++i) dst[i] = weight_byte(seed, i);
        });
    }

    void ones(const std::string& name, uint64_t n) {
        w_.add_tensor(name, GgmlType::F32, {n}, [n](uint8_t* dst) {
            const float one = 1.0f;
            for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + 4 * i, &one, 4);
        });
    }

  private:
    gguf::GgufWriter& w_;
    GgmlType type_;
    uint32_t seed_;
    uint64_t n_tensors_ = 0;
};

struct VocabEntry {
    const char* text;
    float score;
    int32_t type;  // tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 6 byte
};

// SentencePiece: no byte token for most bytes, so text outside these pieces becomes <unk>.
constexpr VocabEntry kSpmVocab[] = {
    {"<unk>", 0, 2},
    {"<s>", 0, 3},
    {"</s>", 0, 3},
    {"<0x0A>", 0, 6},
    {"<0xFF>", 0, 6},
    {"\xE2\x96\x81", -1, 1},
    {"a", -2, 1},
    {"b", -3, 1},
    {"h", -4, 1},
    {"i", -5, 1},
    {"\xE2\x96\x81"
     "a",
     -6, 1},
    {"ab", -7, 1},
    {"\xE2\x96\x81"
     "ab",
     -8, 1},
    {"\xE2\x96\x81"
     "h",
     -9, 1},
    {"\xE2\x96\x81"
     "hi",
     -10, 1},
    {"<|im_end|>", 0, 3},
};

// Byte-level BPE: "Ġ" is the space, "Ċ" the newline, in GPT-2's byte alphabet.
constexpr VocabEntry kBpeVocab[] = {
    {"a", 0, 1},
    {"b", 0, 1},
    {"h", 0, 1},
    {"i", 0, 1},
    {"\xC4\xA0", 0, 1},
    {"\xC4\x8A", 0, 1},
    {"!", 0, 1},
    {".", 0, 1},
    {"ab", 0, 1},
    {"\xC4\xA0"
     "a",
     0, 1},
    {"\xC4\xA0"
     "h",
     0, 1},
    {"hi", 0, 1},
    {"\xC4\xA0"
     "hi",
     0, 1},
    {"\xC4\xA0"
     "ab",
     0, 1},
    {"<|im_end|>", 0, 3},
    {"<|endoftext|>", 0, 3},
};
const std::vector<std::string> kBpeMerges = {"a b",
                                             "\xC4\xA0 a",
                                             "\xC4\xA0 h",
                                             "h i",
                                             "\xC4\xA0"
                                             "h i",
                                             "\xC4\xA0"
                                             "a b"};

}  // namespace

uint32_t tiny_vocab_size(TinyVocab vocab) {
    return vocab == TinyVocab::spm ? uint32_t(std::size(kSpmVocab))
                                   : uint32_t(std::size(kBpeVocab));
}

void add_tiny_vocab(gguf::GgufWriter& w, TinyVocab vocab) {
    const bool spm = vocab == TinyVocab::spm;
    std::vector<std::string> texts;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (const VocabEntry& e :
         spm ? std::span<const VocabEntry>(kSpmVocab) : std::span<const VocabEntry>(kBpeVocab)) {
        texts.emplace_back(e.text);
        scores.push_back(e.score);
        types.push_back(e.type);
    }
    w.set_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
    if (!spm) w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_array_strings("tokenizer.ggml.tokens", texts);
    w.set_array_f32("tokenizer.ggml.scores", scores);
    w.set_array_i32("tokenizer.ggml.token_type", types);
    if (spm) {
        w.set_u32("tokenizer.ggml.bos_token_id", 1);
        w.set_u32("tokenizer.ggml.eos_token_id", 2);
        w.set_u32("tokenizer.ggml.unknown_token_id", 0);
        w.set_bool("tokenizer.ggml.add_bos_token", true);
    } else {
        w.set_array_strings("tokenizer.ggml.merges", kBpeMerges);
        const uint32_t end = uint32_t(std::size(kBpeVocab)) - 1;
        w.set_u32("tokenizer.ggml.bos_token_id", end);
        w.set_u32("tokenizer.ggml.eos_token_id", end);
    }
}

gguf::GgufWriter tiny_model_writer(const TinyModel& s) {
    gguf::GgufWriter w(s.alignment);
    const std::string a = s.arch + ".";
    const bool moe = s.n_expert > 0;
    const uint32_t n_embd = std::max(s.n_embd, layout_of(s.type).block_size);
    const uint64_t n_vocab = tiny_vocab_size(s.vocab);
    const uint64_t n_q = uint64_t(s.n_head) * s.head_dim, n_kv = uint64_t(s.n_head_kv) * s.head_dim;

    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", fmt::format("tiny-{}-{}", s.arch, layout_of(s.type).name));
    w.set_u32(a + "context_length", 64);
    w.set_u32(a + "embedding_length", n_embd);
    w.set_u32(a + "block_count", s.n_layer);
    w.set_u32(a + "feed_forward_length", s.n_ff);
    w.set_u32(a + "attention.head_count", s.n_head);
    w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
    w.set_u32(a + "attention.key_length", s.head_dim);
    w.set_u32(a + "attention.value_length", s.head_dim);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32(a + "rope.freq_base", 10000.0f);
    if (moe) {
        w.set_u32(a + "expert_count", s.n_expert);
        w.set_u32(a + "expert_used_count", s.n_expert_used);
        w.set_u32(a + "expert_feed_forward_length", s.n_ff);
        if (s.arch == "qwen2moe") w.set_u32(a + "expert_shared_feed_forward_length", s.n_ff);
    }
    add_tiny_vocab(w, s.vocab);

    TensorWriter t(w, s.type, s.seed);
    t.matrix("token_embd.weight", {n_embd, n_vocab});
    t.ones("output_norm.weight", n_embd);
    if (!s.tied_output) t.matrix("output.weight", {n_embd, n_vocab});
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = fmt::format("blk.{}.", il);
        t.ones(p + "attn_norm.weight", n_embd);
        t.matrix(p + "attn_q.weight", {n_embd, n_q});
        t.matrix(p + "attn_k.weight", {n_embd, n_kv});
        t.matrix(p + "attn_v.weight", {n_embd, n_kv});
        t.matrix(p + "attn_output.weight", {n_q, n_embd});
        if (s.arch == "qwen2" || s.arch == "qwen2moe") {
            t.filled(p + "attn_q.bias", GgmlType::F32, {n_q});
            t.filled(p + "attn_k.bias", GgmlType::F32, {n_kv});
            t.filled(p + "attn_v.bias", GgmlType::F32, {n_kv});
        }
        if (s.arch == "qwen3" || s.arch == "qwen3moe") {
            t.ones(p + "attn_q_norm.weight", s.head_dim);
            t.ones(p + "attn_k_norm.weight", s.head_dim);
        }
        t.ones(p + "ffn_norm.weight", n_embd);
        if (!moe) {
            t.matrix(p + "ffn_gate.weight", {n_embd, s.n_ff});
            t.matrix(p + "ffn_up.weight", {n_embd, s.n_ff});
            t.matrix(p + "ffn_down.weight", {s.n_ff, n_embd});
            continue;
        }
        t.filled(p + "ffn_gate_inp.weight", GgmlType::F32, {n_embd, s.n_expert});
        t.matrix(p + "ffn_gate_exps.weight", {n_embd, s.n_ff, s.n_expert});
        t.matrix(p + "ffn_up_exps.weight", {n_embd, s.n_ff, s.n_expert});
        t.matrix(p + "ffn_down_exps.weight", {s.n_ff, n_embd, s.n_expert});
        if (s.arch == "qwen2moe") {
            t.filled(p + "ffn_gate_inp_shexp.weight", GgmlType::F32, {n_embd, 1});
            t.matrix(p + "ffn_gate_shexp.weight", {n_embd, s.n_ff});
            t.matrix(p + "ffn_up_shexp.weight", {n_embd, s.n_ff});
            t.matrix(p + "ffn_down_shexp.weight", {s.n_ff, n_embd});
        }
    }
    return w;
}

std::vector<uint8_t> tiny_model_bytes(const TinyModel& spec) {
    return tiny_model_writer(spec).to_bytes();
}

}  // namespace mw::test
