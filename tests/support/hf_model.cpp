#include "support/hf_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "base/error.h"
#include "base/fp16.h"
#include "convert/convert.h"
#include "format/ggml_types.h"
#include "memwall.h"
#include "support/test_support.h"

namespace mw::test {
namespace {

using nlohmann::json;

bool is_qwen_moe(const HfSpec& s) {
    return s.model_type == "qwen2_moe" || s.model_type == "qwen3_moe";
}
bool has_qk_norm(const HfSpec& s) {
    return s.model_type == "qwen3" || s.model_type == "qwen3_moe";
}
bool has_qkv_bias(const HfSpec& s) {
    return s.model_type == "qwen2" || s.model_type == "qwen2_moe";
}

std::string layer(uint32_t i) {
    return "model.layers." + std::to_string(i) + ".";
}

std::string expert_name(const HfSpec& s, uint32_t i, uint32_t e, const char* which) {
    // which: "gate", "up", "down"
    if (s.model_type == "mixtral") {
        const char* w = std::string(which) == "gate" ? "w1"
                        : std::string(which) == "up" ? "w3"
                                                     : "w2";
        return layer(i) + "block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight";
    }
    return layer(i) + "mlp.experts." + std::to_string(e) + "." + which + "_proj.weight";
}

std::string router_name(const HfSpec& s, uint32_t i) {
    return layer(i) +
           (s.model_type == "mixtral" ? "block_sparse_moe.gate.weight" : "mlp.gate.weight");
}

const std::vector<double>& get(const HfWeights& w, const std::string& name) {
    const auto it = w.find(name);
    if (it == w.end()) throw std::runtime_error("reference: missing weight " + name);
    return it->second;
}

// y = W x for W [rows][cols] row-major.
std::vector<double> matvec(const std::vector<double>& w, const std::vector<double>& x,
                           size_t rows) {
    const size_t cols = x.size();
    std::vector<double> y(rows, 0.0);
    for (size_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (size_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
        y[r] = s;
    }
    return y;
}

std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<double>& w, double eps,
                            size_t offset = 0, size_t n = 0) {
    if (n == 0) n = x.size();
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) ss += x[offset + i] * x[offset + i];
    const double scale = 1.0 / std::sqrt(ss / double(n) + eps);
    std::vector<double> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = x[offset + i] * scale * w[i];
    return y;
}

double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

// transformers' SwiGLU MLP: down(silu(gate x) * up x).
std::vector<double> mlp(const std::vector<double>& gate, const std::vector<double>& up,
                        const std::vector<double>& down, const std::vector<double>& x,
                        size_t n_ff) {
    std::vector<double> g = matvec(gate, x, n_ff), u = matvec(up, x, n_ff);
    for (size_t i = 0; i < n_ff; ++i) g[i] = silu(g[i]) * u[i];
    return matvec(down, g, x.size());
}

// transformers' inverse frequencies, with Llama 3.1's scaling when the spec asks for it.
std::vector<double> inv_freqs(const HfSpec& s, uint32_t hd) {
    std::vector<double> f(hd / 2);
    for (uint32_t i = 0; i < hd / 2; ++i) {
        f[i] = std::pow(s.rope_theta, -2.0 * i / double(hd));
        if (s.llama3_factor <= 0) continue;
        const double wavelen = 2 * M_PI / f[i];
        const double old_ctx = s.llama3_original_context;
        if (wavelen > old_ctx / s.llama3_low_freq_factor) {
            f[i] /= s.llama3_factor;
        } else if (wavelen >= old_ctx / s.llama3_high_freq_factor) {
            const double smooth = (old_ctx / wavelen - s.llama3_low_freq_factor) /
                                  (s.llama3_high_freq_factor - s.llama3_low_freq_factor);
            f[i] = (1 - smooth) * f[i] / s.llama3_factor + smooth * f[i];
        }
    }
    return f;
}

// Rotate-half RoPE (transformers' apply_rotary_pos_emb) on one head vector in place.
void rope(double* v, uint32_t hd, double pos, const std::vector<double>& inv_freq) {
    const uint32_t half = hd / 2;
    for (uint32_t i = 0; i < half; ++i) {
        const double freq = inv_freq[i];
        const double c = std::cos(pos * freq), s = std::sin(pos * freq);
        const double a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
    }
}

}  // namespace

