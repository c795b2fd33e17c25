// Weight matrices on a Vulkan device, and their products. A matrix is bound in chunks of whole
// rows, each within the device's maxStorageBufferRange (128 MiB on lavapipe) and its largest
// workgroup count, so any size works. On a device that imports host memory, a chunk's buffer is
// the mapped file's own pages (the weights exist once); otherwise its bytes are copied once into
// host-visible device memory.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "base/error.h"
#include "gpu/gpu.h"
#include "gpu/vulkan/device.h"

namespace mw::gpu {
namespace {

using vk::Buffer;
using vk::Device;

struct Chunk {
    int64_t row0 = 0, n_rows = 0;
    Buffer buffer;
    VkDescriptorSet set = VK_NULL_HANDLE;
    uint32_t offset = 0;  // bytes from the buffer's start to row row0
};

struct Matrix {
    GgmlType type;
    int64_t n_cols = 0, n_rows = 0;
    size_t row_bytes = 0;
    VkPipeline pipeline = VK_NULL_HANDLE;
    std::vector<Chunk> chunks;
    bool imported = false;  // some chunk is the host's own pages
};

// A matrix is known by its data and its shape: other bytes that later land at a freed matrix's
// address (another model's) are another matrix.
struct MatrixKey {
    const uint8_t* data;
    GgmlType type;
    int64_t n_rows, n_cols;
    bool operator==(const MatrixKey&) const = default;
};
struct MatrixKeyHash {
    size_t operator()(const MatrixKey& k) const {
        size_t h = std::hash<const void*>()(k.data);
        for (const uint64_t v : {uint64_t(k.type), uint64_t(k.n_rows), uint64_t(k.n_cols)}) {
            h = h * 0x9e3779b97f4a7c15ULL + std::hash<uint64_t>()(v);
        }
        return h;
    }
};
MatrixKey key_of(const WeightMatrix& w) {
    return {w.data, w.traits ? w.traits->type : GgmlType::F32, w.n_rows, w.n_cols};
}

constexpr uint32_t kTokensPerGroup = 8;  // matmul.comp's TOKENS
constexpr uint32_t kGroupLog2 = 6;       // and its GROUP: 64 invocations

// log2 of the invocations per row: as many as the row has 32-element units, up to the group.
uint32_t threads_per_row_log2(int64_t n_cols) {
    const int64_t units = (n_cols + 31) / 32;
    uint32_t l = 0;
    while (l < kGroupLog2 && (int64_t(1) << l) < units) ++l;
    return l;
}

uint64_t align_down(uint64_t v, uint64_t a) {
    return v / a * a;
}
uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

class VulkanOffload final : public Offload {
  public:
    VulkanOffload(std::shared_ptr<Device> device, const OffloadOptions& o, VkDescriptorSet io_set)
        : dev_(std::move(device)), options_(o), io_set_(io_set) {}

    // Every product has completed (matmul waits), so nothing the device runs uses these.
    ~VulkanOffload() override {
        for (auto& [key, m] : matrices_) release(m);
        dev_->destroy(in_);
        dev_->destroy(out_);
        dev_->free_set(io_set_);
    }

    const DeviceInfo& device() const override { return dev_->physical().info; }
    uint64_t weight_bytes() const override { return weight_bytes_; }
    uint64_t copied_bytes() const override { return copied_bytes_; }
    uint64_t uploaded_bytes() const override { return uploaded_bytes_; }

    bool holds(const WeightMatrix& w) const override { return matrices_.count(key_of(w)) != 0; }
    bool reads_host_bytes(const WeightMatrix& w) const override {
        const auto it = matrices_.find(key_of(w));
        return it != matrices_.end() && it->second.imported;
    }

