// The SPIR-V of src/gpu/vulkan/shaders/*.comp, compiled by glslc at build time and embedded by
// cmake/embed_spirv.cmake (the generated shaders.cpp defines these).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw::gpu::vk::spirv {

#define MW_SPIRV(name)            \
    extern const uint32_t name[]; \
    extern const size_t name##_words;
MW_SPIRV(matmul_f32)
MW_SPIRV(matmul_f16)
MW_SPIRV(matmul_q4_0)
MW_SPIRV(matmul_q8_0)
MW_SPIRV(matmul_q4_k)
MW_SPIRV(matmul_q5_k)
MW_SPIRV(matmul_q6_k)
MW_SPIRV(matmul_iq4_nl)
MW_SPIRV(matmul_iq4_xs)
MW_SPIRV(matmul_mxfp4)
#undef MW_SPIRV

}  // namespace mw::gpu::vk::spirv