std::vector<HfTensorShape> hf_tensor_shapes(const HfSpec& s) {
    const uint64_t E = s.n_embd, V = s.vocab_size, hd = s.resolved_head_dim();
    const uint64_t nq = s.n_head * hd, nkv = s.n_head_kv * hd;
    std::vector<HfTensorShape> t;
    t.push_back({"model.embed_tokens.weight", {V, E}});
    for (uint32_t i = 0; i < s.n_layer; ++i) {
        const std::string p = layer(i);
        t.push_back({p + "input_layernorm.weight", {E}});
        t.push_back({p + "self_attn.q_proj.weight", {nq, E}});
        t.push_back({p + "self_attn.k_proj.weight", {nkv, E}});
        t.push_back({p + "self_attn.v_proj.weight", {nkv, E}});
        if (has_qkv_bias(s)) {
            t.push_back({p + "self_attn.q_proj.bias", {nq}});
            t.push_back({p + "self_attn.k_proj.bias", {nkv}});
            t.push_back({p + "self_attn.v_proj.bias", {nkv}});
        }
        if (has_qk_norm(s)) {
            t.push_back({p + "self_attn.q_norm.weight", {hd}});
            t.push_back({p + "self_attn.k_norm.weight", {hd}});
        }
        t.push_back({p + "self_attn.o_proj.weight", {E, nq}});
        t.push_back({p + "post_attention_layernorm.weight", {E}});
        if (!s.moe()) {
            t.push_back({p + "mlp.gate_proj.weight", {s.n_ff, E}});
            t.push_back({p + "mlp.up_proj.weight", {s.n_ff, E}});
            t.push_back({p + "mlp.down_proj.weight", {E, s.n_ff}});
            continue;
        }
        t.push_back({router_name(s, i), {s.n_expert, E}});
        for (uint32_t e = 0; e < s.n_expert; ++e) {
            t.push_back({expert_name(s, i, e, "gate"), {s.n_ff_expert, E}});
            t.push_back({expert_name(s, i, e, "up"), {s.n_ff_expert, E}});
            t.push_back({expert_name(s, i, e, "down"), {E, s.n_ff_expert}});
        }
        if (s.model_type == "qwen2_moe") {
            t.push_back({p + "mlp.shared_expert.gate_proj.weight", {s.n_ff_shared, E}});
            t.push_back({p + "mlp.shared_expert.up_proj.weight", {s.n_ff_shared, E}});
            t.push_back({p + "mlp.shared_expert.down_proj.weight", {E, s.n_ff_shared}});
            t.push_back({p + "mlp.shared_expert_gate.weight", {1, E}});
        }
    }
    t.push_back({"model.norm.weight", {E}});
    if (!s.tied) t.push_back({"lm_head.weight", {V, E}});
    return t;
}

std::vector<uint8_t> encode_values(const std::vector<double>& values, const std::string& dtype) {
    std::vector<uint8_t> out;
    for (const double d : values) {
        const float f = float(d);
        if (dtype == "F32") {
            uint8_t b[4];
            std::memcpy(b, &f, 4);
            out.insert(out.end(), b, b + 4);
        } else {
            const uint16_t h = dtype == "F16" ? f32_to_fp16(f) : f32_to_bf16(f);
            out.push_back(uint8_t(h & 0xff));
            out.push_back(uint8_t(h >> 8));
        }
    }
    return out;
}

std::vector<double> decode_values(const std::vector<uint8_t>& bytes, const std::string& dtype) {
    std::vector<double> out;
    if (dtype == "F32") {
        for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
            float f;
            std::memcpy(&f, bytes.data() + i, 4);
            out.push_back(f);
        }
    } else {
        for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
            const uint16_t h = uint16_t(bytes[i] | (bytes[i + 1] << 8));
            out.push_back(dtype == "F16" ? fp16_to_f32(h) : bf16_to_f32(h));
        }
    }
    return out;
}

