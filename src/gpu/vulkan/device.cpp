#include "gpu/vulkan/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "base/error.h"
#include "gpu/vulkan/shaders.h"

namespace mw::gpu::vk {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
        return std::strcmp(e.extensionName, name) == 0;
    });
}

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "cpu";
        default:
            return "other";
    }
}

std::string version_text(uint32_t v) {
    return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                       VK_API_VERSION_PATCH(v));
}

// Everything memwall reports of a physical device, and whether it can run the shaders (Vulkan
// 1.1 and a compute queue).
bool describe(const Api& api, VkPhysicalDevice pd, PhysicalDevice* out) {
    VkPhysicalDeviceProperties props{};
    api.vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_1) return false;
    uint32_t n_ext = 0;
    api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
    std::vector<VkExtensionProperties> exts(n_ext);
    api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
    const bool host_import = has_extension(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    const bool dot_ext = props.apiVersion >= VK_API_VERSION_1_3 ||
                         has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT import{};
    import.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
    VkPhysicalDeviceProperties2 props2{};
    props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props2.pNext = &subgroup;
    if (host_import) subgroup.pNext = &import;
    api.vkGetPhysicalDeviceProperties2(pd, &props2);

    VkPhysicalDeviceShaderFloat16Int8Features f16{};
    f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
    dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    if (dot_ext) f16.pNext = &dot;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &f16;
    api.vkGetPhysicalDeviceFeatures2(pd, &features);

    uint32_t n_families = 0;
    api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, nullptr);
    std::vector<VkQueueFamilyProperties> families(n_families);
    api.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, families.data());
    int compute = -1;
    for (uint32_t i = 0; i < n_families; ++i) {
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            compute = int(i);
            // A queue for compute alone, where there is one, keeps clear of graphics work.
            if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
        }
    }
    if (compute < 0) return false;

    out->handle = pd;
    out->queue_family = uint32_t(compute);
    out->import_alignment = host_import ? import.minImportedHostPointerAlignment : 0;
    out->max_group_count_x = props.limits.maxComputeWorkGroupCount[0];
    api.vkGetPhysicalDeviceMemoryProperties(pd, &out->memory);
    DeviceInfo& info = out->info;
    info.name = props.deviceName;
    info.type = type_name(props.deviceType);
    info.api_version = version_text(props.apiVersion);
    for (uint32_t h = 0; h < out->memory.memoryHeapCount; ++h) {
        info.heaps.push_back(
            {out->memory.memoryHeaps[h].size,
             (out->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
    }
    info.unified = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                   props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    info.subgroup_size = subgroup.subgroupSize;
    info.fp16 = f16.shaderFloat16 != VK_FALSE;
    info.int8_dot = dot_ext && dot.shaderIntegerDotProduct != VK_FALSE;
    info.host_import = host_import;
    info.max_binding_range = props.limits.maxStorageBufferRange;
    return true;
}

std::string type_label(GgmlType t) {
    const auto layout = ggml_layout(uint32_t(t));
    return layout ? std::string(layout->name) : fmt::format("type {}", uint32_t(t));
}

struct Shader {
    GgmlType type;
    const uint32_t* code;
    size_t words;
};

const Shader* shader_of(GgmlType t) {
    static const Shader shaders[] = {
        {GgmlType::F32, spirv::matmul_f32, spirv::matmul_f32_words},
        {GgmlType::F16, spirv::matmul_f16, spirv::matmul_f16_words},
        {GgmlType::Q4_0, spirv::matmul_q4_0, spirv::matmul_q4_0_words},
        {GgmlType::Q8_0, spirv::matmul_q8_0, spirv::matmul_q8_0_words},
        {GgmlType::Q4_K, spirv::matmul_q4_k, spirv::matmul_q4_k_words},
        {GgmlType::Q5_K, spirv::matmul_q5_k, spirv::matmul_q5_k_words},
        {GgmlType::Q6_K, spirv::matmul_q6_k, spirv::matmul_q6_k_words},
        {GgmlType::IQ4_NL, spirv::matmul_iq4_nl, spirv::matmul_iq4_nl_words},
        {GgmlType::IQ4_XS, spirv::matmul_iq4_xs, spirv::matmul_iq4_xs_words},
        {GgmlType::MXFP4, spirv::matmul_mxfp4, spirv::matmul_mxfp4_words},
    };
    for (const Shader& s : shaders) {
        if (s.type == t) return &s;
    }
    return nullptr;
}

}  // namespace

const Instance* Instance::get(std::string* error) {
    static std::once_flag once;
    static Instance* instance = nullptr;  // kept for the process: drivers dislike late teardown
    static std::string why;
    std::call_once(once, [] {
        const Api* loader = load_loader(&why);
        if (!loader) return;
        auto inst = std::make_unique<Instance>();
        inst->api_ = *loader;
        VkApplicationInfo app{};
        app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
        app.pApplicationName = "memwall";
        app.pEngineName = "memwall";
        app.apiVersion = VK_API_VERSION_1_1;
        VkInstanceCreateInfo ci{};
        ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
        ci.pApplicationInfo = &app;
        const VkResult r = inst->api_.vkCreateInstance(&ci, nullptr, &inst->instance_);
        if (r != VK_SUCCESS) {
            why = fmt::format("no Vulkan driver: vkCreateInstance failed ({})", result_name(r));
            return;
        }
        std::string missing;
        if (!load_instance(inst->api_, inst->instance_, &missing)) {
            why = "the Vulkan loader lacks " + missing;
            return;
        }
        uint32_t n = 0;
        inst->api_.vkEnumeratePhysicalDevices(inst->instance_, &n, nullptr);
        std::vector<VkPhysicalDevice> pds(n);
        inst->api_.vkEnumeratePhysicalDevices(inst->instance_, &n, pds.data());
        for (VkPhysicalDevice pd : pds) {
            PhysicalDevice d;
            if (describe(inst->api_, pd, &d)) inst->devices_.push_back(std::move(d));
        }
        if (inst->devices_.empty()) {
            why = n == 0 ? "no Vulkan device found (no driver installed, or VK_ICD_FILENAMES "
                           "names none)"
                         : fmt::format(
                               "none of the {} Vulkan devices has Vulkan 1.1 and a compute "
                               "queue",
                               n);
            return;
        }
        instance = inst.release();
    });
    if (!instance && error) *error = why;
    return instance;
}

std::shared_ptr<Device> Device::open(int index, std::string* error) {
    static std::mutex m;
    static std::map<int, std::shared_ptr<Device>>* open_devices =
        new std::map<int, std::shared_ptr<Device>>();  // kept for the process, as the instance
    const Instance* inst = Instance::get(error);
    if (!inst) return nullptr;
    if (index < 0 || size_t(index) >= inst->devices().size()) {
        *error = fmt::format("there is no Vulkan device {} (this machine has {}: 0 to {})", index,
                             inst->devices().size(), inst->devices().size() - 1);
        return nullptr;
    }
    const std::lock_guard lock(m);
    auto& slot = (*open_devices)[index];
    if (slot) return slot;
    std::shared_ptr<Device> d(new Device());
    if (!d->init(*inst, index, error)) return nullptr;
    slot = d;
    return d;
}

bool Device::init(const Instance& inst, int index, std::string* error) {
    api_ = inst.api();
    phys_ = &inst.devices()[size_t(index)];
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo q{};
    q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    q.queueFamilyIndex = phys_->queue_family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    std::vector<const char*> exts;
    if (phys_->info.host_import) {
        exts.push_back(
            VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME);  // core in 1.1; named for old drivers
        exts.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    }
    VkDeviceCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    ci.enabledExtensionCount = uint32_t(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    const std::string& name = phys_->info.name;
    VkResult r = api_.vkCreateDevice(phys_->handle, &ci, nullptr, &device_);
    if (r != VK_SUCCESS) {
        *error = fmt::format("Vulkan device {} ({}): vkCreateDevice failed ({})", index, name,
                             result_name(r));
        device_ = VK_NULL_HANDLE;
        return false;
    }
    std::string missing;
    if (!load_device(api_, device_, &missing)) {
        *error = fmt::format("Vulkan device {} ({}): the driver lacks {}", index, name, missing);
        return false;
    }
    api_.vkGetDeviceQueue(device_, phys_->queue_family, 0, &queue_);

    auto set_layout = [&](uint32_t bindings, VkDescriptorSetLayout* out) {
        VkDescriptorSetLayoutBinding b[2]{};
        for (uint32_t i = 0; i < bindings; ++i) {
            b[i].binding = i;
            b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            b[i].descriptorCount = 1;
            b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        VkDescriptorSetLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
        li.bindingCount = bindings;
        li.pBindings = b;
        return api_.vkCreateDescriptorSetLayout(device_, &li, nullptr, out);
    };
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(MatmulParams)};
    VkDescriptorSetLayout sets[2];
    VkPipelineLayoutCreateInfo pl{};
    pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pl.setLayoutCount = 2;
    pl.pSetLayouts = sets;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &push;
    VkCommandPoolCreateInfo cp{};
    cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cp.queueFamilyIndex = phys_->queue_family;
    VkFenceCreateInfo fi{};
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    if ((r = set_layout(1, &weight_layout_)) != VK_SUCCESS ||
        (r = set_layout(2, &io_layout_)) != VK_SUCCESS ||
        (sets[0] = weight_layout_, sets[1] = io_layout_,
         r = api_.vkCreatePipelineLayout(device_, &pl, nullptr, &layout_)) != VK_SUCCESS ||
        (r = api_.vkCreateCommandPool(device_, &cp, nullptr, &cmd_pool_)) != VK_SUCCESS ||
        (r = api_.vkCreateFence(device_, &fi, nullptr, &fence_)) != VK_SUCCESS) {
        *error = fmt::format("Vulkan device {} ({}): setting up failed ({})", index, name,
                             result_name(r));
        return false;
    }
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = cmd_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if ((r = api_.vkAllocateCommandBuffers(device_, &ai, &cmd_)) != VK_SUCCESS) {
        *error = fmt::format("Vulkan device {} ({}): no command buffer ({})", index, name,
                             result_name(r));
        return false;
    }
    return true;
}

Device::~Device() {
    if (!device_) return;
    for (auto& [type, p] : pipelines_) api_.vkDestroyPipeline(device_, p, nullptr);
    for (const DescriptorPool& p : pools_) api_.vkDestroyDescriptorPool(device_, p.handle, nullptr);
    if (fence_) api_.vkDestroyFence(device_, fence_, nullptr);
    if (cmd_pool_) api_.vkDestroyCommandPool(device_, cmd_pool_, nullptr);
    if (layout_) api_.vkDestroyPipelineLayout(device_, layout_, nullptr);
    if (io_layout_) api_.vkDestroyDescriptorSetLayout(device_, io_layout_, nullptr);
    if (weight_layout_) api_.vkDestroyDescriptorSetLayout(device_, weight_layout_, nullptr);
    api_.vkDestroyDevice(device_, nullptr);
}

int Device::memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const {
    const VkPhysicalDeviceMemoryProperties& mp = phys_->memory;
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
        if ((allowed & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want)
            return int(i);
    }
    return -1;
}

bool Device::import_host(const void* ptr, uint64_t bytes, Buffer* out, std::string* why) {
    if (!api_.vkGetMemoryHostPointerPropertiesEXT) {
        *why = "the device cannot import host memory";
        return false;
    }
    VkMemoryHostPointerPropertiesEXT hp{};
    hp.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
    VkResult r = api_.vkGetMemoryHostPointerPropertiesEXT(
        device_, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, ptr, &hp);
    if (r != VK_SUCCESS) {
        *why = fmt::format("the driver does not take this memory ({})", result_name(r));
        return false;
    }
    VkExternalMemoryBufferCreateInfo ext{};
    ext.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.pNext = &ext;
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    Buffer b;
    b.bytes = bytes;
    if ((r = api_.vkCreateBuffer(device_, &bi, nullptr, &b.buffer)) != VK_SUCCESS) {
        *why = fmt::format("vkCreateBuffer failed ({})", result_name(r));
        return false;
    }
    VkMemoryRequirements req{};
    api_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    const int type = memory_type(req.memoryTypeBits & hp.memoryTypeBits, 0);
    if (type < 0) {
        destroy(b);
        *why = "no memory type can hold imported host memory";
        return false;
    }
    VkImportMemoryHostPointerInfoEXT import{};
    import.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    import.pHostPointer = const_cast<void*>(ptr);
    VkMemoryAllocateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mi.pNext = &import;
    mi.allocationSize = bytes;
    mi.memoryTypeIndex = uint32_t(type);
    if ((r = api_.vkAllocateMemory(device_, &mi, nullptr, &b.memory)) != VK_SUCCESS ||
        (r = api_.vkBindBufferMemory(device_, b.buffer, b.memory, 0)) != VK_SUCCESS) {
        destroy(b);
        *why = fmt::format("importing {} bytes failed ({})", bytes, result_name(r));
        return false;
    }
    *out = b;
    return true;
}

bool Device::create_buffer(uint64_t bytes, VkBufferUsageFlags usage,
                           const std::function<int(uint32_t allowed)>& pick, const char* wanted,
                           bool map, Buffer* out, std::string* why) {
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    // Whole 16-byte words: the shaders read 32-bit words, and a weight chunk's last bytes may
    // end inside one.
    bi.size = std::max<uint64_t>((bytes + 15) / 16 * 16, 16);
    bi.usage = usage;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    Buffer b;
    b.bytes = bi.size;
    VkResult r = api_.vkCreateBuffer(device_, &bi, nullptr, &b.buffer);
    if (r != VK_SUCCESS) {
        *why = fmt::format("vkCreateBuffer of {} bytes failed ({})", bytes, result_name(r));
        return false;
    }
    VkMemoryRequirements req{};
    api_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    const int type = pick(req.memoryTypeBits);
    if (type < 0) {
        destroy(b);
        *why = fmt::format("no {} memory type", wanted);
        return false;
    }
    VkMemoryAllocateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mi.allocationSize = req.size;
    mi.memoryTypeIndex = uint32_t(type);
    if ((r = api_.vkAllocateMemory(device_, &mi, nullptr, &b.memory)) != VK_SUCCESS ||
        (r = api_.vkBindBufferMemory(device_, b.buffer, b.memory, 0)) != VK_SUCCESS ||
        (map &&
         (r = api_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped)) != VK_SUCCESS)) {
        destroy(b);
        *why = fmt::format("allocating {} bytes of {} memory failed ({})", bytes, wanted,
                           result_name(r));
        return false;
    }
    *out = b;
    return true;
}

bool Device::create_host_visible(uint64_t bytes, Buffer* out, std::string* why,
                                 VkBufferUsageFlags usage) {
    const auto pick = [this](uint32_t allowed) {
        const VkMemoryPropertyFlags visible =
            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        const int type = memory_type(allowed, visible | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        return type >= 0 ? type : memory_type(allowed, visible);
    };
    return create_buffer(bytes, usage, pick, "host-visible, coherent", true, out, why);
}

bool Device::create_device_local(uint64_t bytes, Buffer* out, std::string* why) {
    // VRAM proper first: a discrete GPU's device-local, host-visible type is the small window
    // the CPU can map (256 MiB without resizable BAR), kept for what the CPU writes often.
    const auto pick = [this](uint32_t allowed) {
        const VkPhysicalDeviceMemoryProperties& mp = phys_->memory;
        for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
            const VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
            if ((allowed & (1u << i)) && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
                !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
                return int(i);
        }
        return memory_type(allowed, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    };
    return create_buffer(bytes,
                         VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         pick, "device-local", false, out, why);
}

void Device::destroy(Buffer& b) {
    if (b.mapped) api_.vkUnmapMemory(device_, b.memory);
    if (b.buffer) api_.vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) api_.vkFreeMemory(device_, b.memory, nullptr);
    b = Buffer{};
}

bool Device::upload(const Buffer& dst, const void* src, uint64_t bytes, uint64_t staging_bytes,
                    std::string* why) {
    // One staging buffer per upload, released at the end: weights are uploaded once, at load.
    Buffer staging;
    if (!create_host_visible(std::min(bytes, staging_bytes), &staging, why,
                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT)) {
        *why = "no staging buffer for the upload: " + *why;
        return false;
    }
    const auto* from = static_cast<const uint8_t*>(src);
    try {
        for (uint64_t done = 0; done < bytes;) {
            const uint64_t n = std::min(bytes - done, staging.bytes);
            std::memcpy(staging.mapped, from + done, n);
            VkCommandBuffer cmd = begin();
            const VkBufferCopy region{0, done, n};
            api_.vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &region);
            submit_and_wait(cmd);
            done += n;
        }
    } catch (...) {
        destroy(staging);
        throw;
    }
    destroy(staging);
    return true;
}

VkDescriptorSet Device::allocate_weight_set(const Buffer& weights, std::string* why) {
    constexpr uint32_t kSetsPerPool = 256;
    const std::lock_guard lock(mutex_);
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = weights.buffer ? &weight_layout_ : &io_layout_;
    VkDescriptorSet set = VK_NULL_HANDLE;
    // The first pool with room; a pool that still refuses (fragmented) is passed over.
    size_t pool = 0;
    for (; pool < pools_.size(); ++pool) {
        if (pools_[pool].live >= kSetsPerPool) continue;
        ai.descriptorPool = pools_[pool].handle;
        if (api_.vkAllocateDescriptorSets(device_, &ai, &set) == VK_SUCCESS) break;
    }
    if (pool == pools_.size()) {
        VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * kSetsPerPool};
        VkDescriptorPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
        pi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
        pi.maxSets = kSetsPerPool;
        pi.poolSizeCount = 1;
        pi.pPoolSizes = &size;
        DescriptorPool created;
        VkResult r = api_.vkCreateDescriptorPool(device_, &pi, nullptr, &created.handle);
        if (r != VK_SUCCESS) {
            *why = fmt::format("vkCreateDescriptorPool failed ({})", result_name(r));
            return VK_NULL_HANDLE;
        }
        pools_.push_back(created);
        ai.descriptorPool = created.handle;
        r = api_.vkAllocateDescriptorSets(device_, &ai, &set);
        if (r != VK_SUCCESS) {
            *why = fmt::format("vkAllocateDescriptorSets failed ({})", result_name(r));
            return VK_NULL_HANDLE;
        }
    }
    ++pools_[pool].live;
    set_pool_.emplace(set, pool);
    if (weights.buffer) {
        VkDescriptorBufferInfo info{weights.buffer, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet wr{};
        wr.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        wr.dstSet = set;
        wr.dstBinding = 0;
        wr.descriptorCount = 1;
        wr.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        wr.pBufferInfo = &info;
        api_.vkUpdateDescriptorSets(device_, 1, &wr, 0, nullptr);
    }
    return set;
}

VkDescriptorSet Device::allocate_io_set(std::string* why) {
    return allocate_weight_set({}, why);
}

uint64_t Device::live_sets() {
    const std::lock_guard lock(mutex_);
    return set_pool_.size();
}

void Device::free_set(VkDescriptorSet set) {
    const std::lock_guard lock(mutex_);
    const auto it = set_pool_.find(set);
    if (it == set_pool_.end()) return;
    DescriptorPool& pool = pools_[it->second];
    api_.vkFreeDescriptorSets(device_, pool.handle, 1, &set);
    --pool.live;
    set_pool_.erase(it);
}

void Device::bind_io(VkDescriptorSet set, const Buffer& in, const Buffer& out) {
    VkDescriptorBufferInfo info[2] = {{in.buffer, 0, VK_WHOLE_SIZE},
                                      {out.buffer, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet wr[2]{};
    for (int i = 0; i < 2; ++i) {
        wr[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        wr[i].dstSet = set;
        wr[i].dstBinding = uint32_t(i);
        wr[i].descriptorCount = 1;
        wr[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        wr[i].pBufferInfo = &info[i];
    }
    api_.vkUpdateDescriptorSets(device_, 2, wr, 0, nullptr);
}

VkPipeline Device::matmul_pipeline(GgmlType type, std::string* why) {
    for (const auto& [t, p] : pipelines_) {
        if (t == type) return p;
    }
    const Shader* shader = shader_of(type);
    if (!shader) {
        *why = fmt::format("no shader for {}", type_label(type));
        return VK_NULL_HANDLE;
    }
    VkShaderModuleCreateInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    si.codeSize = shader->words * 4;
    si.pCode = shader->code;
    VkShaderModule module = VK_NULL_HANDLE;
    VkResult r = api_.vkCreateShaderModule(device_, &si, nullptr, &module);
    if (r != VK_SUCCESS) {
        *why =
            fmt::format("the driver refused the {} shader ({})", type_label(type), result_name(r));
        return VK_NULL_HANDLE;
    }
    VkComputePipelineCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pi.stage.module = module;
    pi.stage.pName = "main";
    pi.layout = layout_;
    VkPipeline pipeline = VK_NULL_HANDLE;
    r = api_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &pi, nullptr, &pipeline);
    api_.vkDestroyShaderModule(device_, module, nullptr);
    if (r != VK_SUCCESS) {
        *why = fmt::format("the driver failed to create the {} pipeline ({})", type_label(type),
                           result_name(r));
        return VK_NULL_HANDLE;
    }
    pipelines_.push_back({type, pipeline});
    return pipeline;
}

VkCommandBuffer Device::begin() {
    api_.vkResetCommandBuffer(cmd_, 0);
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    const VkResult r = api_.vkBeginCommandBuffer(cmd_, &bi);
    if (r != VK_SUCCESS) {
        fail(ErrorKind::io, "Vulkan device {}: vkBeginCommandBuffer failed ({})", phys_->info.name,
             result_name(r));
    }
    return cmd_;
}

void Device::submit_and_wait(VkCommandBuffer cmd) {
    VkResult r = api_.vkEndCommandBuffer(cmd);
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    if (r == VK_SUCCESS) r = api_.vkQueueSubmit(queue_, 1, &si, fence_);
    if (r == VK_SUCCESS) r = api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX);
    api_.vkResetFences(device_, 1, &fence_);
    if (r != VK_SUCCESS) {
        fail(ErrorKind::io, "Vulkan device {}: running the matrix products failed ({})",
             phys_->info.name, result_name(r));
    }
}

}  // namespace mw::gpu::vk
