// The Vulkan backend (gpu/): every matmul shader against the scalar reference (each row decoded
// by the type table's to_float, summed in double) on random blocks and awkward sizes, both ways
// of placing weights (the host's pages imported, or copied), and matrices split across bindings.
// On a machine without a Vulkan device (CI uses Mesa's lavapipe) the tests skip, saying why.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "gpu/gpu.h"
#include "runtime/context.h"
#include "runtime/gpu_placement.h"
#include "runtime/loaded_model.h"
#include "support/random_blocks.h"
#include "support/test_support.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace {

using mw::GgmlType;

std::unique_ptr<mw::gpu::Offload> open_device(const mw::gpu::OffloadOptions& o, std::string* why) {
    return mw::gpu::Offload::create(o, why);
}

#define OPEN_OR_SKIP(var, options)               \
    std::string why_##var;                       \
    auto var = open_device(options, &why_##var); \
    if (!var) GTEST_SKIP() << "SKIPPED: no Vulkan device: " << why_##var;

// Page-aligned bytes that stay put (the device may import them in place).
struct PageBuffer {
    explicit PageBuffer(const std::vector<uint8_t>& bytes) : size(bytes.size()) {
        mapped = (size + 4095) / 4096 * 4096 + 4096;
        void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        data = static_cast<uint8_t*>(p);
        // An odd start within the page, as a tensor's data inside a mapped file has.
        data += 96;
        std::memcpy(data, bytes.data(), size);
    }
    ~PageBuffer() { munmap(data - 96, mapped); }
    uint8_t* data;
    size_t size, mapped;
};

struct Shape {
    int64_t rows, cols, tokens;
};

// y_ref[t][r] in double, and the scale of each sum (for a relative bound).
void reference(const mw::TypeTraits& t, const uint8_t* w, size_t row_bytes, const Shape& s,
               const std::vector<float>& x, std::vector<double>* y, std::vector<double>* scale) {
    std::vector<float> row(size_t(s.cols));
    y->assign(size_t(s.rows * s.tokens), 0.0);
    scale->assign(y->size(), 0.0);
    for (int64_t r = 0; r < s.rows; ++r) {
        t.to_float(w + size_t(r) * row_bytes, row.data(), s.cols);
        for (int64_t k = 0; k < s.tokens; ++k) {
            double sum = 0, mag = 0;
            for (int64_t c = 0; c < s.cols; ++c) {
                sum += double(row[size_t(c)]) * x[size_t(k * s.cols + c)];
                mag += std::fabs(double(row[size_t(c)]) * x[size_t(k * s.cols + c)]);
            }
            (*y)[size_t(k * s.rows + r)] = sum;
            (*scale)[size_t(k * s.rows + r)] = mag;
        }
    }
}

// The weights must outlive the offload (it may use their pages in place): each test keeps its
// buffers until the end.
using Buffers = std::vector<std::unique_ptr<PageBuffer>>;

void check_matmul(mw::gpu::Offload& gpu, GgmlType type, const Shape& s, uint32_t seed,
                  Buffers& keep, void (*edit)(std::vector<uint8_t>&) = nullptr) {
    const mw::TypeTraits& t = *mw::type_traits(type);
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes = mw::test::random_weight_rows(t, s.rows, s.cols, rng);
    if (edit) edit(bytes);
    keep.push_back(std::make_unique<PageBuffer>(bytes));
    const PageBuffer& buf = *keep.back();
    mw::WeightMatrix w;
    w.data = buf.data;
    w.traits = &t;
    w.n_cols = s.cols;
    w.n_rows = s.rows;
    w.row_bytes = mw::row_bytes(t, s.cols);
    std::string why;
    ASSERT_TRUE(gpu.add(w, &why)) << t.name << ": " << why;
    ASSERT_TRUE(gpu.holds(w));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(s.tokens * s.cols));
    for (float& v : x) v = normal(rng);
    std::vector<float> y(size_t(s.tokens * s.rows), NAN);
    gpu.matmul(w, x.data(), s.tokens, y.data());
    std::vector<double> ref, scale;
    reference(t, buf.data, w.row_bytes, s, x, &ref, &scale);
    int bad = 0;
    for (size_t i = 0; i < y.size() && bad < 5; ++i) {
        // Float sums of up to a few thousand products: a few ulps of the magnitude's sum.
        const double tol = 1e-5 * scale[i] + 1e-6;
        if (!(std::fabs(double(y[i]) - ref[i]) <= tol)) {
            ADD_FAILURE() << t.name << " " << s.rows << "x" << s.cols << " x " << s.tokens
                          << " tokens: y[token " << i / size_t(s.rows) << "][row "
                          << i % size_t(s.rows) << "] = " << y[i] << ", reference " << ref[i];
            ++bad;
        }
    }
}