HfWeights random_hf_weights(const HfSpec& s) {
    std::mt19937 rng(s.seed);
    HfWeights w;
    for (const HfTensorShape& t : hf_tensor_shapes(s)) {
        uint64_t n = 1;
        for (uint64_t d : t.shape) n *= d;
        const bool norm = t.name.find("norm") != std::string::npos;
        const bool router = t.name.find(".gate.weight") != std::string::npos ||
                            t.name.find("shared_expert_gate") != std::string::npos;
        const bool embed = t.name == "model.embed_tokens.weight";
        std::normal_distribution<double> normal(0.0, embed ? 1.0 : router ? 0.8 : 0.1);
        std::uniform_real_distribution<double> uniform(0.7, 1.3);
        std::vector<double> v(n);
        for (double& x : v) x = norm ? uniform(rng) : normal(rng);
        // What the file will hold: the values rounded to the source dtype.
        w[t.name] = decode_values(encode_values(v, s.dtype), s.dtype);
    }
    return w;
}

std::string hf_config_json(const HfSpec& s) {
    static const std::map<std::string, std::string> kArch = {
        {"llama", "LlamaForCausalLM"},       {"mistral", "MistralForCausalLM"},
        {"mixtral", "MixtralForCausalLM"},   {"qwen2", "Qwen2ForCausalLM"},
        {"qwen3", "Qwen3ForCausalLM"},       {"qwen2_moe", "Qwen2MoeForCausalLM"},
        {"qwen3_moe", "Qwen3MoeForCausalLM"}};
    json c;
    c["architectures"] = {kArch.at(s.model_type)};
    c["model_type"] = s.model_type;
    c["_name_or_path"] = "test/tiny-" + s.model_type;
    c["vocab_size"] = s.vocab_size;
    c["hidden_size"] = s.n_embd;
    c["intermediate_size"] = s.model_type == "mixtral" ? s.n_ff_expert : s.n_ff;
    c["num_hidden_layers"] = s.n_layer;
    c["num_attention_heads"] = s.n_head;
    c["num_key_value_heads"] = s.n_head_kv;
    c["rms_norm_eps"] = s.rms_norm_eps;
    c["rope_theta"] = s.rope_theta;
    c["max_position_embeddings"] = 256;
    c["tie_word_embeddings"] = s.tied;
    c["hidden_act"] = "silu";
    c["torch_dtype"] = s.dtype == "F32" ? "float32" : s.dtype == "F16" ? "float16" : "bfloat16";
    c["bos_token_id"] = nullptr;
    c["eos_token_id"] = 5;
    if (s.head_dim) c["head_dim"] = s.head_dim;
    c["rope_scaling"] = nullptr;
    if (s.rope_linear_factor > 0)
        c["rope_scaling"] = {{"type", "linear"}, {"factor", s.rope_linear_factor}};
    if (s.llama3_factor > 0) {
        c["rope_scaling"] = {{"rope_type", "llama3"},
                             {"factor", s.llama3_factor},
                             {"low_freq_factor", s.llama3_low_freq_factor},
                             {"high_freq_factor", s.llama3_high_freq_factor},
                             {"original_max_position_embeddings", s.llama3_original_context}};
    }
    if (s.model_type == "qwen2") c["use_sliding_window"] = false;
    if (s.model_type == "mixtral") {
        c["num_local_experts"] = s.n_expert;
        c["num_experts_per_tok"] = s.n_expert_used;
    } else if (is_qwen_moe(s)) {
        c["num_experts"] = s.n_expert;
        c["num_experts_per_tok"] = s.n_expert_used;
        c["moe_intermediate_size"] = s.n_ff_expert;
        c["norm_topk_prob"] = s.norm_topk_prob;
        c["decoder_sparse_step"] = 1;
        c["mlp_only_layers"] = json::array();
        if (s.model_type == "qwen2_moe") c["shared_expert_intermediate_size"] = s.n_ff_shared;
    }
    return c.dump(2);
}

