// The facts of a model in one quantization from its GGUF header alone: its size, bytes read per
// token, and the model bound from it (or, for an architecture memwall cannot run, an
// approximation with the same buffer shapes).
#include <algorithm>
#include <map>

#include "base/error.h"
#include "plan/planner.h"
#include "tensor/types.h"

namespace mw {
namespace {

// A GGUF header stores each token's text, score and type (and BPE merges as text): without a
// real header the planner assumes this much per token.
constexpr uint64_t kHeaderBytesPerToken = 40;

// A metadata count that may be a scalar or a per-layer array (the largest entry); `fallback`
// when absent or not numeric.
uint32_t meta_u32(const gguf::GgufFile& f, const std::string& key, uint32_t fallback) {
    const gguf::Value* v = f.find(key);
    if (!v) return fallback;
    try {
        if (v->type == gguf::ValueType::array) {
            int64_t best = 0;
            for (uint64_t i = 0; i < v->count; ++i) best = std::max(best, v->elem_i64(i));
            return uint32_t(std::clamp<int64_t>(best, 0, UINT32_MAX));
        }
        return uint32_t(std::min<uint64_t>(v->as_u64(), UINT32_MAX));
    } catch (const std::exception&) {
        return fallback;
    }
}

// Hyper-parameters of any architecture, read leniently (for models memwall cannot run yet).
HParams approximate_hparams(const gguf::GgufFile& f) {
    HParams hp;
    hp.arch = std::string(f.get_string("general.architecture").value_or("unknown"));
    const std::string a = hp.arch + ".";
    hp.n_embd = meta_u32(f, a + "embedding_length", 0);
    hp.n_layer = meta_u32(f, a + "block_count", 0);
    hp.n_head = meta_u32(f, a + "attention.head_count", 0);
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0) {
        fail(ErrorKind::bad_file,
             "{}: cannot plan a \"{}\" model without {}embedding_length, "
             "{}block_count and {}attention.head_count",
             f.name(), hp.arch, a, a, a);
    }
    hp.n_head_kv = meta_u32(f, a + "attention.head_count_kv", hp.n_head);
    hp.n_ff = meta_u32(f, a + "feed_forward_length", 0);
    hp.n_ctx_train = meta_u32(f, a + "context_length", 2048);
    hp.head_dim_k = meta_u32(f, a + "attention.key_length", hp.n_embd / hp.n_head);
    hp.head_dim_v = meta_u32(f, a + "attention.value_length", hp.n_embd / hp.n_head);
    hp.n_rot = meta_u32(f, a + "rope.dimension_count", hp.head_dim_k);
    if (const uint32_t rank = meta_u32(f, a + "attention.kv_lora_rank", 0)) {
        // Multi-head latent attention caches the latent and the RoPE part, once per token.
        hp.head_dim_k = rank + hp.n_rot;
        hp.head_dim_v = rank;
        hp.n_head_kv = 1;
    }
    hp.n_expert = meta_u32(f, a + "expert_count", 0);
    hp.n_expert_used = meta_u32(f, a + "expert_used_count", 0);
    hp.n_ff_expert = meta_u32(f, a + "expert_feed_forward_length", hp.n_ff);
    hp.n_ff_shared_expert = meta_u32(f, a + "expert_shared_feed_forward_length", 0);
    if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens")) {
        hp.n_vocab = uint32_t(std::min<uint64_t>(tokens->count, UINT32_MAX));
    } else if (const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight")) {
        hp.n_vocab = uint32_t(std::min<uint64_t>(embd->ne[1], UINT32_MAX));
    }
    // The reader's bounds (model/hparams.cpp), which no tensor checks here: beyond them the
    // attention layout divides by zero (a KV head count that does not divide the head count)
    // and the sizes overflow.
    auto check = [&](const char* key, uint64_t value, uint64_t lo, uint64_t hi) {
        if (value < lo || value > hi) {
            fail(ErrorKind::bad_file, "{}: {}{} = {} is out of range [{}, {}]", f.name(), a, key,
                 value, lo, hi);
        }
    };
    check("embedding_length", hp.n_embd, 1, 1u << 17);
    check("block_count", hp.n_layer, 1, 4096);
    check("attention.head_count", hp.n_head, 1, 4096);
    check("attention.head_count_kv", hp.n_head_kv, 1, hp.n_head);
    if (hp.n_head % hp.n_head_kv != 0) {
        fail(ErrorKind::bad_file,
             "{}: {}attention.head_count = {} is not a multiple of attention.head_count_kv = {}",
             f.name(), a, hp.n_head, hp.n_head_kv);
    }
    check("attention.key_length", hp.head_dim_k, 0, 1u << 16);
    check("attention.value_length", hp.head_dim_v, 0, 1u << 16);
    check("rope.dimension_count", hp.n_rot, 0, 1u << 16);
    check("context_length", hp.n_ctx_train, 1, 1u << 24);
    check("feed_forward_length", hp.n_ff, 0, 1u << 20);
    check("expert_count", hp.n_expert, 0, 1024);
    check("expert_used_count", hp.n_expert_used, 0, hp.n_expert);
    check("expert_feed_forward_length", hp.n_ff_expert, 0, 1u << 20);
    check("expert_shared_feed_forward_length", hp.n_ff_shared_expert, 0, 1u << 20);
    return hp;
}

