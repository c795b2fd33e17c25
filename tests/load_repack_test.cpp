// Load-time repacking (LoadedModel, model/repack_weights): the weights the installed kernels have
// a faster layout for are rewritten in place, in a copy-on-write mapping or the --no-mmap buffer,
// and must give the logits the file's own layout gives, leave the file untouched, and rewrite a
// tied output only once. (The reference tests check the repacked path against llama.cpp's logits.)
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"
#include "support/tiny_model.h"
#include "sys/mapped_file.h"
#include "tensor/repack.h"

namespace mw {
namespace {

std::unique_ptr<LoadedModel> load(const std::string& path, bool repack, bool use_mmap = true) {
    LoadOptions options;
    options.map.use_mmap = use_mmap;
    options.repack = repack;
    return LoadedModel::load(path, options);
}

// Logits at every position of a prompt.
std::vector<float> all_logits(const LoadedModel& m, const std::vector<int32_t>& tokens) {
    ContextParams params;
    params.n_ctx = 128;
    params.n_threads = 2;
    Context ctx(m, params);
    ctx.decode(tokens.data(), uint32_t(tokens.size()), true);
    const size_t n_vocab = m.model.hp.n_vocab;
    std::vector<float> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const float* l = ctx.logits(int32_t(i));
        out.insert(out.end(), l, l + n_vocab);
    }
    return out;
}

double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
    return test::rel_rms(a.data(), b.data(), b.size());
}

bool packed_layouts_here() {
    return packed_traits(GgmlType::Q4_K, 16, 256) != nullptr;
}

class LoadRepack : public ::testing::TestWithParam<const char*> {};

TEST_P(LoadRepack, SameLogitsAsTheFileLayoutAndTheFileUntouched) {
    if (!packed_layouts_here()) GTEST_SKIP() << "this CPU's kernels have no packed layouts";
    const std::string path =
        test::shared_path(std::string("reference/models/") + GetParam() + ".gguf");
    const std::vector<uint8_t> before = test::read_file(path);

    const auto plain = load(path, false);
    const auto mapped = load(path, true);
    const auto read = load(path, true, /*use_mmap=*/false);
    EXPECT_EQ(plain->repacked_bytes, 0u);
    // Nearly all of the weights: everything but the F32 norms.
    EXPECT_GT(mapped->repacked_bytes, plain->model.weight_bytes * 9 / 10);
    EXPECT_EQ(read->repacked_bytes, mapped->repacked_bytes);
    EXPECT_TRUE(is_packed(mapped->model.layers[0].wq.traits));
    EXPECT_FALSE(is_packed(plain->model.layers[0].wq.traits));

    std::vector<int32_t> tokens;
    for (int i = 0; i < 48; ++i)
        tokens.push_back(int32_t((i * 7919 + 13) % int(plain->model.hp.n_vocab)));
    const std::vector<float> want = all_logits(*plain, tokens);
    // The packed kernels add the same integer products in another order: float rounding only.
    EXPECT_LT(rel_rms(all_logits(*mapped, tokens), want), 1e-4);
    EXPECT_LT(rel_rms(all_logits(*read, tokens), want), 1e-4);

    EXPECT_TRUE(test::read_file(path) == before) << "repacking must never write to the file";
}

INSTANTIATE_TEST_SUITE_P(Types, LoadRepack,
                         ::testing::Values("kq-tiny-Q4_K_M", "kq-tiny-Q4_0", "kq-tiny-Q6_K",
                                           "kq-tiny-Q8_0", "kq-tiny-Q5_K_M", "moe-tiny-Q4_K_M"));

TEST(LoadRepack, TiedOutputIsRewrittenOnce) {
    if (!packed_layouts_here()) GTEST_SKIP() << "this CPU's kernels have no packed layouts";
    // No output.weight: token_embd is the output too (one tensor, two roles; rewriting it twice
    // would scramble it). 16 vocabulary rows: one packed group.
    test::TinyModel spec;
    spec.type = GgmlType::Q4_K;
    spec.tied_output = true;
    const std::string path = test::temp_dir() + "/tied-q4_k.gguf";
    const std::vector<uint8_t> bytes = test::tiny_model_bytes(spec);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));

    const auto plain = load(path, false);
    const auto m = load(path, true);
    ASSERT_EQ(m->model.output.data, m->model.tok_embd.data);
    EXPECT_TRUE(is_packed(m->model.tok_embd.traits));
    EXPECT_EQ(m->model.output.traits, m->model.tok_embd.traits);
    // Counted once: token_embd plus the layer's packed matrices.
    auto bytes_of = [](const WeightMatrix& w) { return w.row_bytes * uint64_t(w.n_rows); };
    uint64_t expected = bytes_of(m->model.tok_embd);
    const Layer& l = m->model.layers[0];
    for (const WeightMatrix* w :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
        if (is_packed(w->traits)) expected += bytes_of(*w);
    }
    EXPECT_EQ(m->repacked_bytes, expected);
    const std::vector<int32_t> tokens = {1, 5, 9, 3, 12, 7};
    EXPECT_LT(rel_rms(all_logits(*m, tokens), all_logits(*plain, tokens)), 1e-4);
}