std::vector<uint8_t> safetensors_bytes(const std::vector<SafetensorsEntry>& tensors) {
    json header = json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t offset = 0;
    for (const SafetensorsEntry& t : tensors) {
        header[t.name] = {{"dtype", t.dtype},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';  // as the reference writer pads it
    std::vector<uint8_t> out;
    const uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(n >> (8 * i)));
    for (const char c : text) out.push_back(uint8_t(c));
    for (const SafetensorsEntry& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

void write_text_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
}

void write_binary_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

void write_hf_folder(const std::string& dir, const HfSpec& s, const HfWeights& weights) {
    write_text_file(dir + "/config.json", hf_config_json(s));
    const std::vector<HfTensorShape> shapes = hf_tensor_shapes(s);
    const int n_shards = std::max(1, s.shards);
    json weight_map = json::object();
    for (int shard = 0; shard < n_shards; ++shard) {
        std::vector<SafetensorsEntry> entries;
        const std::string file = n_shards == 1
                                     ? std::string("model.safetensors")
                                     : "model-0000" + std::to_string(shard + 1) + "-of-0000" +
                                           std::to_string(n_shards) + ".safetensors";
        for (size_t i = 0; i < shapes.size(); ++i) {
            if (int(i % size_t(n_shards)) != shard) continue;
            entries.push_back({shapes[i].name, s.dtype, shapes[i].shape,
                               encode_values(weights.at(shapes[i].name), s.dtype)});
            weight_map[shapes[i].name] = file;
        }
        write_binary_file(dir + "/" + file, safetensors_bytes(entries));
    }
    if (n_shards > 1) {
        json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
        write_text_file(dir + "/model.safetensors.index.json", index.dump(2));
    }
    write_hf_tokenizer(dir);
}

void write_hf_tokenizer(const std::string& dir) {
    // A tiny byte-level BPE: three letters, two merges, one special token; vocab_size pads it.
    json tok;
    tok["version"] = "1.0";
    tok["added_tokens"] = {{{"id", 5},
                            {"content", "<|endoftext|>"},
                            {"special", true},
                            {"single_word", false},
                            {"lstrip", false},
                            {"rstrip", false},
                            {"normalized", false}}};
    tok["normalizer"] = nullptr;
    tok["pre_tokenizer"] = {{"type", "ByteLevel"},
                            {"add_prefix_space", false},
                            {"trim_offsets", true},
                            {"use_regex", true}};
    tok["decoder"] = {{"type", "ByteLevel"}};
    tok["model"] = {{"type", "BPE"},
                    {"byte_fallback", false},
                    {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}}},
                    {"merges", {"a b", "ab c"}}};
    write_text_file(dir + "/tokenizer.json", tok.dump(1));
    write_text_file(dir + "/tokenizer_config.json",
                    R"({"eos_token": "<|endoftext|>", "bos_token": null, "add_bos_token": false})");
}

