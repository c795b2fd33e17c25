// GPU offload: the matrices of a model placed on a GPU, and their products computed there. The
// backend (gpu/vulkan/) knows nothing of models, as tensor/ does; no Vulkan type appears in this
// interface. Built without Vulkan (MEMWALL_VULKAN=OFF), list_devices() finds none and
// Offload::create() says why (gpu/disabled.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/ops.h"

namespace mw::gpu {

struct MemoryHeap {
    uint64_t bytes = 0;
    bool device_local = false;
};

struct DeviceInfo {
    std::string name;
    std::string type;  // "integrated", "discrete", "virtual", "cpu" or "other"
    std::string api_version;
    std::vector<MemoryHeap> heaps;
    // The GPU and the CPU share the RAM (phones, integrated GPUs, lavapipe): offloaded weights
    // stay where they are, in the mapped file, instead of being copied.
    bool unified = false;
    uint32_t subgroup_size = 0;
    bool fp16 = false;               // shaderFloat16
    bool int8_dot = false;           // shaderIntegerDotProduct
    bool host_import = false;        // VK_EXT_external_memory_host: a mapping can be used in place
    uint64_t max_binding_range = 0;  // maxStorageBufferRange: larger matrices are bound in parts
};

struct Devices {
    std::vector<DeviceInfo> devices;
    std::string error;  // why there are none (no loader, no driver, built without Vulkan)
};
Devices list_devices();

// Descriptor sets that the offloads to a device hold now (0 where it is not open): what one
// offload took goes back when it is destroyed, so a server loading models in turn does not grow.
uint64_t descriptor_sets_in_use(int device);

// Whether a weight type has a shader (the others stay on the CPU).
bool supports(GgmlType type);

struct OffloadOptions {
    int device = 0;  // index in list_devices()
    // Bind no more than this many bytes of a matrix at once (0: the device's limit); tests use a
    // small one to cover the split.
    uint64_t max_binding_range = 0;
    // Use the weights' own pages where the device can import host memory; false copies them into
    // device memory (tests cover both).
    bool import_host = true;
    // Where copied weights go. automatic: memory the CPU writes directly on a unified-memory
    // device (it is the same RAM), device-local memory through a staging buffer on a discrete
    // GPU (its own VRAM: reading host memory over PCIe at every product would be far slower).
    // Tests force either path on any device.
    enum class CopyTo { automatic, host_visible, device_local };
    CopyTo copy_to = CopyTo::automatic;
    // The staging buffer's size (0: 64 MiB); tests use a small one to cover uploads in pieces.
    uint64_t staging_bytes = 0;
};

// One device and the weight matrices placed on it. Thread-safe: contexts sharing a model share
// its offload, and their products are queued one after another.
class Offload {
  public:
    virtual ~Offload() = default;
    // Null, with the reason in `error`, when the device cannot be opened.
    static std::unique_ptr<Offload> create(const OffloadOptions& options, std::string* error);

    virtual const DeviceInfo& device() const = 0;
    // Places w on the device. Its bytes must stay valid and unchanged as long as the offload:
    // on a unified-memory device they are used where they are. False, and why, when the matrix
    // stays on the CPU (a type without a shader, device memory exhausted).
    virtual bool add(const WeightMatrix& w, std::string* why) = 0;
    // Whether w (by its data) was placed.
    virtual bool holds(const WeightMatrix& w) const = 0;
    // Whether the device reads w's own bytes (imported host pages) rather than a copy: a placed
    // matrix wholly copied no longer needs its bytes in host memory.
    virtual bool reads_host_bytes(const WeightMatrix& w) const = 0;
    // y[t][r] = sum_c w[r][c] * x[t][c], as mw::matmul, for a matrix add() placed. The activations
    // stay in F32 (no 8-bit encoding).
    virtual void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) = 0;
    // Weight bytes placed, and of those the bytes copied into device memory (0 on a unified
    // device that imports the mapping), and of those the bytes uploaded to device-local memory
    // through a staging buffer.
    virtual uint64_t weight_bytes() const = 0;
    virtual uint64_t copied_bytes() const = 0;
    virtual uint64_t uploaded_bytes() const = 0;
};

}  // namespace mw::gpu
