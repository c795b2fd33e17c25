#include "plan/quant_mix.h"

#include <cctype>
#include <string>

namespace mw {
namespace {

using T = GgmlType;
using R = QuantRecipe;

struct RecipeRow {
    QuantRecipe recipe;
    const char* name;
    uint32_t file_type;  // llama_ftype
    GgmlType base;
};

// Ordered from the largest to the smallest per weight.
constexpr RecipeRow kRecipes[] = {
    {R::F32, "F32", 0, T::F32},
    {R::F16, "F16", 1, T::F16},
    {R::BF16, "BF16", 32, T::BF16},
    {R::Q8_0, "Q8_0", 7, T::Q8_0},
    {R::Q6_K, "Q6_K", 18, T::Q6_K},
    {R::Q5_K_M, "Q5_K_M", 17, T::Q5_K},
    {R::Q5_K_S, "Q5_K_S", 16, T::Q5_K},
    {R::Q5_1, "Q5_1", 9, T::Q5_1},
    {R::Q5_0, "Q5_0", 8, T::Q5_0},
    {R::Q4_K_M, "Q4_K_M", 15, T::Q4_K},
    {R::Q4_K_S, "Q4_K_S", 14, T::Q4_K},
    {R::Q4_1, "Q4_1", 3, T::Q4_1},
    {R::Q4_0, "Q4_0", 2, T::Q4_0},
    {R::IQ4_NL, "IQ4_NL", 25, T::IQ4_NL},
    {R::IQ4_XS, "IQ4_XS", 30, T::IQ4_XS},
    {R::MXFP4_MOE, "MXFP4_MOE", 38, T::MXFP4},  // MoE experts; other matrices Q8_0
    {R::Q3_K_L, "Q3_K_L", 13, T::Q3_K},
    {R::Q3_K_M, "Q3_K_M", 12, T::Q3_K},
    {R::IQ3_M, "IQ3_M", 27, T::IQ3_S},
    {R::IQ3_S, "IQ3_S", 26, T::IQ3_S},
    {R::Q3_K_S, "Q3_K_S", 11, T::Q3_K},
    {R::IQ3_XS, "IQ3_XS", 22, T::IQ3_S},
    {R::IQ3_XXS, "IQ3_XXS", 23, T::IQ3_XXS},
    {R::Q2_K, "Q2_K", 10, T::Q2_K},
    {R::Q2_K_S, "Q2_K_S", 21, T::Q2_K},
    {R::IQ2_M, "IQ2_M", 29, T::IQ2_S},
    {R::IQ2_S, "IQ2_S", 28, T::IQ2_XS},  // llama.cpp's IQ2_S recipe is mostly IQ2_XS
    {R::IQ2_XS, "IQ2_XS", 20, T::IQ2_XS},
    {R::IQ2_XXS, "IQ2_XXS", 19, T::IQ2_XXS},
    {R::TQ2_0, "TQ2_0", 37, T::TQ2_0},
    {R::IQ1_M, "IQ1_M", 31, T::IQ1_M},
    {R::TQ1_0, "TQ1_0", 36, T::TQ1_0},
    {R::IQ1_S, "IQ1_S", 24, T::IQ1_S},
};

const RecipeRow& row_of(QuantRecipe recipe) {
    for (const RecipeRow& r : kRecipes) {
        if (r.recipe == recipe) return r;
    }
    return kRecipes[0];  // unreachable: every enumerator has a row
}

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != s.npos;
}

uint32_t block_size(GgmlType t) {
    const auto layout = ggml_layout(static_cast<uint32_t>(t));
    return layout ? layout->block_size : 1;
}

bool is_block_quantized(GgmlType t) {
    return t != T::F32 && t != T::F16 && t != T::BF16;
}

// The layer of a "blk.N.*" tensor, or -1.
int layer_of(std::string_view name) {
    if (name.substr(0, 4) != "blk.") return -1;
    int layer = 0;
    size_t i = 4;
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
        layer = layer * 10 + (name[i] - '0');
        if (layer > 1 << 20) return -1;
    }
    return i < name.size() && name[i] == '.' ? layer : -1;
}

