// Quantization recipes (Q4_K_M, Q3_K_M, ...) and the per-tensor types they give: which tensors keep
// more bits by name and layer position. The rules reproduce llama-quantize without an importance
// matrix and with default options, so that a planned size equals the size of the file
// llama-quantize (or memwall's quantize) would write. Used by the planner (sizes without a file)
// and by quantize (the types to write).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"

namespace mw {

enum class QuantRecipe {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2_K,
    Q2_K_S,
    Q3_K_S,
    Q3_K_M,
    Q3_K_L,
    Q4_K_S,
    Q4_K_M,
    Q5_K_S,
    Q5_K_M,
    Q6_K,
    IQ4_NL,
    IQ4_XS,
    MXFP4_MOE,  // MoE experts MXFP4, the other matrices Q8_0 (gpt-oss)
    TQ2_0,
    TQ1_0,
    // The lattice i-quant mixes (llama-quantize's).
    IQ3_M,
    IQ3_S,
    IQ3_XS,
    IQ3_XXS,
    IQ2_M,
    IQ2_S,
    IQ2_XS,
    IQ2_XXS,
    IQ1_M,
    IQ1_S,
};

// "Q4_K_M" (as llama.cpp names it).
const char* recipe_name(QuantRecipe recipe);
// Case-insensitive: "q4_k_m", "Q4_K_M", "q4km" are all accepted.
std::optional<QuantRecipe> recipe_from_name(std::string_view name);
// The general.file_type value a file of this recipe carries (llama_ftype).
uint32_t recipe_file_type(QuantRecipe recipe);
std::optional<QuantRecipe> recipe_from_file_type(uint32_t file_type);
// The type most tensors get (Q4_K for Q4_K_M).
GgmlType recipe_base_type(QuantRecipe recipe);
// All recipes, from the largest to the smallest per weight.
const std::vector<QuantRecipe>& all_recipes();

// What the rules need to know about the whole model.
struct QuantModelInfo {
    std::string_view arch;  // general.architecture ("falcon" changes a few rules)
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_expert = 0;      // 0 or 1 for dense models
    bool has_output = true;     // a separate output.weight (otherwise token_embd doubles as it)
    bool is_70b_class = false;  // llama.cpp's "70B" model type, see model_is_70b_class()
    bool has_imatrix = false;   // quantizing with an importance matrix (IQ4 recipes differ)
    // llama-quantize counts attn_v tensors (a fused attn_qkv among them), not layers, for their
    // extra bits: Gemma 4's KV-sharing and K = V layers and LFM2's convolution layers have none.
    // Per layer: the rank of its attn_v among them (-1: none); empty: the layer number.
    std::vector<int32_t> attn_v_rank;
    uint32_t n_attn_v = 0;  // how many (0: n_layer)
};

// Counts `name` (the model's tensors in file order) into attn_v_rank / n_attn_v.
void add_attn_v_tensor(QuantModelInfo& m, std::string_view name);

// llama.cpp gives attn_v of its "70B" model type more bits: llama/qwen2-family models with 80
// layers and grouped-query attention (Llama 2/3 70B, Qwen2.5 72B).
bool model_is_70b_class(std::string_view arch, uint32_t n_layer, uint32_t n_head,
                        uint32_t n_head_kv);

// Whether llama-quantize quantizes this tensor at all (2-D and 3-D weights except norms, the MoE
// router and a few small special tensors); others keep their type.
bool is_quantizable_tensor(std::string_view name, uint32_t n_dims);

// The type the tensor gets under the recipe. `current` is its type in the source file (kept when
// the tensor is not quantizable); ne0 is its row length (k-quants need a multiple of 256 and fall
// back to a 32-block type otherwise). The layer comes from the "blk.N." prefix of the name. A 3-D
// tensor is a stack of MoE experts (MXFP4_MOE puts those, and only those, in MXFP4).
GgmlType tensor_type_for(QuantRecipe recipe, const QuantModelInfo& model, std::string_view name,
                         uint32_t n_dims, int64_t ne0, GgmlType current);

// The type a tensor with rows of ne0 elements gets instead of `type` when ne0 is not a multiple of
// its block size (llama-quantize's fallbacks: Q2_K/Q3_K/IQ4_XS -> IQ4_NL, TQ1_0/TQ2_0 -> Q4_0,
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, F16 when even that does not fit); `type` itself when
// the rows fit. For the quantizer's --pure and --tensor-type types, which bypass tensor_type_for.
GgmlType row_length_fallback(GgmlType type, int64_t ne0);

}  // namespace mw