std::vector<double> hf_reference_logits(const HfSpec& s, const HfWeights& w,
                                        const std::vector<int32_t>& tokens) {
    const size_t E = s.n_embd, T = tokens.size(), V = s.vocab_size;
    const uint32_t hd = s.resolved_head_dim();
    const size_t nq = size_t(s.n_head) * hd, nkv = size_t(s.n_head_kv) * hd;
    const uint32_t group = s.n_head / s.n_head_kv;
    const double eps = s.rms_norm_eps;
    const std::vector<double> freqs = inv_freqs(s, hd);
    std::vector<std::vector<double>> x(T);
    const auto& emb = get(w, "model.embed_tokens.weight");
    for (size_t t = 0; t < T; ++t)
        x[t].assign(emb.begin() + tokens[t] * E, emb.begin() + (tokens[t] + 1) * E);

    for (uint32_t l = 0; l < s.n_layer; ++l) {
        const std::string p = layer(l);
        std::vector<std::vector<double>> q(T), k(T), v(T);
        for (size_t t = 0; t < T; ++t) {
            const auto h = rmsnorm(x[t], get(w, p + "input_layernorm.weight"), eps);
            q[t] = matvec(get(w, p + "self_attn.q_proj.weight"), h, nq);
            k[t] = matvec(get(w, p + "self_attn.k_proj.weight"), h, nkv);
            v[t] = matvec(get(w, p + "self_attn.v_proj.weight"), h, nkv);
            if (has_qkv_bias(s)) {
                for (size_t i = 0; i < nq; ++i) q[t][i] += get(w, p + "self_attn.q_proj.bias")[i];
                for (size_t i = 0; i < nkv; ++i) k[t][i] += get(w, p + "self_attn.k_proj.bias")[i];
                for (size_t i = 0; i < nkv; ++i) v[t][i] += get(w, p + "self_attn.v_proj.bias")[i];
            }
            if (has_qk_norm(s)) {
                for (uint32_t h2 = 0; h2 < s.n_head; ++h2) {
                    const auto n =
                        rmsnorm(q[t], get(w, p + "self_attn.q_norm.weight"), eps, h2 * hd, hd);
                    std::copy(n.begin(), n.end(), q[t].begin() + h2 * hd);
                }
                for (uint32_t h2 = 0; h2 < s.n_head_kv; ++h2) {
                    const auto n =
                        rmsnorm(k[t], get(w, p + "self_attn.k_norm.weight"), eps, h2 * hd, hd);
                    std::copy(n.begin(), n.end(), k[t].begin() + h2 * hd);
                }
            }
            const double pos =
                s.rope_linear_factor > 0 ? double(t) / s.rope_linear_factor : double(t);
            for (uint32_t h2 = 0; h2 < s.n_head; ++h2) rope(q[t].data() + h2 * hd, hd, pos, freqs);
            for (uint32_t h2 = 0; h2 < s.n_head_kv; ++h2)
                rope(k[t].data() + h2 * hd, hd, pos, freqs);
        }
        for (size_t t = 0; t < T; ++t) {
            std::vector<double> attn(nq, 0.0);
            for (uint32_t h2 = 0; h2 < s.n_head; ++h2) {
                const size_t kvh = h2 / group;
                std::vector<double> score(t + 1);
                double max = -1e300;
                for (size_t j = 0; j <= t; ++j) {
                    double d = 0.0;
                    for (uint32_t i = 0; i < hd; ++i) d += q[t][h2 * hd + i] * k[j][kvh * hd + i];
                    score[j] = d / std::sqrt(double(hd));
                    max = std::max(max, score[j]);
                }
                double sum = 0.0;
                for (double& sc : score) sum += (sc = std::exp(sc - max));
                for (size_t j = 0; j <= t; ++j) {
                    for (uint32_t i = 0; i < hd; ++i)
                        attn[h2 * hd + i] += score[j] / sum * v[j][kvh * hd + i];
                }
            }
            const auto o = matvec(get(w, p + "self_attn.o_proj.weight"), attn, E);
            for (size_t i = 0; i < E; ++i) x[t][i] += o[i];
        }
        for (size_t t = 0; t < T; ++t) {
            const auto h = rmsnorm(x[t], get(w, p + "post_attention_layernorm.weight"), eps);
            std::vector<double> y(E, 0.0);
            if (!s.moe()) {
                y = mlp(get(w, p + "mlp.gate_proj.weight"), get(w, p + "mlp.up_proj.weight"),
                        get(w, p + "mlp.down_proj.weight"), h, s.n_ff);
            } else {
                std::vector<double> prob = matvec(get(w, router_name(s, l)), h, s.n_expert);
                const double max = *std::max_element(prob.begin(), prob.end());
                double sum = 0.0;
                for (double& pr : prob) sum += (pr = std::exp(pr - max));
                for (double& pr : prob) pr /= sum;
                std::vector<uint32_t> order(s.n_expert);
                for (uint32_t e = 0; e < s.n_expert; ++e) order[e] = e;
                std::stable_sort(order.begin(), order.end(),
                                 [&](uint32_t a, uint32_t b) { return prob[a] > prob[b]; });
                const bool renorm = s.model_type == "mixtral" || s.norm_topk_prob;
                double chosen = 0.0;
                for (uint32_t j = 0; j < s.n_expert_used; ++j) chosen += prob[order[j]];
                for (uint32_t j = 0; j < s.n_expert_used; ++j) {
                    const uint32_t e = order[j];
                    const double weight = renorm ? prob[e] / chosen : prob[e];
                    const auto out = mlp(get(w, expert_name(s, l, e, "gate")),
                                         get(w, expert_name(s, l, e, "up")),
                                         get(w, expert_name(s, l, e, "down")), h, s.n_ff_expert);
                    for (size_t i = 0; i < E; ++i) y[i] += weight * out[i];
                }
                if (s.model_type == "qwen2_moe") {
                    const auto out =
                        mlp(get(w, p + "mlp.shared_expert.gate_proj.weight"),
                            get(w, p + "mlp.shared_expert.up_proj.weight"),
                            get(w, p + "mlp.shared_expert.down_proj.weight"), h, s.n_ff_shared);
                    const double g = matvec(get(w, p + "mlp.shared_expert_gate.weight"), h, 1)[0];
                    const double sig = 1.0 / (1.0 + std::exp(-g));
                    for (size_t i = 0; i < E; ++i) y[i] += sig * out[i];
                }
            }
            for (size_t i = 0; i < E; ++i) x[t][i] += y[i];
        }
    }
    std::vector<double> logits(T * V);
    const auto& head = s.tied ? emb : get(w, "lm_head.weight");
    for (size_t t = 0; t < T; ++t) {
        const auto h = rmsnorm(x[t], get(w, "model.norm.weight"), eps);
        const auto row = matvec(head, h, V);
        std::copy(row.begin(), row.end(), logits.begin() + t * V);
    }
    return logits;
}