// The value of `key` in /proc/self/smaps for the mapping that contains p ("" if none).
std::string smaps_field(const void* p, const std::string& key) {
    std::ifstream in("/proc/self/smaps");
    std::string line;
    bool inside = false;
    const auto at = reinterpret_cast<uintptr_t>(p);
    while (std::getline(in, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > 8) {
            inside = at >= lo && at < hi;
        } else if (inside && line.rfind(key + ":", 0) == 0) {
            return line.substr(key.size() + 1);
        }
    }
    return "";
}

// The writable copy of a mapping: the same bytes at the same address, the file untouched, and
// memory the OS may back with huge pages (a decode step streams every weight through the TLB).
TEST(LoadRepack, WritableMappingKeepsBytesAndAddressAndAllowsHugePages) {
    const std::string path = test::temp_dir() + "/six-mib.bin";
    std::vector<uint8_t> bytes((size_t(6) << 20) + 123);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 2654435761u >> 13);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    MappedFile file = MappedFile::open(path);
    const uint8_t* before = file.bytes().data();
    const std::span<uint8_t> w = file.make_writable();
    ASSERT_EQ(w.data(), before);
    ASSERT_EQ(w.size(), bytes.size());
    EXPECT_EQ(0, std::memcmp(w.data(), bytes.data(), bytes.size()));
    w[17] ^= 0xFF;
    file.seal();
    EXPECT_EQ(test::read_file(path), bytes) << "the file must not change";
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(thp, mode);
    if (mode.empty() || mode.find("[never]") != std::string::npos) {
        GTEST_SKIP() << "transparent huge pages are off here (" << mode << ")";
    }
    EXPECT_EQ(smaps_field(w.data(), "THPeligible").find('1') != std::string::npos, true)
        << "THPeligible:" << smaps_field(w.data(), "THPeligible");
}

// Ranges nothing reads through the mapping any more (Gemma 4's per-layer embedding table, read
// row by row from the file) are not copied: no memory is taken for them (so no peak RSS), they
// read as zeros, and every other byte is the file's.
TEST(LoadRepack, WritableMappingSkipsRangesWithoutTakingMemory) {
    const std::string path = test::temp_dir() + "/twelve-mib.bin";
    std::vector<uint8_t> bytes((size_t(12) << 20) + 77);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(1 + i * 2654435761u % 251);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    MappedFile file = MappedFile::open(path);
    // 2 MiB aligned, so that no huge page of the copied bytes reaches into the range.
    const std::pair<uint64_t, uint64_t> skip{uint64_t(2) << 20, uint64_t(10) << 20};
    const std::span<uint8_t> w = file.make_writable({&skip, 1});
    ASSERT_EQ(w.size(), bytes.size());
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> present((skip.second - skip.first) / page);
    ASSERT_EQ(::mincore(w.data() + skip.first, skip.second - skip.first, present.data()), 0);
    size_t resident = 0;
    for (unsigned char v : present) resident += v & 1;
    EXPECT_EQ(resident, 0u) << "pages of the skipped range were copied";
    EXPECT_EQ(0, std::memcmp(w.data(), bytes.data(), skip.first));
    EXPECT_EQ(0, std::memcmp(w.data() + skip.second, bytes.data() + skip.second,
                             bytes.size() - skip.second));
    EXPECT_EQ(*std::max_element(w.data() + skip.first, w.data() + skip.second), 0);
    file.seal();
    std::remove(path.c_str());
}

TEST(LoadRepack, CliRepacksUnlessToldNotTo) {
    if (!packed_layouts_here()) GTEST_SKIP() << "this CPU's kernels have no packed layouts";
    const std::string run = test::cli_path() + " run -m " +
                            test::shared_path("reference/models/kq-tiny-Q4_K_M.gguf") +
                            " -p 'Once upon a time' -n 24 --temp 0 --ignore-eos -t 2 --force";
    const auto packed = test::run_command(run);
    const auto plain = test::run_command(run + " --no-repack");
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(packed.err.find(std::string("MiB repacked for ") + kernel_isa()), std::string::npos)
        << packed.err;
    EXPECT_EQ(plain.err.find("repacked"), std::string::npos) << plain.err;
    EXPECT_EQ(packed.out, plain.out) << "greedy text must not depend on the layout";
}

}  // namespace
}  // namespace mw