// The layers that get more bits in the "_M" recipes: the first and last eighth, and every third
// layer in between.
bool more_bits(int layer, int n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// llama-quantize's recipes of 2 bits and less (IQ2_*, IQ1_*), which have their own rules; of those,
// IQ2_S and IQ2_M spend their extra bits as IQ3_S where the others use Q2_K.
bool is_low_bit(R r) {
    return r == R::IQ2_XXS || r == R::IQ2_XS || r == R::IQ2_S || r == R::IQ2_M || r == R::IQ1_S ||
           r == R::IQ1_M;
}
GgmlType low_bit_extra(R r) {
    return r == R::IQ2_S || r == R::IQ2_M ? T::IQ3_S : T::Q2_K;
}

// The low-bit recipes' rules (attn_v, attn_k, ffn_down, attn_output), t otherwise.
GgmlType low_bit_type(R recipe, GgmlType t, const QuantModelInfo& m, std::string_view name,
                      int layer) {
    const uint32_t gqa = m.n_head_kv ? m.n_head / m.n_head_kv : 1;
    if (contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight")) {
        return gqa >= 4 || m.n_expert >= 4 ? T::Q4_K : low_bit_extra(recipe);
    }
    if (contains(name, "attn_k.weight")) return m.n_expert == 8 ? T::Q4_K : t;
    if (contains(name, "ffn_down")) return layer < int(m.n_layer) / 8 ? low_bit_extra(recipe) : t;
    if (contains(name, "attn_output.weight")) {
        if (m.n_expert == 8) return T::Q5_K;
        if (recipe == R::IQ1_S || recipe == R::IQ1_M) return T::IQ2_XXS;
        if (recipe == R::IQ2_S || recipe == R::IQ2_M) return T::IQ3_S;
    }
    return t;
}

// A k-quant needs rows that are a multiple of 256 elements; other rows get the nearest 32-block
// type, and F16 when even that does not fit.
GgmlType fit_row_length(GgmlType t, int64_t ne0) {
    if (ne0 % block_size(t) == 0) return t;
    GgmlType fallback = T::F16;
    switch (t) {
        case T::Q2_K:
        case T::Q3_K:
        case T::IQ4_XS:
        case T::IQ3_S:
        case T::IQ3_XXS:
        case T::IQ2_S:
        case T::IQ2_XS:
        case T::IQ2_XXS:
        case T::IQ1_M:
        case T::IQ1_S:
            fallback = T::IQ4_NL;
            break;
        case T::TQ1_0:
        case T::TQ2_0:
            fallback = T::Q4_0;
            break;
        case T::Q4_K:
            fallback = T::Q5_0;
            break;
        case T::Q5_K:
            fallback = T::Q5_1;
            break;
        case T::Q6_K:
            fallback = T::Q8_0;
            break;
        default:
            break;  // llama-quantize refuses such a tensor; F16 is the closest plan
    }
    return ne0 % block_size(fallback) == 0 ? fallback : T::F16;
}

GgmlType attn_v_type(R recipe, GgmlType t, const QuantModelInfo& m, int block) {
    // The attn_v's rank among the model's attn_v tensors, as llama-quantize counts them.
    const int layer =
        block >= 0 && size_t(block) < m.attn_v_rank.size() ? m.attn_v_rank[block] : block;
    const int n_v = int(m.n_attn_v ? m.n_attn_v : m.n_layer);
    const uint32_t gqa = m.n_head_kv ? m.n_head / m.n_head_kv : 1;
    if (recipe == R::Q2_K) {
        t = gqa >= 4 ? T::Q4_K : T::Q3_K;
    } else if (recipe == R::Q2_K_S && gqa >= 4) {
        t = T::Q4_K;
    } else if (recipe == R::Q3_K_M) {
        t = layer < 2 ? T::Q5_K : T::Q4_K;
    } else if (recipe == R::Q3_K_L) {
        t = T::Q5_K;
    } else if ((recipe == R::Q4_K_M || recipe == R::Q5_K_M) && more_bits(layer, n_v)) {
        t = T::Q6_K;
    } else if (recipe == R::Q4_K_S && layer < 4) {
        t = T::Q5_K;
    } else if ((recipe == R::IQ4_NL || recipe == R::IQ4_XS) && gqa >= 4) {
        t = T::Q5_K;
    } else if (recipe == R::IQ3_XXS) {
        t = gqa >= 4 ? T::Q4_K : !m.has_imatrix ? T::IQ3_S : T::IQ3_XXS;
    } else if ((recipe == R::IQ3_XS || recipe == R::IQ3_S) && gqa >= 4) {
        t = T::Q4_K;
    } else if (recipe == R::IQ3_M) {
        t = T::Q4_K;
    }
    // The 70B models share each V head among 8 query heads: attn_v is small, more bits are cheap.
    if (m.is_70b_class && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
    if (m.n_expert == 8) t = T::Q8_0;
    return t;
}

GgmlType ffn_down_type(R recipe, GgmlType t, const QuantModelInfo& m, int layer, bool falcon) {
    const int n = int(m.n_layer);
    switch (recipe) {
        case R::Q2_K:
            return T::Q3_K;
        case R::Q2_K_S:
            return layer < n / 8 ? T::Q4_K : t;
        case R::Q3_K_M:
            if (layer < n / 16) return T::Q5_K;
            return !falcon || more_bits(layer, n) ? T::Q4_K : T::Q3_K;
        case R::Q3_K_L:
            return falcon ? T::Q4_K : T::Q5_K;
        case R::Q4_K_M:
            if (falcon) return layer < n / 16 ? T::Q6_K : more_bits(layer, n) ? T::Q5_K : T::Q4_K;
            return more_bits(layer, n) ? T::Q6_K : t;
        case R::Q5_K_M:
            return more_bits(layer, n) ? T::Q6_K : t;
        case R::Q4_K_S:
            return !falcon && layer < n / 8 ? T::Q5_K : t;
        case R::IQ4_NL:
        case R::IQ4_XS:
            return layer < n / 8 && !m.has_imatrix ? T::Q5_K : t;
        // With an imatrix, llama-quantize gives the first eighth the offset type (it guards
        // against their outliers; without one Q4_1/Q5_1 fare worse there).
        case R::Q4_0:
            return layer < n / 8 && m.has_imatrix ? T::Q4_1 : t;
        case R::Q5_0:
            return layer < n / 8 && m.has_imatrix ? T::Q5_1 : t;
        case R::IQ3_XXS:
            return m.has_imatrix ? t : layer < n / 8 ? T::Q4_K : T::Q3_K;
        case R::IQ3_M:
            return layer < n / 8 || (m.n_expert == 8 && more_bits(layer, n)) ? T::Q4_K : t;
        default:
            return t;
    }
}

GgmlType attn_output_type(R recipe, GgmlType t, const QuantModelInfo& m, bool falcon) {
    if (falcon) return recipe == R::Q3_K_L ? T::Q4_K : t;
    if (m.n_expert == 8) {
        const bool bump = recipe == R::Q2_K || recipe == R::Q3_K_S || recipe == R::Q3_K_M ||
                          recipe == R::Q4_K_S || recipe == R::Q4_K_M || recipe == R::IQ4_NL ||
                          recipe == R::IQ4_XS || recipe == R::IQ3_XS || recipe == R::IQ3_XXS ||
                          recipe == R::IQ3_S || recipe == R::IQ3_M;
        return bump ? T::Q5_K : t;
    }
    switch (recipe) {
        case R::Q2_K:
            return T::Q3_K;
        case R::Q3_K_M:
            return T::Q4_K;
        case R::Q3_K_L:
            return T::Q5_K;
        case R::IQ3_XXS:
            return T::IQ3_S;
        case R::IQ3_M:
            return T::Q4_K;
        default:
            return t;
    }
}

}  // namespace

void add_attn_v_tensor(QuantModelInfo& m, std::string_view name) {
    if (!contains(name, "attn_v.weight") && !contains(name, "attn_qkv.weight")) return;
    const int layer = layer_of(name);
    if (layer < 0) return;
    if (m.attn_v_rank.size() <= size_t(layer)) m.attn_v_rank.resize(size_t(layer) + 1, -1);
    m.attn_v_rank[size_t(layer)] = int32_t(m.n_attn_v++);
}

const char* recipe_name(QuantRecipe recipe) {
    return row_of(recipe).name;
}

std::optional<QuantRecipe> recipe_from_name(std::string_view name) {
    auto squash = [](std::string_view s) {
        std::string out;
        for (char c : s) {
            if (c != '_' && c != '-') out += char(std::tolower(static_cast<unsigned char>(c)));
        }
        return out;
    };
    const std::string wanted = squash(name);
    for (const RecipeRow& r : kRecipes) {
        if (squash(r.name) == wanted) return r.recipe;
    }
    return std::nullopt;
}

uint32_t recipe_file_type(QuantRecipe recipe) {
    return row_of(recipe).file_type;
}

std::optional<QuantRecipe> recipe_from_file_type(uint32_t file_type) {
    for (const RecipeRow& r : kRecipes) {
        if (r.file_type == file_type) return r.recipe;
    }
    return std::nullopt;
}

GgmlType recipe_base_type(QuantRecipe recipe) {
    return row_of(recipe).base;
}

const std::vector<QuantRecipe>& all_recipes() {
    static const std::vector<QuantRecipe> all = [] {
        std::vector<QuantRecipe> v;
        for (const RecipeRow& r : kRecipes) v.push_back(r.recipe);
        return v;
    }();
    return all;
}

bool model_is_70b_class(std::string_view arch, uint32_t n_layer, uint32_t n_head,
                        uint32_t n_head_kv) {
    const bool family = arch == "llama" || arch == "qwen2" || arch == "deci";
    return family && n_layer == 80 && n_head_kv < n_head;
}

bool is_quantizable_tensor(std::string_view name, uint32_t n_dims) {
    if (n_dims < 2) return false;
    if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
    static constexpr std::string_view kKept[] = {
        "_norm.weight",         // normalisation weights
        "ffn_gate_inp.weight",  // the MoE router
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d.weight",
        "shortconv.conv.weight",
        "attn_rel_b.weight",
        "time_mix_",
    };
    for (std::string_view part : kKept) {
        if (contains(name, part)) return false;
    }
    return name != "position_embd.weight" && name != "token_types.weight";
}

GgmlType tensor_type_for(QuantRecipe recipe, const QuantModelInfo& m, std::string_view name,
                         uint32_t n_dims, int64_t ne0, GgmlType current) {
    if (!is_quantizable_tensor(name, n_dims)) return current;
    const GgmlType base = recipe_base_type(recipe);
    if (!is_block_quantized(base)) return base;

    const bool falcon = m.arch == "falcon";
    const int layer = layer_of(name);
    GgmlType t = base;
    // llama-quantize counts Gemma 4's per-layer embedding table as a token embedding: with tied
    // embeddings it takes the output's type too (Q6_K in Q4_K_M, as its gemma4 files have it).
    const bool token_embd = name == "token_embd.weight" || name == "per_layer_token_embd.weight";
    if (name == "output.weight" || (!m.has_output && token_embd)) {
        // The output projection decides the logits: Q6_K at least, Q8_0 when rows do not fit.
        if (recipe == R::MXFP4_MOE || falcon || ne0 % block_size(base) != 0) {
            t = T::Q8_0;
        } else if (is_low_bit(recipe) || recipe == R::IQ3_XXS) {
            t = T::Q5_K;
        } else if (base != T::Q8_0) {
            t = T::Q6_K;
        }
    } else if (recipe == R::MXFP4_MOE) {
        t = n_dims >= 3 ? T::MXFP4 : T::Q8_0;  // experts, and everything else
    } else if (token_embd) {
        // Most recipes keep the base type for the embedding.
        if (recipe == R::TQ1_0 || recipe == R::TQ2_0) t = T::Q4_K;
        if (is_low_bit(recipe)) t = low_bit_extra(recipe);
        if (recipe == R::IQ3_XXS) t = T::IQ3_S;
    } else if (is_low_bit(recipe)) {
        t = low_bit_type(recipe, t, m, name, layer);
    } else if (contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight")) {
        // llama.cpp counts fused QKV projections (phi3, Qwen3.5's DeltaNet layers) as attn_v,
        // one per layer, so the layer number is its counter.
        t = attn_v_type(recipe, t, m, layer);
    } else if (contains(name, "attn_k.weight") || contains(name, "attn_q.weight")) {
        const bool k = contains(name, "attn_k.weight");
        if (k && m.n_expert == 8) {
            t = T::Q8_0;
        } else if (recipe == R::IQ3_XS) {
            t = T::IQ3_XXS;
        } else if (recipe == R::IQ3_XXS) {
            t = T::IQ2_S;
        }
    } else if ((contains(name, "ffn_gate") || contains(name, "ffn_up")) && recipe == R::IQ3_XS) {
        const int n = int(m.n_layer);
        if (layer >= n / 8 && layer < 7 * n / 8) t = T::IQ3_XXS;
    } else if (contains(name, "ffn_down")) {
        t = ffn_down_type(recipe, t, m, layer, falcon);
    } else if (contains(name, "attn_output.weight")) {
        t = attn_output_type(recipe, t, m, falcon);
    }
    return fit_row_length(t, ne0);
}

GgmlType row_length_fallback(GgmlType type, int64_t ne0) {
    return fit_row_length(type, ne0);
}

}  // namespace mw