const GgmlType kTypes[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::Q4_0, GgmlType::Q8_0,
                           GgmlType::Q4_K,   GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                           GgmlType::IQ4_XS, GgmlType::MXFP4};

class GpuMatmul : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GpuMatmul, MatchesTheScalarReference) {
    Buffers keep;  // before the offload: destroyed after it
    OPEN_OR_SKIP(gpu, mw::gpu::OffloadOptions{});
    const mw::TypeTraits& t = *mw::type_traits(GetParam());
    const int64_t block = t.is_quantized ? t.block_size : 32;
    // One block; odd rows; one token to past two workgroups of tokens; rows of 1 to 80 units of
    // 32 (one to 64 rows per workgroup, and more units than invocations); rows not a multiple of
    // 32 for the float types (stories260K's 172).
    std::vector<Shape> shapes = {{1, block, 1},      {7, block * 3, 5},   {33, block * 2, 9},
                                 {5, block * 4, 17}, {64, block * 16, 2}, {3, block * 80, 2}};
    if (!t.is_quantized) {
        shapes.push_back({9, 172, 3});
        shapes.push_back({3, 1, 2});
    }
    uint32_t seed = 1;
    for (const Shape& s : shapes) check_matmul(*gpu, GetParam(), s, seed++, keep);
}

TEST_P(GpuMatmul, CopiedWeightsAndSplitBindingsGiveTheSameProducts) {
    mw::gpu::OffloadOptions o;
    o.import_host = false;
    o.max_binding_range = 4096;  // every matrix below spans several bindings
    Buffers keep;
    OPEN_OR_SKIP(gpu, o);
    const mw::TypeTraits& t = *mw::type_traits(GetParam());
    const int64_t cols = t.is_quantized ? t.block_size * 4 : 256;
    check_matmul(*gpu, GetParam(), {61, cols, 3}, 7, keep);
    EXPECT_GT(gpu->copied_bytes(), 0u);
    if (gpu->device().unified) {
        EXPECT_EQ(gpu->uploaded_bytes(), 0u);
    }
}

// A discrete GPU's path: device-local memory filled through a staging buffer (here of 1000
// bytes, so that a chunk arrives in several pieces, the last one short).
TEST_P(GpuMatmul, WeightsUploadedToDeviceLocalMemoryGiveTheSameProducts) {
    mw::gpu::OffloadOptions o;
    o.import_host = false;
    o.copy_to = mw::gpu::OffloadOptions::CopyTo::device_local;
    o.max_binding_range = 8192;
    o.staging_bytes = 1000;
    Buffers keep;
    OPEN_OR_SKIP(gpu, o);
    const mw::TypeTraits& t = *mw::type_traits(GetParam());
    const int64_t cols = t.is_quantized ? t.block_size * 4 : 256;
    check_matmul(*gpu, GetParam(), {61, cols, 3}, 13, keep);
    check_matmul(*gpu, GetParam(), {1, t.is_quantized ? t.block_size : 32, 1}, 14, keep);
    EXPECT_GT(gpu->uploaded_bytes(), 0u);
    EXPECT_EQ(gpu->uploaded_bytes(), gpu->copied_bytes());
}

TEST_P(GpuMatmul, ImportedWeightsSplitAcrossBindings) {
    mw::gpu::OffloadOptions o;
    o.max_binding_range = 3 * 4096;  // the import's slack is two pages: one page of rows each
    Buffers keep;
    OPEN_OR_SKIP(gpu, o);
    if (!gpu->device().host_import) GTEST_SKIP() << "SKIPPED: the device cannot import host memory";
    const mw::TypeTraits& t = *mw::type_traits(GetParam());
    const int64_t cols = t.is_quantized ? t.block_size * 8 : 256;
    check_matmul(*gpu, GetParam(), {47, cols, 2}, 11, keep);
    EXPECT_EQ(gpu->copied_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Types, GpuMatmul, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& p) {
                             return std::string(mw::type_traits(p.param)->name);
                         });

