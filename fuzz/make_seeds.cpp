// Writes the generated seed corpus of every fuzz target, one folder per target:
//   fuzz_gguf/        small valid GGUF files that between them use every value type, every tensor
//                     type, nested arrays, several alignments and a vocab-only layout, plus a
//                     shrunk copy of each GGUF file of SHARED_DIR (same metadata keys and tensor
//                     names and types, arrays cut to a few elements, tensors to one block row);
//   fuzz_vocab/       texts (the llama.cpp tokenizer test strings of SHARED_DIR and a few with
//                     special tokens), each behind the two bytes that pick vocabulary and flags;
//   fuzz_vocab_gguf/  vocab-only files of every tokenizer kind, cut from the vocabularies of
//                     SHARED_DIR to a few hundred tokens (merges and special ids kept consistent);
//   fuzz_model/       tiny complete models (tests/support/tiny_model.h) of every architecture
//                     and tensor type;
//   fuzz_hf_config/   Hugging Face config.json files of every model_type the planner knows;
//   fuzz_safetensors/ small .safetensors files: every dtype, metadata, an empty tensor;
//   fuzz_template/    the chat templates of SHARED_DIR/testdata/chat-templates, the built-in
//                     templates and small templates using each construct;
// so that the fuzzers start from realistic inputs at a size where they run fast.
//
// usage: fuzz_make_seeds OUT_DIR [SHARED_DIR]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "chat/chat_template.h"
#include "format/ggml_types.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/tiny_model.h"

namespace {

using namespace mw;
using namespace mw::gguf;

constexpr uint64_t kMaxArrayElements = 16;

void save(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) fail(ErrorKind::io, "{}: cannot write", path);
}

// One tensor of each type the format knows, one block row each.
GgufWriter every_tensor_type(uint32_t alignment) {
    GgufWriter w(alignment);
    w.set_string("general.architecture", "llama");
    for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
        const auto layout = ggml_layout(id);
        if (!layout) continue;
        const uint64_t rows = 1 + id % 3;
        std::vector<uint64_t> ne = {layout->block_size, rows};
        w.add_tensor(fmt::format("t.{}", layout->name), GgmlType(id), ne,
                     [n = layout->type_size * rows](uint8_t* dst) {
                         for (uint64_t i = 0; i < n; ++i) dst[i] = uint8_t(i * 7 + 1);
                     });
    }
    return w;
}

GgufWriter every_value_type() {
    GgufWriter w;
    w.set_u8("v.u8", 200);
    w.set_i8("v.i8", -100);
    w.set_u16("v.u16", 60000);
    w.set_i16("v.i16", -30000);
    w.set_u32("v.u32", 4000000000u);
    w.set_i32("v.i32", -2000000000);
    w.set_u64("v.u64", ~0ull);
    w.set_i64("v.i64", -(1ll << 62));
    w.set_f32("v.f32", 1.5f);
    w.set_f64("v.f64", 1e300);
    w.set_bool("v.bool", true);
    w.set_string("v.string", "h\xc3\xa9llo");
    w.set_array_strings("v.strings", {"a", "", "bc"});
    const int32_t ints[] = {1, -2, 3};
    w.set_array_i32("v.i32s", ints);
    const uint32_t uints[] = {7, 8};
    w.set_array_u32("v.u32s", uints);
    const float floats[] = {0.5f, -1.0f, 1e30f};
    w.set_array_f32("v.f32s", floats);
    const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    w.add_tensor("t", GgmlType::F32, {8},
                 std::span(reinterpret_cast<const uint8_t*>(data), sizeof data));
    return w;
}

GgufWriter vocab_only() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_array_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b", "ab", "\xc4\xa0"});
    const float scores[] = {0, 0, -1, -2, -3, -4};
    w.set_array_f32("tokenizer.ggml.scores", scores);
    const int32_t types[] = {3, 3, 1, 1, 1, 1};
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_array_strings("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 0);
    w.set_u32("tokenizer.ggml.eos_token_id", 1);
    return w;
}

// Arrays of arrays cannot be made with the writer's typed setters: spelled out byte by byte.
std::vector<uint8_t> nested_arrays() {
    std::vector<uint8_t> out;
    auto u32 = [&](uint32_t v) {
        out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
    };
    auto u64 = [&](uint64_t v) {
        u32(uint32_t(v));
        u32(uint32_t(v >> 32));
    };
    u32(kMagic);
    u32(3);
    u64(0);  // tensors
    u64(1);  // key-value pairs
    u64(8);
    out.insert(out.end(), {'x', '.', 'n', 'e', 's', 't', 'e', 'd'});
    u32(uint32_t(ValueType::array));
    u32(uint32_t(ValueType::array));  // array of 2 arrays of arrays
    u64(2);
    for (int i = 0; i < 2; ++i) {
        u32(uint32_t(ValueType::array));
        u64(1);
        u32(uint32_t(ValueType::u16));
        u64(2);
        u32(0xffff0001u);
    }
    return out;
}