// A model with the buffer shapes of `hp` for ForwardScratch::planned_bytes, when the real one
// cannot be bound: the output projection and one layer's widest matrices decide the activation
// scratch.
Model approximate_model(const gguf::GgufFile& f, const HParams& hp) {
    const TypeTraits* q8 = type_traits(GgmlType::Q8_0);
    auto traits_of = [&](const gguf::TensorInfo* t) {
        const TypeTraits* tr = t ? type_traits(t->type) : nullptr;
        return tr && tr->vec_dot ? tr : q8;
    };
    auto matrix = [&](const gguf::TensorInfo* t, int64_t n_cols) {
        WeightMatrix w;
        w.traits = traits_of(t);
        w.n_cols = n_cols;
        w.n_rows = 1;
        w.row_bytes = row_bytes(*w.traits, n_cols - n_cols % w.traits->block_size);
        return w;
    };
    Model m;
    m.hp = hp;
    const gguf::TensorInfo* out = f.find_tensor("output.weight");
    m.output = matrix(out ? out : f.find_tensor("token_embd.weight"), hp.n_embd);
    Layer l;
    const gguf::TensorInfo* down = f.find_tensor("blk.0.ffn_down.weight");
    if (!down) down = f.find_tensor("blk.1.ffn_down_exps.weight");
    l.wq = matrix(f.find_tensor("blk.0.attn_q.weight"), hp.n_embd);
    l.wo = matrix(f.find_tensor("blk.0.attn_output.weight"), int64_t(hp.n_head) * hp.head_dim_v);
    l.ffn_down = matrix(down, std::max({hp.n_ff, hp.n_ff_expert, hp.n_ff_shared_expert}));
    m.layers.push_back(l);
    return m;
}

std::string shorten(std::string s, size_t max) {
    if (s.size() > max) s = s.substr(0, max - 3) + "...";
    return s;
}

}  // namespace

ModelFacts model_facts(const gguf::GgufFile& file, const std::string& quant_label) {
    ModelFacts f;
    f.arch = std::string(file.get_string("general.architecture").value_or("unknown"));
    f.name = std::string(file.get_string("general.name").value_or(""));
    if (f.name.empty()) f.name = file.name().substr(file.name().rfind('/') + 1);
    f.header_bytes = file.data_offset();
    if (const gguf::Value* merges = file.find("tokenizer.ggml.merges")) f.n_merges = merges->count;

    std::map<std::string, int> type_counts;
    for (const gguf::TensorInfo& t : file.tensors()) {
        f.weights_bytes += t.n_bytes;
        f.n_params += t.n_elements;
        if (t.n_dims == 1) f.decoded_vector_bytes += t.n_elements * sizeof(float);
        const auto layout = ggml_layout(t.type);
        type_counts[std::string(layout ? layout->name : "?")]++;
    }
    for (const auto& [name, count] : type_counts) {
        f.quant += fmt::format("{}{} x{}", f.quant.empty() ? "" : ", ", name, count);
    }
    if (!quant_label.empty()) f.quant = quant_label;

    try {
        f.model = Model::bind(file);
        f.hp = f.model.hp;
        f.runnable = true;
    } catch (const Error& e) {
        try {
            f.hp = approximate_hparams(file);
        } catch (const Error&) {
            throw e;  // the reader's reason (field and value) is the more precise
        }
        f.model = approximate_model(file, f.hp);
        f.note = "memwall cannot run it yet: " + shorten(e.what(), 240);
    }
    const HParams& hp = f.hp;
    if (!file.find("tokenizer.ggml.tokens")) {  // a written header: assume a BPE vocabulary
        f.header_bytes += uint64_t(hp.n_vocab) * kHeaderBytesPerToken;
        f.n_merges = hp.n_vocab;
    }

    uint64_t data_end = 0;
    for (const gguf::TensorInfo& t : file.tensors())
        data_end = std::max(data_end, t.offset + t.n_bytes);
    f.file_bytes = f.header_bytes + data_end;

    // Weight bytes and matrix FLOPs per token: every matrix once, the token embedding one row,
    // experts in proportion to those used.
    const bool has_output = file.find_tensor("output.weight") != nullptr;
    uint64_t per_token = 0;
    double flops = 0;
    for (const gguf::TensorInfo& t : file.tensors()) {
        if (t.name == "token_embd.weight") {
            per_token += t.n_bytes / std::max<uint64_t>(1, t.ne[1]);
            if (!has_output) per_token += t.n_bytes;
            continue;
        }
        const bool expert = t.n_dims >= 3 && t.ne[2] > 1 && hp.n_expert > 0;
        const double share = expert ? double(hp.n_expert_used) / double(hp.n_expert) : 1.0;
        per_token += uint64_t(double(t.n_bytes) * share);
        // The prompt's logits come from its last token only: the output matrix is not counted.
        if (t.n_dims >= 2 && t.name != "output.weight") flops += 2.0 * double(t.n_elements) * share;
    }
    f.bytes_per_token = f.runnable ? f.model.bytes_per_token : per_token;
    f.flops_per_token = uint64_t(flops);
    return f;
}

}  // namespace mw
