// memwall quantize to the lattice i-quant recipes (IQ3_M, IQ3_S, IQ3_XS, IQ3_XXS, IQ2_M, IQ2_S,
// IQ2_XS, IQ2_XXS, IQ1_M, IQ1_S): llama-quantize's imatrix rule (the types of 3
// bits and less need one, the error names the tensor), the --pure files against llama-quantize's
// kq-tiny files (../shared/reference/quant/kq-tiny-<T>.tensors.json: same types, bytes and
// offsets), and the mixed files load and give finite logits. The quantizers' error against
// llama-quantize's is in quantize_quality_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"
#include "format/gguf.h"
#include "memwall.h"
#include "support/model_inputs.h"
#include "support/test_support.h"
#include "sys/mapped_file.h"

namespace mw {
namespace {

using nlohmann::json;

const std::string kF16 = "reference/models/kq-tiny-F16.gguf";

// An imatrix of kq-tiny over a part of a book (made once).
const std::string& kq_tiny_imatrix() {
    static const std::string path = [] {
        const std::string out = test::temp_dir() + "/kq-tiny.imatrix.gguf";
        const std::string text =
            test::read_text(test::shared_path("testdata/text/war-and-peace.txt")).substr(0, 20000);
        mw_imatrix_params p = mw_imatrix_default_params();
        p.n_ctx = 64;
        p.n_chunks = 4;
        p.n_threads = 2;
        EXPECT_EQ(
            mw_imatrix(test::shared_path(kF16).c_str(), text.data(), text.size(), out.c_str(), &p),
            MW_OK)
            << mw_last_error();
        return out;
    }();
    return path;
}

struct Request {
    const char* type;
    bool imatrix = false;
    bool pure = false;
    std::vector<const char*> overrides;
};

mw_status run_quantize(const Request& r, const std::string& out) {
    mw_quantize_params p = mw_quantize_default_params();
    p.type = r.type;
    p.pure = r.pure;
    p.n_threads = 2;
    if (r.imatrix) p.imatrix_path = kq_tiny_imatrix().c_str();
    p.tensor_types = r.overrides.data();
    p.n_tensor_types = int32_t(r.overrides.size());
    return mw_quantize(test::shared_path(kF16).c_str(), out.c_str(), &p, nullptr);
}

std::string type_name(uint32_t type) {
    return std::string(ggml_layout(type)->name);
}

// Under the sanitizers the lattice searches are ~5x slower (IQ1_M's --pure file 30 s): the tests
// quantize a part of the matrices, the rest kept in F16 by an override, and check that part as the
// release build checks them all.
#ifdef MW_TEST_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(QuantizeLattice, LowBitRecipesNeedAnImatrix) {
    const std::string out = test::temp_dir() + "/out.gguf";
    for (const char* type : {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "iq3_xxs"}) {
        EXPECT_EQ(run_quantize({type}, out), MW_ERR_INVALID_ARGUMENT) << type;
        const std::string message = mw_last_error();
        EXPECT_NE(message.find("--imatrix"), std::string::npos) << message;
        EXPECT_NE(message.find("blk."), std::string::npos) << message;  // names the tensor
        EXPECT_FALSE(std::ifstream(out).good()) << type;
    }
}

// --pure files: llama-quantize's kq-tiny-<file> was made with --pure and `ftype` (and the imatrix
// for all but IQ3_S; the IQ2_XXS / IQ2_XS token embeddings as Q2_K, see the reference README).
struct PureCase {
    const char* file;
    Request request;
};

class QuantizeLatticePure : public ::testing::TestWithParam<PureCase> {};

TEST_P(QuantizeLatticePure, SameTypesAndBytesAsLlamaQuantize) {
    const PureCase& c = GetParam();
    const json expected = json::parse(test::read_text(
        test::shared_path(std::string("reference/quant/kq-tiny-") + c.file + ".tensors.json")));
    const std::string out = test::temp_dir() + "/" + c.file + ".gguf";
    // Sanitized: block 1, the file's last tensors, stays F16; the tensors before it (output,
    // token_embd and block 0, which has every kind of matrix block 1 has) keep their offsets.
    Request request = c.request;
    if (kSanitized) request.overrides.push_back("^blk\\.1\\.=f16");
    ASSERT_EQ(run_quantize(request, out), MW_OK) << mw_last_error();
    const MappedFile file = MappedFile::open(out);
    const gguf::GgufFile ours = gguf::GgufFile::parse(file.bytes(), out);
    ASSERT_EQ(ours.tensors().size(), expected.at("tensors").size());
    for (size_t i = 0; i < ours.tensors().size(); ++i) {
        const gguf::TensorInfo& t = ours.tensors()[i];
        const json& e = expected.at("tensors")[i];
        EXPECT_EQ(std::string(t.name), e.at("name").get<std::string>()) << "tensor " << i;
        if (kSanitized && std::string_view(t.name).starts_with("blk.1.")) continue;
        EXPECT_EQ(type_name(t.type), e.at("type").get<std::string>()) << t.name;
        EXPECT_EQ(t.n_bytes, e.at("n_bytes").get<uint64_t>()) << t.name;
        EXPECT_EQ(t.offset, e.at("offset").get<uint64_t>()) << t.name;
    }
    EXPECT_EQ(ours.get_u32("general.file_type"), expected.at("general.file_type").get<uint32_t>());
    std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Reference, QuantizeLatticePure,
    ::testing::Values(PureCase{"IQ3_S", {"IQ3_S", false, true}},
                      PureCase{"IQ3_XXS", {"IQ3_XXS", true, true}},
                      PureCase{"IQ2_S", {"IQ2_M", true, true}},
                      PureCase{"IQ2_XXS", {"IQ2_XXS", true, true, {"token_embd=q2_k"}}},
                      PureCase{"IQ2_XS", {"IQ2_XS", true, true, {"token_embd=q2_k"}}},
                      PureCase{"IQ1_S", {"IQ1_S", true, true, {"token_embd=q2_k"}}},
                      PureCase{"IQ1_M", {"IQ1_M", true, true}}),
    [](const auto& param_info) { return std::string(param_info.param.file); });

// The mixes (kq-tiny: 2 layers, 8 heads sharing 2 KV heads, a separate output matrix), and the
// files run.
struct MixCase {
    Request request;
    std::vector<std::pair<const char*, const char*>> types;  // tensor, type
};

class QuantizeLatticeMix : public ::testing::TestWithParam<MixCase> {};

TEST_P(QuantizeLatticeMix, TypesOfTheMixAndFiniteLogits) {
    const MixCase& c = GetParam();
    const std::string out = test::temp_dir() + "/" + c.request.type + "-mix.gguf";
    // Sanitized: only the matrices whose types are checked are quantized, the others stay F16 (a
    // tensor's type in a mix does not depend on the others').
    Request request = c.request;
    std::string others;
    if (kSanitized) {
        std::string listed;  // the checked names, '|'-separated, dots escaped
        for (const auto& checked : c.types) {
            if (!listed.empty()) listed += '|';
            for (const char* ch = checked.first; *ch; ++ch) {
                if (*ch == '.') listed += '\\';
                listed += *ch;
            }
        }
        others = "^(?!(" + listed + ")$)=f16";
        request.overrides.push_back(others.c_str());
    }
    ASSERT_EQ(run_quantize(request, out), MW_OK) << mw_last_error();
    {
        const MappedFile file = MappedFile::open(out);
        const gguf::GgufFile f = gguf::GgufFile::parse(file.bytes(), out);
        for (const auto& [tensor, type] : c.types) {
            ASSERT_NE(f.find_tensor(tensor), nullptr) << tensor;
            EXPECT_EQ(type_name(f.find_tensor(tensor)->type), type) << tensor;
        }
    }
    test::expect_finite_logits(out, 512);
    std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(Reference, QuantizeLatticeMix,
                         ::testing::Values(MixCase{{"IQ3_M"},
                                                   {{"output.weight", "Q6_K"},
                                                    {"token_embd.weight", "IQ3_S"},
                                                    {"blk.0.attn_v.weight", "Q4_K"},
                                                    {"blk.0.attn_output.weight", "Q4_K"},
                                                    {"blk.1.attn_q.weight", "IQ3_S"},
                                                    {"blk.1.ffn_down.weight", "IQ3_S"}}},
                                           MixCase{{"IQ3_XXS", true},
                                                   {{"output.weight", "Q5_K"},
                                                    {"token_embd.weight", "IQ3_S"},
                                                    {"blk.0.attn_v.weight", "Q4_K"},
                                                    {"blk.0.attn_q.weight", "IQ2_S"},
                                                    {"blk.0.attn_output.weight", "IQ3_S"},
                                                    {"blk.1.ffn_up.weight", "IQ3_XXS"}}},
                                           MixCase{{"IQ2_XXS", true},
                                                   {{"output.weight", "Q5_K"},
                                                    {"token_embd.weight", "Q2_K"},
                                                    {"blk.0.attn_v.weight", "Q4_K"},
                                                    {"blk.0.attn_q.weight", "IQ2_XXS"},
                                                    {"blk.1.ffn_down.weight", "IQ2_XXS"}}},
                                           MixCase{{"IQ1_S", true},
                                                   {{"output.weight", "Q5_K"},
                                                    {"token_embd.weight", "Q2_K"},
                                                    {"blk.0.attn_output.weight", "IQ2_XXS"},
                                                    {"blk.1.ffn_up.weight", "IQ1_S"}}},
                                           MixCase{{"IQ2_M", true},
                                                   {{"token_embd.weight", "IQ3_S"},
                                                    {"blk.0.attn_output.weight", "IQ3_S"},
                                                    {"blk.0.ffn_gate.weight", "IQ2_S"}}}),
                         [](const auto& param_info) {
                             return std::string(param_info.param.request.type);
                         });

}  // namespace
}  // namespace mw