// The value with arrays cut to their first elements (nested arrays too).
Value shrink(const Value& v) {
    Value s = v;
    if (s.type != ValueType::array) return s;
    s.count = std::min(s.count, kMaxArrayElements);
    if (s.elem_type == ValueType::string) s.strings.resize(s.count);
    if (s.elem_type == ValueType::array) {
        s.arrays.resize(s.count);
        for (Value& a : s.arrays) a = shrink(a);
    }
    return s;
}

std::vector<uint8_t> shrunk_copy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    const GgufFile f = GgufFile::parse(bytes, path);
    GgufWriter w(f.alignment());
    for (const KeyValue& kv : f.metadata()) {
        if (kv.key != "general.alignment") w.set_value(kv.key, shrink(kv.value));
    }
    for (const TensorInfo& t : f.tensors()) {
        const auto layout = ggml_layout(t.type);
        std::vector<uint64_t> ne(t.ne, t.ne + t.n_dims);
        ne[0] = layout->block_size;
        for (size_t d = 1; d < ne.size(); ++d) ne[d] = std::min<uint64_t>(ne[d], 2);
        uint64_t n = 1;
        for (uint64_t d : ne) n *= d;
        const uint64_t n_bytes = n / layout->block_size * layout->type_size;
        w.add_tensor(t.name, GgmlType(t.type), ne, std::span(t.data, n_bytes));
    }
    return w.to_bytes();
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ErrorKind::io, "{}: cannot read", path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string base_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

// ---- fuzz_vocab: texts ----------------------------------------------------------------------