    bool add(const WeightMatrix& w, std::string* why) override {
        if (!w.data || !w.traits) {
            *why = "no data";
            return false;
        }
        if (holds(w)) return true;
        if (w.traits->pack_rows != 0) {
            *why = "its rows were repacked for the CPU's kernels";
            return false;
        }
        const GgmlType type = w.traits->type;
        if (!supports(type)) {
            *why = fmt::format("no shader for {}", w.traits->name);
            return false;
        }
        const uintptr_t address = reinterpret_cast<uintptr_t>(w.data);
        if ((type == GgmlType::F32 && address % 4 != 0) || (type == GgmlType::F16 && address % 2)) {
            *why = "its data is not aligned to its element";
            return false;
        }
        Matrix m;
        m.type = type;
        m.n_cols = w.n_cols;
        m.n_rows = w.n_rows;
        m.row_bytes = w.row_bytes;
        {
            const std::lock_guard lock(dev_->mutex());
            m.pipeline = dev_->matmul_pipeline(type, why);
        }
        if (!m.pipeline) return false;

        const vk::PhysicalDevice& pd = dev_->physical();
        const bool import = options_.import_host && pd.import_alignment > 0;
        // Imports start and end on the import alignment: a chunk may span that much more.
        const uint64_t slack = import ? 2 * pd.import_alignment : 16;
        uint64_t range = pd.info.max_binding_range;
        if (options_.max_binding_range) range = std::min(range, options_.max_binding_range);
        // The shader addresses bytes with 32-bit offsets.
        range = std::min<uint64_t>(range, uint64_t(1) << 31);
        if (range <= slack + w.row_bytes) {
            *why = fmt::format("a row of {} bytes does not fit a binding of {} bytes", w.row_bytes,
                               range);
            return false;
        }
        const int64_t rows_per_chunk =
            std::min<int64_t>(int64_t((range - slack) / w.row_bytes), pd.max_group_count_x);
        uint64_t copied = 0, uploaded = 0;
        for (int64_t r0 = 0; r0 < w.n_rows; r0 += rows_per_chunk) {
            Chunk c;
            c.row0 = r0;
            c.n_rows = std::min(rows_per_chunk, w.n_rows - r0);
            const uint8_t* begin = w.row(r0);
            const uint64_t bytes = uint64_t(c.n_rows) * w.row_bytes;
            bool placed = false;
            std::string import_why;
            if (import) {
                const uint64_t a = pd.import_alignment;
                const uint64_t base = align_down(reinterpret_cast<uintptr_t>(begin), a);
                const uint64_t end = align_up(reinterpret_cast<uintptr_t>(begin) + bytes, a);
                placed = dev_->import_host(reinterpret_cast<const void*>(base), end - base,
                                           &c.buffer, &import_why);
                c.offset = uint32_t(reinterpret_cast<uintptr_t>(begin) - base);
                m.imported = m.imported || placed;
            }
            if (!placed) {
                std::string copy_why;
                if (!copy(begin, bytes, &c.buffer, &copy_why)) {
                    *why = import_why.empty() ? copy_why : import_why + "; " + copy_why;
                    release(m);
                    return false;
                }
                c.offset = 0;
                copied += bytes;
                if (to_device_local()) uploaded += bytes;
            }
            m.chunks.push_back(c);
            m.chunks.back().set = dev_->allocate_weight_set(c.buffer, why);
            if (!m.chunks.back().set) {
                release(m);
                return false;
            }
        }
        weight_bytes_ += uint64_t(w.n_rows) * w.row_bytes;
        copied_bytes_ += copied;
        uploaded_bytes_ += uploaded;
        matrices_.emplace(key_of(w), std::move(m));
        return true;
    }

