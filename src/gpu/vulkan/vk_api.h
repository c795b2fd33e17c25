// The Vulkan functions memwall calls, resolved at run time from libvulkan.so.1 (dlopen), so one
// binary runs on machines without a Vulkan loader. Internal to gpu/vulkan/.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace mw::gpu::vk {

#define MW_VK_INSTANCE_FUNCTIONS(X)             \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2)           \
    X(vkGetPhysicalDeviceFeatures2)             \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDevice)                           \
    X(vkGetDeviceProcAddr)

#define MW_VK_DEVICE_FUNCTIONS(X)    \
    X(vkDestroyDevice)               \
    X(vkGetDeviceQueue)              \
    X(vkCreateBuffer)                \
    X(vkDestroyBuffer)               \
    X(vkGetBufferMemoryRequirements) \
    X(vkAllocateMemory)              \
    X(vkFreeMemory)                  \
    X(vkBindBufferMemory)            \
    X(vkMapMemory)                   \
    X(vkUnmapMemory)                 \
    X(vkCreateShaderModule)          \
    X(vkDestroyShaderModule)         \
    X(vkCreateDescriptorSetLayout)   \
    X(vkDestroyDescriptorSetLayout)  \
    X(vkCreatePipelineLayout)        \
    X(vkDestroyPipelineLayout)       \
    X(vkCreateComputePipelines)      \
    X(vkDestroyPipeline)             \
    X(vkCreateDescriptorPool)        \
    X(vkDestroyDescriptorPool)       \
    X(vkAllocateDescriptorSets)      \
    X(vkFreeDescriptorSets)          \
    X(vkUpdateDescriptorSets)        \
    X(vkCreateCommandPool)           \
    X(vkDestroyCommandPool)          \
    X(vkAllocateCommandBuffers)      \
    X(vkBeginCommandBuffer)          \
    X(vkEndCommandBuffer)            \
    X(vkResetCommandBuffer)          \
    X(vkCmdBindPipeline)             \
    X(vkCmdBindDescriptorSets)       \
    X(vkCmdPushConstants)            \
    X(vkCmdDispatch)                 \
    X(vkCmdCopyBuffer)               \
    X(vkQueueSubmit)                 \
    X(vkCreateFence)                 \
    X(vkDestroyFence)                \
    X(vkWaitForFences)               \
    X(vkResetFences)

struct Api {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    PFN_vkCreateInstance vkCreateInstance = nullptr;
#define MW_VK_DECLARE(name) PFN_##name name = nullptr;
    MW_VK_INSTANCE_FUNCTIONS(MW_VK_DECLARE)
    MW_VK_DEVICE_FUNCTIONS(MW_VK_DECLARE)
#undef MW_VK_DECLARE
    // VK_EXT_external_memory_host (null when the device lacks it).
    PFN_vkGetMemoryHostPointerPropertiesEXT vkGetMemoryHostPointerPropertiesEXT = nullptr;
};

// The loader's global functions, or null with the reason (no libvulkan.so.1).
const Api* load_loader(std::string* error);
// Resolves the instance-level functions into `api` (false, and the missing one's name, if any).
bool load_instance(Api& api, VkInstance instance, std::string* missing);
bool load_device(Api& api, VkDevice device, std::string* missing);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and so on.
const char* result_name(VkResult r);

}  // namespace mw::gpu::vk