void write_text_seeds(const std::string& out, const std::string& shared) {
    std::vector<std::string> texts = {
        "<s>Hello</s> <|endoftext|><|im_start|>user\n<|im_end|>",
        "[CLS] hello [SEP] [MASK] [UNK]",
        "\xff\xfe\xc3\x28 \xe2\x82 \xf0\x9f\xa6\x99\xf0\x9f",  // invalid and truncated UTF-8
        std::string("a\0b\r\n\t\v\f", 9),
    };
    std::error_code ec;
    std::vector<std::string> inputs;
    for (const auto& entry :
         std::filesystem::directory_iterator(shared + "/testdata/tokenizer", ec)) {
        if (entry.path().extension() == ".inp") inputs.push_back(entry.path().string());
    }
    std::sort(inputs.begin(), inputs.end());
    std::set<std::string> seen(texts.begin(), texts.end());
    constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
    for (const std::string& path : inputs) {
        const std::vector<uint8_t> bytes = read_file(path);
        std::string_view rest(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        while (!rest.empty()) {
            const size_t end = rest.find(kSeparator);
            const std::string text(rest.substr(0, end));
            if (seen.insert(text).second) texts.push_back(text);
            if (end == rest.npos) break;
            rest.remove_prefix(end + kSeparator.size());
        }
    }
    // Byte 0 picks the vocabulary (modulo their number), byte 1 the flags.
    for (size_t i = 0; i < texts.size(); ++i) {
        std::vector<uint8_t> seed = {uint8_t(i), uint8_t(i * 7 % 32)};
        seed.insert(seed.end(), texts[i].begin(), texts[i].end());
        save(fmt::format("{}/text{:03}", out, i), seed);
    }
}

// ---- fuzz_vocab_gguf: vocabularies cut to their first tokens --------------------------------

// The vocabulary of `f` with its first `n_keep` tokens, the merges among those, and the special
// ids that still point into it; other tokenizer keys as they are (small ones only).
std::vector<uint8_t> cut_vocab(const GgufFile& f, uint64_t n_keep) {
    GgufWriter w;
    const Value* tokens = f.get_array("tokenizer.ggml.tokens", ValueType::string);
    if (!tokens) fail(ErrorKind::bad_file, "{}: no tokenizer.ggml.tokens", f.name());
    n_keep = std::min(n_keep, tokens->count);
    std::set<std::string_view> kept(tokens->strings.begin(), tokens->strings.begin() + n_keep);
    for (const KeyValue& kv : f.metadata()) {
        const std::string_view key = kv.key;
        if (key == "general.architecture") w.set_value(key, kv.value);
        if (key.substr(0, 10) != "tokenizer.") continue;
        const Value& v = kv.value;
        if (key == "tokenizer.ggml.tokens") {
            w.set_array_strings(key, {tokens->strings.begin(), tokens->strings.begin() + n_keep});
        } else if (key == "tokenizer.ggml.scores" && v.type == ValueType::array) {
            std::vector<float> scores;
            for (uint64_t i = 0; i < std::min(n_keep, v.count); ++i) {
                scores.push_back(float(v.elem_f64(i)));
            }
            w.set_array_f32(key, scores);
        } else if (key == "tokenizer.ggml.token_type" && v.type == ValueType::array) {
            std::vector<int32_t> types;
            for (uint64_t i = 0; i < std::min(n_keep, v.count); ++i) {
                types.push_back(int32_t(v.elem_i64(i)));
            }
            w.set_array_i32(key, types);
        } else if (key == "tokenizer.ggml.merges" && v.type == ValueType::array) {
            std::vector<std::string> merges;
            for (const std::string_view m : v.strings) {
                const size_t space = m.find(' ', 1);
                if (space == m.npos) continue;
                const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
                if (kept.count(left) && kept.count(right) &&
                    kept.count(std::string(left) + std::string(right))) {
                    merges.emplace_back(m);
                }
            }
            w.set_array_strings(key, merges);
        } else if (key.ends_with("_token_id")) {
            if (v.is_integer() && v.as_i64() >= 0 && uint64_t(v.as_i64()) < n_keep) {
                w.set_value(key, v);
            }
        } else if (v.type != ValueType::array &&
                   (v.type != ValueType::string || v.str.size() < 512)) {
            w.set_value(key, v);
        }
    }
    return w.to_bytes();
}

void write_vocab_seeds(const std::string& out, const std::string& shared) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(shared + "/testdata/tokenizer", ec)) {
        if (entry.path().extension() == ".gguf") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const char* model :
         {"/models/stories260K.gguf", "/reference/models/qwen2-tiny-F16.gguf"}) {
        if (std::filesystem::exists(shared + model)) files.push_back(shared + model);
    }
    for (const std::string& path : files) {
        const std::vector<uint8_t> bytes = read_file(path);
        const GgufFile f = GgufFile::parse(bytes, path);
        const std::string model(f.get_string("tokenizer.ggml.model").value_or(""));
        // Enough tokens for byte fallback (SPM), the first merges (BPE), single characters (WPM).
        const uint64_t n_keep = model == "bert" ? 2500 : model == "llama" ? 600 : 900;
        save(out + "/" + base_name(path) + ".cut.gguf", cut_vocab(f, n_keep));
    }
    for (const auto vocab : {test::TinyVocab::spm, test::TinyVocab::bpe}) {
        GgufWriter w;
        w.set_string("general.architecture", "llama");
        test::add_tiny_vocab(w, vocab);
        save(out + (vocab == test::TinyVocab::spm ? "/tiny-spm.gguf" : "/tiny-bpe.gguf"),
             w.to_bytes());
    }
    save(out + "/vocab-only.gguf", vocab_only().to_bytes());
}

// ---- fuzz_model: tiny models ----------------------------------------------------------------

void write_model_seeds(const std::string& out) {
    // Every tensor type as the type of the matrices of a llama model (the types memwall cannot
    // compute with are refused by Model::bind: seeds for those checks).
    for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
        const auto layout = ggml_layout(id);
        if (!layout) continue;
        test::TinyModel spec;
        spec.type = GgmlType(id);
        save(fmt::format("{}/llama-{}.gguf", out, layout->name), test::tiny_model_bytes(spec));
    }
    struct Variant {
        const char* name;
        test::TinyModel spec;
    };
    const Variant variants[] = {
        {"mistral-2-layers-align64",
         {.arch = "mistral", .type = GgmlType::F16, .n_layer = 2, .alignment = 64}},
        {"qwen2-tied-bpe",
         {.arch = "qwen2",
          .type = GgmlType::F16,
          .tied_output = true,
          .vocab = test::TinyVocab::bpe}},
        {"qwen3-Q8_0", {.arch = "qwen3", .type = GgmlType::Q8_0}},
        {"llama-moe-Q4_K", {.type = GgmlType::Q4_K, .n_expert = 4}},
        {"qwen2moe-F32", {.arch = "qwen2moe", .n_expert = 4, .vocab = test::TinyVocab::bpe}},
        {"qwen3moe-Q4_0",
         {.arch = "qwen3moe", .type = GgmlType::Q4_0, .n_expert = 3, .n_expert_used = 1}},
        {"llama-gqa-4-heads",
         {.n_embd = 32, .n_head = 4, .n_head_kv = 2, .head_dim = 8, .n_ff = 40}},
    };
    for (const Variant& v : variants) {
        save(fmt::format("{}/{}.gguf", out, v.name), test::tiny_model_bytes(v.spec));
    }
}

