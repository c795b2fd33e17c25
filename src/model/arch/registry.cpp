// The architectures memwall runs: one row each, naming its home's hooks (arch/arch.h).
#include <array>

#include "model/arch/arch.h"

namespace mw {
namespace {

ArchSpec llama_like(std::string_view name,
                    void (*read)(const gguf::GgufFile&, HParams&) = nullptr) {
    ArchSpec s;
    s.name = name;
    s.read = read;
    return s;
}

ArchSpec neox(ArchSpec s) {
    s.rope = RopeStyle::neox;
    return s;
}

ArchSpec moe(ArchSpec s) {
    s.moe = true;
    return s;
}

const std::array kArchSpecs = [] {
    ArchSpec qwen3 = neox(llama_like("qwen3"));
    qwen3.bind_mixer = bind_qwen3_attention;
    ArchSpec qwen2moe = moe(neox(llama_like("qwen2moe", read_qwen2moe)));
    qwen2moe.bind_moe_extra = bind_qwen_shared_expert;
    ArchSpec qwen3moe = moe(qwen3);
    qwen3moe.name = "qwen3moe";
    ArchSpec gemma2 = neox(llama_like("gemma2", read_gemma2));
    ArchSpec gemma3 = neox(llama_like("gemma3", read_gemma3));
    gemma3.bind_mixer = bind_gemma3_attention;
    ArchSpec phi3 = neox(llama_like("phi3", read_phi3));
    phi3.min_tensors_per_block = 6;  // fused QKV and gate/up
    phi3.bind_dense_ffn = bind_phi3_ffn;
    phi3.bind_model_extra = bind_phi3_model;
    ArchSpec deepseek2 = moe(llama_like("deepseek2", read_deepseek2));
    deepseek2.bind_mixer = bind_deepseek2_mixer;
    deepseek2.bind_moe_extra = bind_deepseek2_moe;
    ArchSpec command_r = llama_like("command-r", read_command_r);
    command_r.min_tensors_per_block = 8;  // one norm per block
    ArchSpec qwen35 = neox(llama_like("qwen35", read_qwen35));
    qwen35.bind_mixer = bind_qwen35_mixer;
    qwen35.bind_model_extra = bind_qwen35_nextn;
    ArchSpec qwen35moe = moe(qwen35);
    qwen35moe.name = "qwen35moe";
    qwen35moe.bind_moe_extra = bind_qwen_shared_expert;
    ArchSpec lfm2 = neox(llama_like("lfm2", read_lfm2));
    lfm2.min_tensors_per_block = 8;
    lfm2.per_layer_kv_heads = true;
    lfm2.output_norm = "token_embd_norm.weight";
    lfm2.bind_mixer = bind_lfm2_mixer;
    ArchSpec lfm2moe = moe(lfm2);
    lfm2moe.name = "lfm2moe";
    lfm2moe.bind_moe_extra = bind_lfm2moe_extra;
    ArchSpec gptoss = moe(neox(llama_like("gpt-oss", read_gptoss)));
    gptoss.bind_mixer = bind_gptoss_layer;
    ArchSpec gemma4 = neox(llama_like("gemma4", read_gemma4));
    gemma4.per_layer_kv_heads = true;
    gemma4.per_layer_ff = true;
    gemma4.bind_mixer = bind_gemma4_mixer;
    gemma4.bind_dense_ffn = bind_gemma4_ffn;
    gemma4.bind_moe_extra = bind_gemma4_moe;
    gemma4.bind_model_extra = bind_gemma4_model;
    return std::array{
        llama_like("llama"),
        llama_like("mistral"),
        neox(llama_like("qwen2")),
        qwen3,
        qwen2moe,
        qwen3moe,
        gemma2,
        gemma3,
        phi3,
        deepseek2,
        command_r,
        llama_like("granite", read_granite),
        qwen35,
        qwen35moe,
        lfm2,
        lfm2moe,
        llama_like("smollm3", read_smollm3),
        gptoss,
        gemma4,
    };
}();

}  // namespace

std::span<const ArchSpec> arch_specs() {
    return kArchSpecs;
}

const ArchSpec* find_arch_spec(std::string_view name) {
    for (const ArchSpec& s : kArchSpecs) {
        if (s.name == name) return &s;
    }
    return nullptr;
}

}  // namespace mw