    void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) override {
        const auto it = matrices_.find(key_of(w));
        if (it == matrices_.end()) {
            fail(ErrorKind::invalid_argument, "gpu matmul: the matrix is not on the device");
        }
        const Matrix& m = it->second;
        const std::lock_guard lock(dev_->mutex());
        ensure_io(uint64_t(n_tokens) * m.n_cols * 4, uint64_t(n_tokens) * m.n_rows * 4);
        std::memcpy(in_.mapped, x, size_t(n_tokens) * size_t(m.n_cols) * 4);
        const vk::Api& api = dev_->api();
        VkCommandBuffer cmd = dev_->begin();
        api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, m.pipeline);
        api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->layout(), 1, 1,
                                    &io_set_, 0, nullptr);
        const uint32_t groups_y = uint32_t((n_tokens + kTokensPerGroup - 1) / kTokensPerGroup);
        const uint32_t tpr_log2 = threads_per_row_log2(m.n_cols);
        const int64_t rows_per_group = int64_t(1) << (kGroupLog2 - tpr_log2);
        for (const Chunk& c : m.chunks) {
            api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->layout(), 0, 1,
                                        &c.set, 0, nullptr);
            const vk::MatmulParams p{
                c.offset,         uint32_t(m.row_bytes), uint32_t(m.n_cols), uint32_t(c.n_rows),
                uint32_t(c.row0), uint32_t(n_tokens),    uint32_t(m.n_rows), tpr_log2};
            api.vkCmdPushConstants(cmd, dev_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p,
                                   &p);
            api.vkCmdDispatch(cmd, uint32_t((c.n_rows + rows_per_group - 1) / rows_per_group),
                              groups_y, 1);
        }
        dev_->submit_and_wait(cmd);
        std::memcpy(y, out_.mapped, size_t(n_tokens) * size_t(m.n_rows) * 4);
    }

  private:
    bool to_device_local() const {
        using CopyTo = OffloadOptions::CopyTo;
        return options_.copy_to == CopyTo::device_local ||
               (options_.copy_to == CopyTo::automatic && !dev_->physical().info.unified);
    }

    // A copy of bytes in a new buffer: written directly into host-visible memory, or uploaded
    // into device-local memory (to_device_local()).
    bool copy(const uint8_t* bytes, uint64_t n, vk::Buffer* out, std::string* why) {
        if (!to_device_local()) {
            if (!dev_->create_host_visible(n, out, why)) return false;
            std::memcpy(out->mapped, bytes, n);
            return true;
        }
        if (!dev_->create_device_local(n, out, why)) return false;
        const std::lock_guard lock(dev_->mutex());
        bool uploaded = false;
        try {
            const uint64_t staging =
                options_.staging_bytes ? options_.staging_bytes : uint64_t(64) << 20;
            uploaded = dev_->upload(*out, bytes, n, staging, why);
        } catch (const Error& e) {  // a failed submission: the matrix stays on the CPU
            *why = e.what();
        }
        if (!uploaded) dev_->destroy(*out);
        return uploaded;
    }

    void release(Matrix& m) {
        for (Chunk& c : m.chunks) {
            if (c.set) dev_->free_set(c.set);
            dev_->destroy(c.buffer);
        }
        m.chunks.clear();
    }

    // The input and output buffers, grown to the largest product so far (caller holds the lock).
    void ensure_io(uint64_t in_bytes, uint64_t out_bytes) {
        if (in_.bytes >= in_bytes && out_.bytes >= out_bytes) return;
        std::string why;
        auto grow = [&](Buffer& b, uint64_t need) {
            if (b.bytes >= need) return;
            dev_->destroy(b);
            if (!dev_->create_host_visible(std::max(need, 2 * b.bytes), &b, &why)) {
                fail(ErrorKind::out_of_memory, "Vulkan device {}: {}", device().name, why);
            }
        };
        grow(in_, in_bytes);
        grow(out_, out_bytes);
        dev_->bind_io(io_set_, in_, out_);
    }

    std::shared_ptr<Device> dev_;
    OffloadOptions options_;
    std::unordered_map<MatrixKey, Matrix, MatrixKeyHash> matrices_;
    uint64_t weight_bytes_ = 0, copied_bytes_ = 0, uploaded_bytes_ = 0;
    VkDescriptorSet io_set_;
    Buffer in_, out_;
};

}  // namespace

Devices list_devices() {
    Devices out;
    if (const vk::Instance* inst = vk::Instance::get(&out.error)) {
        for (const vk::PhysicalDevice& d : inst->devices()) out.devices.push_back(d.info);
    }
    return out;
}

uint64_t descriptor_sets_in_use(int device) {
    std::string why;
    const std::shared_ptr<Device> d = Device::open(device, &why);
    return d ? d->live_sets() : 0;
}

bool supports(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::Q4_0:
        case GgmlType::Q8_0:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
        case GgmlType::MXFP4:
            return true;
        default:
            return false;
    }
}

std::unique_ptr<Offload> Offload::create(const OffloadOptions& options, std::string* error) {
    std::string why;
    std::shared_ptr<Device> device = Device::open(options.device, &why);
    if (!device) {
        if (error) *error = why;
        return nullptr;
    }
    const VkDescriptorSet io_set = device->allocate_io_set(&why);
    if (!io_set) {
        if (error) *error = fmt::format("Vulkan device {}: {}", device->physical().info.name, why);
        return nullptr;
    }
    return std::make_unique<VulkanOffload>(std::move(device), options, io_set);
}

}  // namespace mw::gpu