// ---- fuzz_hf_config: config.json of every model_type the planner knows ----------------------

void write_config_seeds(const std::string& out) {
    const char* const configs[] = {
        R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
"intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
"num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
"rope_theta": 500000.0, "tie_word_embeddings": false,
"rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "_name_or_path": "llama-3.1-8b"})",
        R"({"model_type": "mistral", "hidden_size": 64, "intermediate_size": 128,
"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
"head_dim": 16, "max_position_embeddings": 2048})",
        R"({"model_type": "mixtral", "hidden_size": 128, "intermediate_size": 256,
"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
"num_local_experts": 8, "num_experts_per_tok": 2})",
        R"({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
"num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
"vocab_size": 151936, "tie_word_embeddings": true, "rope_theta": 1000000.0})",
        R"({"model_type": "qwen2_moe", "hidden_size": 256, "intermediate_size": 512,
"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 4096,
"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
"shared_expert_intermediate_size": 256})",
        R"({"model_type": "qwen3_moe", "hidden_size": 256, "num_hidden_layers": 2,
"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 4096,
"num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 96})",
        R"({"model_type": "qwen3", "hidden_size": 256, "intermediate_size": 768,
"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 128,
"vocab_size": 4096})",
        R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
"hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 4,
"num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144}})",
        R"({"model_type": "gemma2", "hidden_size": 256, "intermediate_size": 512,
"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
        R"({"model_type": "phi3", "hidden_size": 256, "intermediate_size": 512,
"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
        R"({"model_type": "cohere", "hidden_size": 256, "intermediate_size": 512,
"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})",
        R"({"model_type": "deepseek_v2", "hidden_size": 512, "intermediate_size": 1024,
"num_hidden_layers": 3, "num_attention_heads": 8, "vocab_size": 2048, "n_routed_experts": 8,
"num_experts_per_tok": 2, "moe_intermediate_size": 128, "n_shared_experts": 2,
"first_k_dense_replace": 1, "kv_lora_rank": 64, "qk_rope_head_dim": 16,
"qk_nope_head_dim": 32, "v_head_dim": 32})",
    };
    for (size_t i = 0; i < std::size(configs); ++i) {
        const std::string_view text = configs[i];
        save(fmt::format("{}/config{:02}.json", out, i),
             std::vector<uint8_t>(text.begin(), text.end()));
    }
}

// ---- fuzz_safetensors: small valid files --------------------------------------------------------

std::vector<uint8_t> safetensors_file(const std::string& header_json, size_t data_bytes) {
    std::vector<uint8_t> bytes(8);
    const uint64_t n = header_json.size();
    for (int i = 0; i < 8; ++i) bytes[size_t(i)] = uint8_t(n >> (8 * i));
    bytes.insert(bytes.end(), header_json.begin(), header_json.end());
    for (size_t i = 0; i < data_bytes; ++i) bytes.push_back(uint8_t(i * 37 + 11));
    return bytes;
}

