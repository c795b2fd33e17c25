// A Vulkan instance (one per process, opened on first use) and logical devices on its physical
// devices: a compute queue, the matmul pipelines (created when a type is first used), and
// buffers. Internal to gpu/vulkan/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/ggml_types.h"
#include "gpu/gpu.h"
#include "gpu/vulkan/vk_api.h"

namespace mw::gpu::vk {

struct PhysicalDevice {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    DeviceInfo info;
    uint32_t queue_family = 0;
    uint64_t import_alignment = 0;  // minImportedHostPointerAlignment (0: no host import)
    uint32_t max_group_count_x = 0;
    VkPhysicalDeviceMemoryProperties memory{};
};

class Instance {
  public:
    // The process's instance, or null with why (no loader, no driver, no device).
    static const Instance* get(std::string* error);
    const Api& api() const { return api_; }
    const std::vector<PhysicalDevice>& devices() const { return devices_; }
    VkInstance handle() const { return instance_; }

  private:
    Api api_;
    VkInstance instance_ = VK_NULL_HANDLE;
    std::vector<PhysicalDevice> devices_;
};

// What the matmul shader reads from its push constants (matmul.comp's Params).
struct MatmulParams {
    uint32_t w_offset, row_bytes, n_cols, n_rows, row0, n_tokens, ldy, tpr_log2;
};

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t bytes = 0;
    void* mapped = nullptr;  // host-visible buffers only
};

class Device {
  public:
    // The device at `index`, opened once per process and shared by every offload to it.
    static std::shared_ptr<Device> open(int index, std::string* error);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const PhysicalDevice& physical() const { return *phys_; }
    const Api& api() const { return api_; }
    VkDevice handle() const { return device_; }
    std::mutex& mutex() { return mutex_; }

    // A buffer over [ptr, ptr + bytes) of host memory used in place (ptr and bytes multiples of
    // the import alignment); false with why when the driver refuses.
    bool import_host(const void* ptr, uint64_t bytes, Buffer* out, std::string* why);
    // A host-visible buffer (preferably device-local as well), mapped.
    bool create_host_visible(uint64_t bytes, Buffer* out, std::string* why,
                             VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    // A storage buffer in device-local memory (a discrete GPU's VRAM; the host cannot map it),
    // filled with upload().
    bool create_device_local(uint64_t bytes, Buffer* out, std::string* why);
    // Copies bytes from host memory to the start of a device-local buffer through a staging
    // buffer of at most staging_bytes, in pieces, waiting for each; false with why when the
    // staging buffer cannot be made. The caller holds mutex() (the copies use the one command
    // buffer).
    bool upload(const Buffer& dst, const void* src, uint64_t bytes, uint64_t staging_bytes,
                std::string* why);
    void destroy(Buffer& b);

    // Descriptor sets: set 0 binds one weight buffer, set 1 the input and output. Each goes back
    // with free_set() when its offload is destroyed (models come and go; the device stays).
    VkDescriptorSet allocate_weight_set(const Buffer& weights, std::string* why);
    VkDescriptorSet allocate_io_set(std::string* why);
    void free_set(VkDescriptorSet set);
    uint64_t live_sets();
    void bind_io(VkDescriptorSet set, const Buffer& in, const Buffer& out);

    // The matmul pipeline of a weight type (created on first use); null with why.
    VkPipeline matmul_pipeline(GgmlType type, std::string* why);
    VkPipelineLayout layout() const { return layout_; }

    // Records into the device's one command buffer, submits it and waits. The caller holds
    // mutex() throughout.
    VkCommandBuffer begin();
    void submit_and_wait(VkCommandBuffer cmd);

  private:
    Device() = default;
    bool create_buffer(uint64_t bytes, VkBufferUsageFlags usage,
                       const std::function<int(uint32_t allowed)>& pick, const char* wanted,
                       bool map, Buffer* out, std::string* why);
    bool init(const Instance& inst, int index, std::string* error);
    int memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const;

    Api api_;
    const PhysicalDevice* phys_ = nullptr;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout weight_layout_ = VK_NULL_HANDLE, io_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    struct DescriptorPool {
        VkDescriptorPool handle = VK_NULL_HANDLE;
        uint32_t live = 0;  // sets allocated from it and not yet freed
    };
    std::vector<DescriptorPool> pools_;
    std::unordered_map<VkDescriptorSet, size_t> set_pool_;  // index in pools_
    std::vector<std::pair<GgmlType, VkPipeline>> pipelines_;
    VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::mutex mutex_;
};

}  // namespace mw::gpu::vk
