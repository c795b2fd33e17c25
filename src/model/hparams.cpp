#include "model/hparams.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/arch/arch.h"

namespace mw {

std::optional<uint32_t> get_arch_u32(const gguf::GgufFile& f, const std::string& arch,
                                     const std::string& key) {
    const std::string full = arch + "." + key;
    const gguf::Value* v = f.find(full);
    if (!v) return std::nullopt;
    if (v->type == gguf::ValueType::array) {
        const gguf::Value* a = f.get_array(full, gguf::ValueType::u32);
        if (a->count == 0) fail(ErrorKind::bad_file, "{}: {} is an empty array", f.name(), full);
        // The array accessors do not know the key: a float or huge element is reported here.
        auto element = [&](uint64_t i) {
            try {
                return a->elem_i64(i);
            } catch (const Error& e) {
                fail(ErrorKind::bad_file, "{}: {}[{}]: {}", f.name(), full, i, e.what());
            }
        };
        const int64_t first = element(0);
        for (uint64_t i = 1; i < a->count; ++i) {
            if (element(i) != first) {
                fail(ErrorKind::unsupported,
                     "{}: {} differs between layers ({} vs {} at layer {}); per-layer sizes are "
                     "not supported",
                     f.name(), full, first, element(i), i);
            }
        }
        if (first < 0 || first > int64_t(UINT32_MAX)) {
            fail(ErrorKind::bad_file, "{}: {} = {} is out of range", f.name(), full, first);
        }
        return uint32_t(first);
    }
    return f.get_u32(full);
}

uint32_t require_u32(const gguf::GgufFile& f, const std::string& arch, const std::string& key) {
    const auto v = get_arch_u32(f, arch, key);
    if (!v)
        fail(ErrorKind::bad_file, "{}: required metadata \"{}.{}\" is missing", f.name(), arch,
             key);
    return *v;
}

void check_range(const gguf::GgufFile& f, const char* what, uint64_t value, uint64_t lo,
                 uint64_t hi) {
    if (value < lo || value > hi) {
        fail(ErrorKind::bad_file, "{}: {} = {} is out of range [{}, {}]", f.name(), what, value, lo,
             hi);
    }
}

float positive_f32(const gguf::GgufFile& f, const std::string& key, float fallback) {
    const float v = f.get_f32(key).value_or(fallback);
    if (!(v > 0.0f && std::isfinite(v))) {
        fail(ErrorKind::bad_file, "{}: {} = {} must be a positive number", f.name(), key, v);
    }
    return v;
}

bool is_supported_arch(const std::string& arch) {
    return find_arch_spec(arch) != nullptr;
}

std::string supported_archs() {
    std::string names;
    for (const ArchSpec& s : arch_specs()) {
        if (!names.empty()) names += ", ";
        names += s.name;
    }
    return names;
}

uint32_t HParams::n_recurrent_layers() const {
    uint32_t n = 0;
    for (LayerKind k : layer_kinds) n += k != LayerKind::attention ? 1 : 0;
    return n;
}

uint64_t HParams::recurrent_conv_floats() const {
    if (shortconv_l_cache > 0) return uint64_t(shortconv_l_cache - 1) * n_embd;
    return delta_net.conv_kernel > 0
               ? uint64_t(delta_net.conv_kernel - 1) * delta_net.conv_channels()
               : 0;
}

uint64_t HParams::recurrent_state_floats() const {
    return shortconv_l_cache > 0 ? recurrent_conv_floats() : delta_net.state_floats();
}

std::vector<uint32_t> get_arch_u32_per_layer(const gguf::GgufFile& f, const std::string& arch,
                                             const std::string& key, uint32_t n_layer) {
    const std::string full = arch + "." + key;
    const gguf::Value* v = f.find(full);
    if (!v) return {};
    if (v->type != gguf::ValueType::array) {
        const auto one = f.get_u32(full);
        return std::vector<uint32_t>(n_layer, one.value_or(0));
    }
    const gguf::Value* a = f.get_array(full, gguf::ValueType::u32);
    if (a->count != n_layer) {
        fail(ErrorKind::bad_file, "{}: {} has {} entries for {} layers (block_count)", f.name(),
             full, a->count, n_layer);
    }
    std::vector<uint32_t> out(n_layer);
    for (uint32_t i = 0; i < n_layer; ++i) {
        const int64_t e = a->elem_i64(i);
        if (e < 0 || e > int64_t(UINT32_MAX)) {
            fail(ErrorKind::bad_file, "{}: {}[{}] = {} is out of range", f.name(), full, i, e);
        }
        out[i] = uint32_t(e);
    }
    return out;
}

HParams read_hparams(const gguf::GgufFile& f) {
    HParams hp;
    const auto arch = f.get_string("general.architecture");
    if (!arch)
        fail(ErrorKind::bad_file, "{}: metadata \"general.architecture\" is missing", f.name());
    hp.arch = std::string(*arch);
    const ArchSpec* info = find_arch_spec(hp.arch);
    if (!info) {
        fail(ErrorKind::unsupported,
             "{}: general.architecture = \"{}\" is not supported (supported: {})", f.name(),
             hp.arch, supported_archs());
    }
    if (const auto name = f.get_string("general.name")) hp.name = std::string(*name);
    const std::string& a = hp.arch;

    hp.n_embd = require_u32(f, a, "embedding_length");
    hp.n_layer = require_u32(f, a, "block_count");
    hp.n_head = require_u32(f, a, "attention.head_count");
    // Per-layer arrays: the largest entry; the architecture's read hook says what the others mean.
    const auto largest = [&](const char* key) {
        uint32_t n = 0;
        for (uint32_t v : get_arch_u32_per_layer(f, a, key, hp.n_layer)) n = std::max(n, v);
        return n;
    };
    if (info->per_layer_kv_heads) {
        hp.n_head_kv = largest("attention.head_count_kv");
        if (!f.find(a + ".attention.head_count_kv")) hp.n_head_kv = hp.n_head;
    } else {
        hp.n_head_kv = get_arch_u32(f, a, "attention.head_count_kv").value_or(hp.n_head);
    }
    hp.n_ctx_train = get_arch_u32(f, a, "context_length").value_or(2048);
    hp.n_ff = info->per_layer_ff ? largest("feed_forward_length")
                                 : get_arch_u32(f, a, "feed_forward_length").value_or(0);

    // Bounds that keep every later size computation far from overflow.
    check_range(f, "embedding_length", hp.n_embd, 1, 1u << 17);
    check_range(f, "block_count", hp.n_layer, 1, 4096);
    check_range(f, "attention.head_count", hp.n_head, 1, 4096);
    check_range(f, "attention.head_count_kv", hp.n_head_kv, 1, hp.n_head);
    check_range(f, "context_length", hp.n_ctx_train, 1, 1u << 24);
    check_range(f, "feed_forward_length", hp.n_ff, 0, 1u << 20);
    if (hp.n_head % hp.n_head_kv != 0) {
        fail(ErrorKind::bad_file,
             "{}: attention.head_count = {} is not a multiple of attention.head_count_kv = {}",
             f.name(), hp.n_head, hp.n_head_kv);
    }
    const uint32_t default_head_dim = hp.n_embd / hp.n_head;
    hp.head_dim_k = get_arch_u32(f, a, "attention.key_length").value_or(default_head_dim);
    hp.head_dim_v = get_arch_u32(f, a, "attention.value_length").value_or(default_head_dim);
    check_range(f, "attention.key_length", hp.head_dim_k, 1, 4096);
    check_range(f, "attention.value_length", hp.head_dim_v, 1, 4096);

    hp.norm_eps = f.get_f32(a + ".attention.layer_norm_rms_epsilon")
                      .value_or(f.get_f32(a + ".attention.layer_norm_epsilon").value_or(1e-5f));
    if (!(hp.norm_eps >= 0.0f && hp.norm_eps < 1.0f)) {
        fail(ErrorKind::bad_file, "{}: attention.layer_norm_rms_epsilon = {} is out of range",
             f.name(), hp.norm_eps);
    }

    // RoPE.
    hp.rope_style = info->rope;
    hp.n_rot = get_arch_u32(f, a, "rope.dimension_count").value_or(hp.head_dim_k);
    if (hp.n_rot == 0 || hp.n_rot > hp.head_dim_k || hp.n_rot % 2 != 0) {
        fail(ErrorKind::bad_file,
             "{}: rope.dimension_count = {} must be even and at most the head size {}", f.name(),
             hp.n_rot, hp.head_dim_k);
    }
    hp.rope_freq_base = f.get_f32(a + ".rope.freq_base").value_or(10000.0f);
    if (!(hp.rope_freq_base > 1.0f)) {
        fail(ErrorKind::bad_file, "{}: rope.freq_base = {} must be > 1", f.name(),
             hp.rope_freq_base);
    }
    float scale_factor = 0.0f;
    if (const auto factor = f.get_f32(a + ".rope.scaling.factor")) scale_factor = *factor;
    if (const auto legacy = f.get_f32(a + ".rope.scale_linear")) scale_factor = *legacy;
    std::string scaling_type = "none";
    if (const auto t = f.get_string(a + ".rope.scaling.type")) scaling_type = std::string(*t);
    if (scaling_type == "none" || scaling_type.empty()) {
        hp.rope_scaling =
            scale_factor > 0.0f && scale_factor != 1.0f ? RopeScaling::linear : RopeScaling::none;
    } else if (scaling_type == "linear") {
        hp.rope_scaling = RopeScaling::linear;
    } else if (scaling_type == "yarn") {
        hp.rope_scaling = RopeScaling::yarn;
    } else {
        fail(ErrorKind::unsupported,
             "{}: rope.scaling.type = \"{}\" is not supported (none, linear, yarn)", f.name(),
             scaling_type);
    }
    if (hp.rope_scaling != RopeScaling::none) {
        if (!(scale_factor > 0.0f && std::isfinite(scale_factor))) {
            fail(ErrorKind::bad_file, "{}: rope.scaling.factor = {} must be > 0", f.name(),
                 scale_factor);
        }
        hp.rope_freq_scale = 1.0f / scale_factor;
    }
    hp.rope_n_ctx_orig =
        get_arch_u32(f, a, "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
    if (hp.rope_scaling == RopeScaling::yarn) {
        hp.yarn_ext_factor = 1.0f;
        hp.yarn_attn_factor = f.get_f32(a + ".rope.scaling.attn_factor").value_or(1.0f);
        hp.yarn_beta_fast = f.get_f32(a + ".rope.scaling.yarn_beta_fast").value_or(32.0f);
        hp.yarn_beta_slow = f.get_f32(a + ".rope.scaling.yarn_beta_slow").value_or(1.0f);
    }

    // Mixture of experts.
    hp.n_expert = get_arch_u32(f, a, "expert_count").value_or(0);
    hp.n_expert_used = get_arch_u32(f, a, "expert_used_count").value_or(0);
    check_range(f, "expert_count", hp.n_expert, 0, 1024);
    if (hp.n_expert > 0) {
        check_range(f, "expert_used_count", hp.n_expert_used, 1, hp.n_expert);
        hp.n_ff_expert = get_arch_u32(f, a, "expert_feed_forward_length").value_or(hp.n_ff);
        hp.n_ff_shared_expert = get_arch_u32(f, a, "expert_shared_feed_forward_length").value_or(0);
        check_range(f, "expert_feed_forward_length", hp.n_ff_expert, 1, 1u << 20);
        // Mixtral and qwen3moe renormalise the top-k weights (qwen2moe's hook says it does not).
        hp.expert_weights_norm = f.get_bool(a + ".expert_weights_norm").value_or(true);
    } else if (info->moe) {
        fail(ErrorKind::bad_file, "{}: {} model without {}.expert_count", f.name(), hp.arch,
             hp.arch);
    } else if (hp.n_ff == 0) {
        fail(ErrorKind::bad_file, "{}: required metadata \"{}.feed_forward_length\" is missing",
             f.name(), hp.arch);
    }
    // What the architecture's home adds (model/arch/).
    if (info->read) info->read(f, hp);
    return hp;
}

}  // namespace mw
