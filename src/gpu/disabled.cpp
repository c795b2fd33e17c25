// Built without Vulkan (MEMWALL_VULKAN=OFF): no devices, and every offload refused with why.
#include "gpu/gpu.h"

namespace mw::gpu {

namespace {
constexpr const char* kWhy =
    "this memwall was built without Vulkan (MEMWALL_VULKAN=OFF: the Vulkan headers or glslc "
    "were not found)";
}

Devices list_devices() {
    return {{}, kWhy};
}

uint64_t descriptor_sets_in_use(int) {
    return 0;
}

bool supports(GgmlType) {
    return false;
}

std::unique_ptr<Offload> Offload::create(const OffloadOptions&, std::string* error) {
    if (error) *error = kWhy;
    return nullptr;
}

}  // namespace mw::gpu
