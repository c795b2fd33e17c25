// The storage probe (plan/storage.h): positive, finite figures from a temporary folder and nothing
// left in it, clear errors for a bad folder, the in-memory (tmpfs) case said so, the figure kept
// by `probe --save` and used by plans for this machine.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/vfs.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "plan/device_cache.h"
#include "plan/storage.h"
#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

constexpr uint64_t MiB = uint64_t(1) << 20;

int entries_in(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return -1;
    int n = 0;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") ++n;
    }
    ::closedir(d);
    return n;
}

void expect_rate(const RateStats& s, const char* what) {
    EXPECT_TRUE(std::isfinite(s.median) && s.median > 0) << what << " " << s.median;
    EXPECT_GE(s.n, 3) << what;
    EXPECT_TRUE(std::isfinite(s.spread) && s.spread >= 0) << what;
    EXPECT_LE(s.min, s.median) << what;
    EXPECT_GE(s.max, s.median) << what;
}

TEST(StorageProbe, MeasuresATempFolderAndLeavesNothing) {
    const std::string dir = test::temp_dir();
    ASSERT_EQ(entries_in(dir), 0);
    const StorageResult r = measure_storage({.dir = dir, .file_bytes = 64 * MiB, .seconds = 0.1});
    EXPECT_EQ(entries_in(dir), 0) << "the test file was left in " << dir;
    EXPECT_EQ(r.file_bytes, 64 * MiB);
    expect_rate(r.sequential, "sequential");
    ASSERT_EQ(r.random.size(), 3u);
    EXPECT_EQ(r.random[0].block_bytes, 256u << 10);
    EXPECT_EQ(r.random[2].block_bytes, 4 * MiB);
    for (const StorageRandom& x : r.random) expect_rate(x.rate, "random");
    EXPECT_GT(r.seconds, 0);
    EXPECT_GT(r.measured_at, 0);
    if (!r.direct_io) {
        EXPECT_NE(r.note.find("O_DIRECT"), std::string::npos) << r.note;
    }
}

TEST(StorageProbe, BadFolderIsAnErrorNamingIt) {
    const std::string missing = test::temp_dir() + "/no-such-folder";
    try {
        measure_storage({.dir = missing, .file_bytes = 64 * MiB});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::io);
        EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
    const std::string file = test::temp_dir() + "/a-file";
    std::ofstream(file) << "x";
    try {
        measure_storage({.dir = file, .file_bytes = 64 * MiB});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(file + " is not a folder"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(measure_storage({.dir = test::temp_dir(), .file_bytes = 1 * MiB}), Error);
}

// tmpfs keeps files in memory: measured all the same (O_DIRECT or the fallback), and said so.
TEST(StorageProbe, InMemoryFolderIsSaidSo) {
    struct statfs fs {};
    if (::statfs("/dev/shm", &fs) != 0 || long(fs.f_type) != 0x01021994)
        GTEST_SKIP() << "no tmpfs at /dev/shm";
    const StorageResult r =
        measure_storage({.dir = "/dev/shm", .file_bytes = 64 * MiB, .seconds = 0.05});
    EXPECT_NE(r.note.find("tmpfs"), std::string::npos) << r.note;
    expect_rate(r.sequential, "sequential");
}

std::string probe_cli(const std::string& cache, const std::string& args) {
    return "XDG_CACHE_HOME=" + cache + " " + test::cli_path() + " " + args;
}

TEST(StorageProbeCli, JsonSaveAndPlanUseIt) {
    const std::string cache = test::temp_dir(), dir = test::temp_dir();
    const std::string quick = " --seconds 0.2 -t 2 --array-size 8M --storage-size 64M";
    const test::CommandResult j =
        test::run_command(probe_cli(cache, "probe --json --storage-dir " + dir + quick));
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_NE(j.err.find("storage reads in " + dir), std::string::npos) << j.err;
    const json s = json::parse(j.out).at("storage");
    for (const char* key : {"dir", "file_bytes", "direct_io", "note", "sequential_bytes_per_s",
                            "sequential", "random", "seconds", "measured_at"}) {
        EXPECT_TRUE(s.contains(key)) << key;
    }
    EXPECT_GT(s["sequential_bytes_per_s"].get<double>(), 0);
    ASSERT_EQ(s["random"].size(), 3u);
    EXPECT_EQ(entries_in(dir), 0);

    const test::CommandResult bad =
        test::run_command(probe_cli(cache, "probe --storage-dir " + dir + "/missing" + quick));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find(dir + "/missing"), std::string::npos) << bad.err;

    // Saved, then a later save without storage keeps it; plans for this machine use it.
    const test::CommandResult save =
        test::run_command(probe_cli(cache, "probe --save --force --storage-dir " + dir + quick));
    ASSERT_EQ(save.exit_code, 0) << save.err;
    EXPECT_NE(save.out.find("Storage    " + dir), std::string::npos) << save.out;
    EXPECT_NE(save.out.find("random"), std::string::npos) << save.out;
    const test::CommandResult again =
        test::run_command(probe_cli(cache, "probe --save --force --no-storage" + quick));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    const test::CommandResult shown = test::run_command(probe_cli(cache, "probe --no-measure"));
    EXPECT_NE(shown.out.find("storage "), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("GB/s in order"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find(dir), std::string::npos) << shown.out;
    const test::CommandResult plan = test::run_command(
        probe_cli(cache, "plan --model qwen3-30b-a3b --device this --mem-budget 8G -c 512 --json"));
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    const json p = json::parse(plan.out);
    EXPECT_EQ(p["devices"][0]["storage"]["assumed"], false);
    EXPECT_NE(p["devices"][0]["storage"]["source"].get<std::string>().find(dir), std::string::npos);
    ASSERT_EQ(p["budget_rows"].size(), 1u);
    EXPECT_FALSE(p["budget_rows"][0]["storage_assumed"].get<bool>());
}

}  // namespace
}  // namespace mw
