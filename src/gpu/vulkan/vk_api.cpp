#include "gpu/vulkan/vk_api.h"

#include <dlfcn.h>

#include <mutex>

namespace mw::gpu::vk {

const Api* load_loader(std::string* error) {
    static Api api;
    static std::string why;
    static std::once_flag once;
    std::call_once(once, [] {
        // Not closed: the driver's threads and atexit handlers may outlive any owner.
        void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = dlerror();
            why =
                std::string("cannot open the Vulkan loader libvulkan.so.1 (Debian: libvulkan1): ") +
                (e ? e : "not found");
            return;
        }
        api.vkGetInstanceProcAddr =
            reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
        if (!api.vkGetInstanceProcAddr) {
            why = "libvulkan.so.1 has no vkGetInstanceProcAddr";
            return;
        }
        api.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
            api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
        if (!api.vkCreateInstance) why = "the Vulkan loader has no vkCreateInstance";
    });
    if (!why.empty()) {
        if (error) *error = why;
        return nullptr;
    }
    return &api;
}

// Sets api.name through the enclosing function's `get`, or returns false naming the entry point
// the driver lacks: one body for the instance's and the device's lists.
#define MW_VK_LOAD(name)                                 \
    api.name = reinterpret_cast<PFN_##name>(get(#name)); \
    if (!api.name) {                                     \
        *missing = #name;                                \
        return false;                                    \
    }

bool load_instance(Api& api, VkInstance instance, std::string* missing) {
    const auto get = [&](const char* name) { return api.vkGetInstanceProcAddr(instance, name); };
    MW_VK_INSTANCE_FUNCTIONS(MW_VK_LOAD)
    return true;
}

bool load_device(Api& api, VkDevice device, std::string* missing) {
    const auto get = [&](const char* name) { return api.vkGetDeviceProcAddr(device, name); };
    MW_VK_DEVICE_FUNCTIONS(MW_VK_LOAD)
    // Optional (VK_EXT_external_memory_host): null where the device cannot import host memory.
    api.vkGetMemoryHostPointerPropertiesEXT =
        reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
            get("vkGetMemoryHostPointerPropertiesEXT"));
    return true;
}

#undef MW_VK_LOAD

const char* result_name(VkResult r) {
    switch (r) {
        case VK_SUCCESS:
            return "VK_SUCCESS";
        case VK_NOT_READY:
            return "VK_NOT_READY";
        case VK_TIMEOUT:
            return "VK_TIMEOUT";
        case VK_INCOMPLETE:
            return "VK_INCOMPLETE";
        case VK_ERROR_OUT_OF_HOST_MEMORY:
            return "VK_ERROR_OUT_OF_HOST_MEMORY";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY:
            return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
        case VK_ERROR_INITIALIZATION_FAILED:
            return "VK_ERROR_INITIALIZATION_FAILED";
        case VK_ERROR_DEVICE_LOST:
            return "VK_ERROR_DEVICE_LOST";
        case VK_ERROR_MEMORY_MAP_FAILED:
            return "VK_ERROR_MEMORY_MAP_FAILED";
        case VK_ERROR_LAYER_NOT_PRESENT:
            return "VK_ERROR_LAYER_NOT_PRESENT";
        case VK_ERROR_EXTENSION_NOT_PRESENT:
            return "VK_ERROR_EXTENSION_NOT_PRESENT";
        case VK_ERROR_FEATURE_NOT_PRESENT:
            return "VK_ERROR_FEATURE_NOT_PRESENT";
        case VK_ERROR_INCOMPATIBLE_DRIVER:
            return "VK_ERROR_INCOMPATIBLE_DRIVER";
        case VK_ERROR_TOO_MANY_OBJECTS:
            return "VK_ERROR_TOO_MANY_OBJECTS";
        case VK_ERROR_INVALID_EXTERNAL_HANDLE:
            return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
        default:
            return "VkResult error";
    }
}

}  // namespace mw::gpu::vk
