// -ngl from the command line: the GPU's tokens are the CPU's, the placement is said with
// --verbose, and where there is no Vulkan device (VK_ICD_FILENAMES naming none) the run warns and
// gives the CPU's tokens, or fails with --gpu-required.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "memwall.h"
#include "support/test_support.h"

namespace {

std::string run_line() {
    return mw::test::cli_path() + " run -m " + mw::test::shared_path("models/stories260K.gguf") +
           " -p 'Once upon a time' -n 24 --temp 0 -t 2 --force";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

constexpr const char* kNoDevice = "VK_ICD_FILENAMES=/nonexistent/memwall-test-icd.json ";

TEST(GpuCli, WithoutADeviceNgl99WarnsAndGivesTheCpusTokens) {
    const auto cpu = mw::test::run_command(run_line());
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    const auto none = mw::test::run_command(kNoDevice + run_line() + " -ngl 99");
    ASSERT_EQ(none.exit_code, 0) << none.err;
    EXPECT_EQ(none.out, cpu.out);
    EXPECT_TRUE(has(none.err, "warning: no GPU offload, everything runs on the CPU")) << none.err;

    const auto required = mw::test::run_command(kNoDevice + run_line() + " -ngl 99 --gpu-required");
    EXPECT_NE(required.exit_code, 0);
    EXPECT_TRUE(has(required.err, "-ngl 99 with --gpu-required")) << required.err;
    EXPECT_TRUE(has(required.err, "stories260K.gguf")) << required.err;
}

TEST(GpuCli, Ngl99GivesTheCpusTextAndSaysWhereItRan) {
    char* devices = mw_gpu_devices_json();
    ASSERT_NE(devices, nullptr);
    const std::string json = devices;
    mw_free_string(devices);
    if (has(json, "\"devices\":[]")) GTEST_SKIP() << "SKIPPED: no Vulkan device: " << json;
    const auto cpu = mw::test::run_command(run_line());
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    for (const char* ngl : {"1", "99"}) {
        SCOPED_TRACE(std::string("-ngl ") + ngl);
        const auto gpu =
            mw::test::run_command(run_line() + " --verbose --gpu-required -ngl " + ngl);
        ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
        EXPECT_EQ(gpu.out, cpu.out);
        EXPECT_TRUE(has(gpu.err, std::string(ngl) == "1" ? "layers 4..4 offloaded"
                                                         : "layers 0..4 and the output offloaded"))
            << gpu.err;
    }
    const auto no_such = mw::test::run_command(run_line() + " -ngl 99 -mg 42");
    EXPECT_EQ(no_such.exit_code, 0) << no_such.err;
    EXPECT_TRUE(has(no_such.err, "there is no Vulkan device 42")) << no_such.err;
    EXPECT_EQ(no_such.out, cpu.out);
}

// Issue 40: -ngl on a device that is a CPU (lavapipe, ~1000x slower than the CPU path) warns in
// one line and runs on the CPU unless asked for.
TEST(GpuCli, ADeviceThatIsACpuIsUsedOnlyWhenAskedFor) {
    char* devices = mw_gpu_devices_json();
    ASSERT_NE(devices, nullptr);
    const std::string json = devices;
    mw_free_string(devices);
    const nlohmann::json list = nlohmann::json::parse(json);
    if (list["devices"].empty() || list["devices"][0]["type"] != "cpu")
        GTEST_SKIP() << "SKIPPED: device 0 is not a CPU device (lavapipe): " << json;
    const std::string not_allowed = "MEMWALL_GPU_ALLOW_CPU_DEVICE=0 ";
    const auto cpu = mw::test::run_command(run_line());
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    const auto refused = mw::test::run_command(not_allowed + run_line() + " -ngl 99 --verbose");
    ASSERT_EQ(refused.exit_code, 0) << refused.err;
    EXPECT_EQ(refused.out, cpu.out);
    EXPECT_TRUE(has(refused.err,
                    "warning: no GPU offload, everything runs on the CPU: the "
                    "Vulkan device llvmpipe"))
        << refused.err;
    EXPECT_TRUE(has(refused.err, "--gpu-allow-cpu-device")) << refused.err;
    EXPECT_FALSE(has(refused.err, "offloaded")) << refused.err;

    const auto asked = mw::test::run_command(not_allowed + run_line() +
                                             " -ngl 99 --verbose --gpu-allow-cpu-device");
    ASSERT_EQ(asked.exit_code, 0) << asked.err;
    EXPECT_EQ(asked.out, cpu.out);
    EXPECT_TRUE(has(asked.err, "layers 0..4 and the output offloaded")) << asked.err;
    EXPECT_FALSE(has(asked.err, "is a CPU")) << asked.err;

    const auto required =
        mw::test::run_command(not_allowed + run_line() + " -ngl 99 --gpu-required");
    EXPECT_NE(required.exit_code, 0);
    EXPECT_TRUE(has(required.err, "is a CPU")) << required.err;
}

TEST(GpuCli, BadGpuFlagsAreRefused) {
    const auto negative = mw::test::run_command(run_line() + " -ngl -1");
    EXPECT_NE(negative.exit_code, 0);
    EXPECT_TRUE(has(negative.err, "n-gpu-layers")) << negative.err;
    // Device 42 does not exist, whether or not this machine has any.
    const auto no_such = mw::test::run_command(run_line() + " -ngl 99 -mg 42 --gpu-required");
    EXPECT_NE(no_such.exit_code, 0);
    EXPECT_TRUE(has(no_such.err, "--gpu-required")) << no_such.err;
}

TEST(GpuCli, ProbeListsTheVulkanDevicesOrSaysWhyNone) {
    const auto probe = mw::test::run_command(mw::test::cli_path() + " probe --no-measure");
    ASSERT_EQ(probe.exit_code, 0) << probe.err;
    EXPECT_TRUE(has(probe.out, "GPU ")) << probe.out;
    const auto none =
        mw::test::run_command(kNoDevice + mw::test::cli_path() + " probe --no-measure");
    ASSERT_EQ(none.exit_code, 0) << none.err;
    EXPECT_TRUE(has(none.out, "GPU        none: ")) << none.out;
}

}  // namespace