void write_safetensors_seeds(const std::string& out) {
    const struct {
        const char* dtype;
        size_t size;
    } dtypes[] = {{"BOOL", 1}, {"U8", 1},   {"I8", 1},  {"U16", 2},     {"I16", 2},
                  {"F16", 2},  {"BF16", 2}, {"U32", 4}, {"I32", 4},     {"F32", 4},
                  {"U64", 8},  {"I64", 8},  {"F64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    std::string every = "{";
    size_t offset = 0;
    for (const auto& d : dtypes) {
        const size_t n = 6 * d.size;  // shape [2, 3]
        every +=
            fmt::format(R"("t_{}": {{"dtype": "{}", "shape": [2, 3], "data_offsets": [{}, {}]}}, )",
                        d.dtype, d.dtype, offset, offset + n);
        offset += n;
    }
    every += R"("__metadata__": {"format": "pt"}})";
    save(out + "/every-dtype.safetensors", safetensors_file(every, offset));
    save(out + "/llama-layer.safetensors",
         safetensors_file(
             R"({"model.layers.0.self_attn.q_proj.weight": {"dtype": "BF16", "shape": [8, 16], )"
             R"("data_offsets": [0, 256]}, "model.norm.weight": {"dtype": "F32", "shape": [16], )"
             R"("data_offsets": [256, 320]}, "empty": {"dtype": "F16", "shape": [0, 4], )"
             R"("data_offsets": [320, 320]}})",
             320));
    save(out + "/scalar.safetensors",
         safetensors_file(R"({"s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}})", 4));
    save(out + "/empty.safetensors", safetensors_file("{}", 0));
}

// ---- fuzz_template: real chat templates, the built-ins, one template per construct ----------

void write_template_seeds(const std::string& out, const std::string& shared) {
    namespace fs = std::filesystem;
    const auto save_text = [&](const std::string& name, std::string_view text) {
        save(out + "/" + name, std::vector<uint8_t>(text.begin(), text.end()));
    };
    const std::string dir = shared + "/testdata/chat-templates/templates";
    if (!shared.empty() && fs::is_directory(dir)) {
        for (const auto& entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() != ".jinja") continue;
            std::ifstream in(entry.path(), std::ios::binary);
            const std::string text((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
            save_text("shared-" + entry.path().filename().string(), text);
        }
    }
    for (const auto& b : chat::builtins()) save_text("builtin-" + std::string(b.name), b.source);
    const char* const kConstructs[] = {
        "{% for m in messages %}{{ loop.index0 }}{{ m.role | upper }}{% endfor %}",
        ("{% set ns = namespace(x=0) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}"
         "{% endfor %}{{ ns.x }}"),
        "{% macro m(a, b=1) %}{{ a ~ b }}{{ caller() }}{% endmacro %}{% call m(2) %}c{% endcall %}",
        "{{ messages | selectattr('role', 'eq', 'user') | map(attribute='content') | join(',') }}",
        "{{ tools | tojson(indent=2) }}{{ messages[1:][::-1] | length }}",
        "{%- if messages[0].role == 'system' -%}{{ raise_exception('no') }}{%- endif -%}",
        "{{ '%s %d' % ('a', 1) }}{{ '{:>5}'.format('x') }}{{ 'a b'.split() }}",
        "{% for x in [1, [2, [3]]] recursive %}{{ loop(x) if x is iterable else x }}{% endfor %}",
        "{% raw %}{{ x }}{% endraw %}{# c #}{{ 1 if true else 2 }}",
        "{% filter upper %}{% set t %}x{% endset %}{{ t }}{% endfilter %}",
    };
    int i = 0;
    for (const char* t : kConstructs) save_text(fmt::format("construct-{}.jinja", i++), t);
}

// ---- fuzz_gguf ------------------------------------------------------------------------------

void write_gguf_seeds(const std::string& out, const std::vector<std::string>& shared_files) {
    save(out + "/every-tensor-type.gguf", every_tensor_type(32).to_bytes());
    save(out + "/every-tensor-type-align8.gguf", every_tensor_type(8).to_bytes());
    save(out + "/every-tensor-type-align64.gguf", every_tensor_type(64).to_bytes());
    save(out + "/every-value-type.gguf", every_value_type().to_bytes());
    save(out + "/vocab-only.gguf", vocab_only().to_bytes());
    save(out + "/nested-arrays.gguf", nested_arrays());
    save(out + "/empty.gguf", GgufWriter().to_bytes());
    std::vector<uint8_t> v2 = every_value_type().to_bytes();
    v2[4] = 2;  // GGUF v2 has the same layout as v3
    save(out + "/version2.gguf", v2);
    for (const std::string& path : shared_files) {
        save(out + "/" + base_name(path) + ".small.gguf", shrunk_copy(path));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: %s OUT_DIR [SHARED_DIR]\n", argv[0]);
        return 2;
    }
    namespace fs = std::filesystem;
    const std::string out = argv[1];
    const std::string shared = argc > 2 ? argv[2] : "";
    try {
        std::vector<std::string> shared_files;
        if (!shared.empty()) {
            for (const auto& entry : fs::recursive_directory_iterator(shared)) {
                if (entry.is_regular_file() && entry.path().extension() == ".gguf") {
                    shared_files.push_back(entry.path().string());
                }
            }
            std::sort(shared_files.begin(), shared_files.end());
        }
        for (const char* target : {"fuzz_gguf", "fuzz_vocab", "fuzz_vocab_gguf", "fuzz_model",
                                   "fuzz_hf_config", "fuzz_safetensors", "fuzz_template"}) {
            fs::create_directories(out + "/" + target);
        }
        write_gguf_seeds(out + "/fuzz_gguf", shared_files);
        write_text_seeds(out + "/fuzz_vocab", shared);
        write_vocab_seeds(out + "/fuzz_vocab_gguf", shared);
        write_model_seeds(out + "/fuzz_model");
        write_config_seeds(out + "/fuzz_hf_config");
        write_safetensors_seeds(out + "/fuzz_safetensors");
        write_template_seeds(out + "/fuzz_template", shared);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