// MXFP4's E8M0 scale decoded from its bits over the normal range, 2^-126 to 2^51 (below, the
// scale is subnormal and a device may flush it to 0; docs/gpu.md).
TEST(Gpu, Mxfp4ScalesOverTheExponentRange) {
    Buffers keep;
    OPEN_OR_SKIP(gpu, mw::gpu::OffloadOptions{});
    check_matmul(*gpu, GgmlType::MXFP4, {9, 32 * 20, 3}, 5, keep, [](std::vector<uint8_t>& b) {
        for (size_t i = 0; i < b.size() / sizeof(mw::BlockMXFP4); ++i)
            b[i * sizeof(mw::BlockMXFP4)] = uint8_t(2 + i * 29 % 178);
    });
}

TEST(Gpu, ATypeWithoutAShaderStaysOnTheCpuWithAReason) {
    OPEN_OR_SKIP(gpu, mw::gpu::OffloadOptions{});
    const mw::TypeTraits& t = *mw::type_traits(GgmlType::Q5_1);
    std::mt19937 rng(3);
    const std::vector<uint8_t> bytes = mw::test::random_weight_rows(t, 4, 64, rng);
    mw::WeightMatrix w{bytes.data(), &t, 64, 4, mw::row_bytes(t, 64)};
    std::string why;
    EXPECT_FALSE(gpu->add(w, &why));
    EXPECT_NE(why.find("no shader for Q5_1"), std::string::npos) << why;
    EXPECT_FALSE(gpu->holds(w));
}

// A matrix is known by its data and shape: another view of the same bytes is another matrix,
// and offloads opened and closed one after another give their descriptor sets back.
TEST(Gpu, TheSameBytesWithAnotherShapeAreAnotherMatrix) {
    const mw::TypeTraits& t = *mw::type_traits(GgmlType::Q8_0);
    std::mt19937 rng(5);
    PageBuffer buf(mw::test::random_weight_rows(t, 16, 64, rng));
    for (int round = 0; round < 3; ++round) {
        const uint64_t sets_before = mw::gpu::descriptor_sets_in_use(0);
        OPEN_OR_SKIP(gpu, mw::gpu::OffloadOptions{});
        mw::WeightMatrix whole{buf.data, &t, 64, 16, mw::row_bytes(t, 64)};
        mw::WeightMatrix half{buf.data, &t, 64, 8, mw::row_bytes(t, 64)};
        std::string why;
        ASSERT_TRUE(gpu->add(whole, &why)) << why;
        ASSERT_TRUE(gpu->holds(whole));
        ASSERT_FALSE(gpu->holds(half));
        ASSERT_TRUE(gpu->add(half, &why)) << why;
        std::vector<float> x(64, 1.0f), y_whole(16), y_half(8);
        gpu->matmul(whole, x.data(), 1, y_whole.data());
        gpu->matmul(half, x.data(), 1, y_half.data());
        for (int r = 0; r < 8; ++r) ASSERT_EQ(y_half[size_t(r)], y_whole[size_t(r)]) << r;
        // The input/output set and one per matrix (each fits one binding).
        EXPECT_EQ(mw::gpu::descriptor_sets_in_use(0), sets_before + 3);
        gpu.reset();
        EXPECT_EQ(mw::gpu::descriptor_sets_in_use(0), sets_before) << "round " << round;
    }
}

TEST(Gpu, DevicesAreListedWithTheirProperties) {
    const mw::gpu::Devices d = mw::gpu::list_devices();
    if (d.devices.empty()) GTEST_SKIP() << "SKIPPED: no Vulkan device: " << d.error;
    for (const mw::gpu::DeviceInfo& info : d.devices) {
        EXPECT_FALSE(info.name.empty());
        EXPECT_FALSE(info.heaps.empty());
        EXPECT_GT(info.max_binding_range, 0u);
        EXPECT_GT(info.subgroup_size, 0u);
    }
    std::string why;
    mw::gpu::OffloadOptions o;
    o.device = int(d.devices.size());
    EXPECT_EQ(mw::gpu::Offload::create(o, &why), nullptr);
    EXPECT_NE(why.find("there is no Vulkan device"), std::string::npos) << why;
}

}  // namespace

