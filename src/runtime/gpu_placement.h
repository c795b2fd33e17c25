// Which of a model's matrices go to the GPU (-ngl N: the last N layers, the output layer too when
// N exceeds the layer count, as in llama.cpp), and the report of what went where.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu.h"
#include "model/model.h"

namespace mw {

struct GpuPlacementOptions {
    int n_gpu_layers = 0;  // 0: none
    int main_gpu = 0;
    bool required = false;  // no device, or a matrix left on the CPU, is then an error
    // Offload to a device of type "cpu" (Mesa's llvmpipe/lavapipe): ~1000x slower than the CPU
    // path, so only when asked (--gpu-allow-cpu-device, or MEMWALL_GPU_ALLOW_CPU_DEVICE=1).
    bool allow_cpu_device = false;
    gpu::OffloadOptions offload;  // device is set from main_gpu
};

struct GpuPlacement {
    std::unique_ptr<gpu::Offload> offload;  // null: everything on the CPU
    std::string summary;  // one line for the model's description ("" when nothing was asked)
    std::string report;   // the device, the layers, the bytes, every matrix left on the CPU
    std::string warning;  // set when offload was asked for and (partly) could not be done
    // The placed matrices the device holds a copy of (not the host's pages) and the CPU never
    // reads (not the token embeddings a tied output shares): [data, data + bytes) the loader may
    // give back once nothing rewrites the mapping any more.
    std::vector<std::pair<const uint8_t*, uint64_t>> copied;
};

// Why -ngl must not use `device` (a device of type "cpu" without the opt-in: the warning a
// user sees), or "" when it may. `allowed` is the option or MEMWALL_GPU_ALLOW_CPU_DEVICE=1.
std::string cpu_device_refusal(const gpu::DeviceInfo& device, bool allowed);

// Places the matrices before any repacking (the shaders read the GGUF layout). `path` names the
// file in messages. Throws under `required` when the placement is incomplete.
GpuPlacement place_on_gpu(const Model& model, const std::string& path,
                          const GpuPlacementOptions& options);

}  // namespace mw