// memwall's logits for the tokens in one batch (F32 KV cache: no rounding beyond the weights').
std::vector<float> memwall_logits(const std::string& path, const std::vector<int32_t>& tokens) {
    mw_model* model = nullptr;
    EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    if (!model) return {};
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.type_k = MW_TYPE_F32;
    cp.type_v = MW_TYPE_F32;
    mw_context* ctx = nullptr;
    EXPECT_EQ(mw_context_create(model, &cp, &ctx), MW_OK) << mw_last_error();
    EXPECT_EQ(mw_decode(ctx, tokens.data(), int32_t(tokens.size()), true), MW_OK)
        << mw_last_error();
    const size_t n_vocab = size_t(mw_model_n_vocab(model));
    std::vector<float> out;
    for (size_t t = 0; t < tokens.size(); ++t) {
        const float* row = mw_get_logits(ctx, int32_t(t));
        out.insert(out.end(), row, row + n_vocab);
    }
    mw_context_free(ctx);
    mw_model_free(model);
    return out;
}

std::vector<double> gguf_values(const gguf::TensorInfo& t) {
    std::vector<double> v(t.n_elements);
    for (uint64_t i = 0; i < t.n_elements; ++i) {
        if (t.type == uint32_t(GgmlType::F32)) {
            float f;
            std::memcpy(&f, t.data + 4 * i, 4);
            v[i] = f;
        } else {
            uint16_t h;
            std::memcpy(&h, t.data + 2 * i, 2);
            v[i] = fp16_to_f32(h);
        }
    }
    return v;
}

std::vector<uint64_t> hf_shape(const gguf::TensorInfo& t) {
    std::vector<uint64_t> shape;
    for (uint32_t d = t.n_dims; d-- > 0;) shape.push_back(t.ne[d]);
    return shape;
}