// Weights copied to the device exist once: their host pages are given back after loading, and
// the products are those of the same weights imported in place.
namespace mw {
namespace {

std::vector<float> last_logits(const LoadedModel& m) {
    ContextParams cp;
    cp.n_ctx = 32;
    cp.n_threads = 2;
    Context ctx(m, cp);
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 300, 290};
    ctx.decode(prompt.data(), uint32_t(prompt.size()), false);
    const float* row = ctx.logits(-1);
    return {row, row + m.model.hp.n_vocab};
}

TEST(GpuModel, CopiedWeightsGiveTheirHostPagesBack) {
    const std::string path = test::shared_path("reference/models/kq-tiny-F16.gguf");
    LoadOptions o;
    o.gpu.n_gpu_layers = 99;
    const auto imported = LoadedModel::load(path, o);
    if (!imported->offload) GTEST_SKIP() << "SKIPPED: no Vulkan device: " << imported->warning;
    o.gpu.offload.import_host = false;
    const auto copied = LoadedModel::load(path, o);
    ASSERT_TRUE(copied->offload);
    const uint64_t copied_bytes = copied->offload->copied_bytes();
    ASSERT_GT(copied_bytes, 0u);
    // Whole pages inside each copied matrix (a page or two at the ends of each stays).
    EXPECT_GT(copied->gpu_host_bytes_dropped, copied_bytes / 2);
    EXPECT_LE(copied->gpu_host_bytes_dropped, copied_bytes);
    EXPECT_NE(copied->gpu_report.find("of host pages of the copied weights given back"),
              std::string::npos)
        << copied->gpu_report;
    if (imported->offload->copied_bytes() == 0) {
        EXPECT_EQ(imported->gpu_host_bytes_dropped, 0u);  // its pages are what the device reads
    }
    const std::vector<float> a = last_logits(*imported), b = last_logits(*copied);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
    // The token embeddings (read by the CPU) are intact: the same first-position logits as a
    // CPU run within the GPU's F32-activation rounding.
    const auto cpu = LoadedModel::load(path, {});
    const std::vector<float> c = last_logits(*cpu);
    EXPECT_LE(test::rel_rms(b.data(), c.data(), c.size()), 3e-3);
}

}  // namespace
// The decision behind -ngl on a CPU device (issue 40), without a device: only type "cpu" is
// refused, the option or MEMWALL_GPU_ALLOW_CPU_DEVICE=1 lets it through.
TEST(Gpu, ADeviceOfTypeCpuNeedsTheOptIn) {
    const char* before = std::getenv("MEMWALL_GPU_ALLOW_CPU_DEVICE");
    const std::string saved = before ? before : "";
    mw::gpu::DeviceInfo device;
    device.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
    device.type = "cpu";
    setenv("MEMWALL_GPU_ALLOW_CPU_DEVICE", "0", 1);
    const std::string why = mw::cpu_device_refusal(device, false);
    EXPECT_NE(why.find("llvmpipe (LLVM 15.0.6, 256 bits) is a CPU"), std::string::npos) << why;
    EXPECT_NE(why.find("--gpu-allow-cpu-device"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";
    EXPECT_EQ(mw::cpu_device_refusal(device, true), "");
    for (const char* type : {"integrated", "discrete", "virtual", "other"}) {
        device.type = type;
        EXPECT_EQ(mw::cpu_device_refusal(device, false), "") << type;
    }
    device.type = "cpu";
    setenv("MEMWALL_GPU_ALLOW_CPU_DEVICE", "1", 1);
    EXPECT_EQ(mw::cpu_device_refusal(device, false), "");
    if (before) {
        setenv("MEMWALL_GPU_ALLOW_CPU_DEVICE", saved.c_str(), 1);
    } else {
        unsetenv("MEMWALL_GPU_ALLOW_CPU_DEVICE");
    }
}

}  // namespace mw