std::string describe_value(const gguf::Value& v) {
    if (v.type == gguf::ValueType::string) return std::string(v.str);
    if (v.type != gguf::ValueType::array) return fmt::format("{}", v.as_f64());
    std::string out = "[";
    for (uint64_t i = 0; i < v.count; ++i) out += fmt::format("{} ", v.elem_f64(i));
    return out + "]";
}

std::string write_hf_checkpoint(const std::string& name,
                                const std::map<std::string, HfTensor>& tensors,
                                const std::string& config_json) {
    std::vector<SafetensorsEntry> entries;
    for (const auto& [tensor, t] : tensors) {
        entries.push_back({tensor, "F32", t.shape, encode_values(t.values, "F32")});
    }
    const std::string dir = temp_dir() + "/" + name;
    std::filesystem::create_directories(dir);
    write_binary_file(dir + "/model.safetensors", safetensors_bytes(entries));
    write_text_file(dir + "/config.json", config_json);
    write_hf_tokenizer(dir);
    return dir;
}

void expect_round_trip(const std::string& ref_path, const std::string& got_path,
                       const std::string& arch, const RoundTripTolerance& tolerance) {
    const std::vector<uint8_t> ref_bytes = read_file(ref_path);
    const std::vector<uint8_t> got_bytes = read_file(got_path);
    const gguf::GgufFile ref = gguf::GgufFile::parse(ref_bytes, ref_path);
    const gguf::GgufFile got = gguf::GgufFile::parse(got_bytes, got_path);
    EXPECT_EQ(got.tensors().size(), ref.tensors().size());
    for (const gguf::TensorInfo& t : ref.tensors()) {
        const gguf::TensorInfo* g = got.find_tensor(t.name);
        ASSERT_NE(g, nullptr) << t.name;
        EXPECT_EQ(g->type, t.type) << t.name;
        ASSERT_EQ(g->n_dims, t.n_dims) << t.name;
        for (uint32_t d = 0; d < t.n_dims; ++d) EXPECT_EQ(g->ne[d], t.ne[d]) << t.name;
        if (t.type != uint32_t(GgmlType::F32) && t.type != uint32_t(GgmlType::F16)) {
            ASSERT_EQ(g->n_bytes, t.n_bytes) << t.name;  // kept as they are: byte for byte
            EXPECT_EQ(std::memcmp(g->data, t.data, t.n_bytes), 0) << t.name;
            continue;
        }
        const std::vector<double> a = gguf_values(t), b = gguf_values(*g);
        if (tolerance.values == 0) {
            EXPECT_EQ(b, a) << t.name;
            continue;
        }
        ASSERT_EQ(b.size(), a.size()) << t.name;
        double worst = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(a[i])));
        }
        EXPECT_LT(worst, tolerance.values) << t.name;
    }
    for (const gguf::KeyValue& kv : ref.metadata()) {
        if (!kv.key.starts_with(arch + ".")) continue;
        const gguf::Value* v = got.find(kv.key);
        ASSERT_NE(v, nullptr) << kv.key;
        EXPECT_EQ(describe_value(*v), describe_value(kv.value)) << kv.key;
    }
    const std::vector<int32_t> tokens = {1, 57, 300, 12, 499, 7, 211, 88, 402, 33};
    const std::vector<float> want = memwall_logits(ref_path, tokens);
    const std::vector<float> have = memwall_logits(got_path, tokens);
    ASSERT_EQ(want.size(), have.size());
    if (tolerance.logits == 0) {
        EXPECT_EQ(std::memcmp(want.data(), have.data(), want.size() * sizeof(float)), 0);
    } else {
        EXPECT_LT(rel_rms(want.data(), have.data(), want.size()), tolerance.logits);
    }
}

void expect_config_refused(const std::string& dir, const std::string& config_json,
                           const std::string& from, const std::string& to,
                           const std::string& word) {
    std::string c = config_json;
    const size_t at = c.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    c.replace(at, from.size(), to);
    write_text_file(dir + "/config.json", c);
    try {
        convert::convert_hf(dir, dir + ".gguf", {});
        ADD_FAILURE() << "expected an error naming " << word << " for " << to;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
}

}  // namespace mw::test
