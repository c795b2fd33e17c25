#include "support/model_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "format/gguf.h"
#include "memwall.h"
#include "support/test_support.h"

namespace mw::test {

std::unique_ptr<LoadedModel> load_shared(const std::string& relative) {
    return LoadedModel::load(shared_path(relative), LoadOptions{});
}

std::vector<int32_t> book_tokens(const LoadedModel& m, size_t start, size_t n, size_t chars,
                                 int bos) {
    const std::string text =
        read_text(shared_path("testdata/text/war-and-peace.txt")).substr(start, chars);
    std::vector<int32_t> t = m.vocab->tokenize(text, bos < 0 ? start == 0 : bos != 0, false);
    t.resize(std::min(t.size(), n));
    return t;
}

ContextParams small_context(uint32_t n_seq) {
    ContextParams p;
    p.n_ctx = 512;
    p.n_threads = 2;
    p.n_seq_max = n_seq;
    return p;
}

void expect_finite_logits(const std::string& path, int n_checked) {
    mw_model* model = nullptr;
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK)
        << path << ": " << mw_last_error();
    mw_context* ctx = nullptr;
    ASSERT_EQ(mw_context_create(model, nullptr, &ctx), MW_OK) << path << ": " << mw_last_error();
    const int32_t tokens[] = {1, 403, 407, 261, 378};
    EXPECT_EQ(mw_decode(ctx, tokens, 5, false), MW_OK) << path << ": " << mw_last_error();
    const float* logits = mw_get_logits(ctx, -1);
    EXPECT_NE(logits, nullptr) << path;
    for (int i = 0; logits && i < n_checked; ++i)
        if (!std::isfinite(logits[i])) {
            ADD_FAILURE() << path << ": logit " << i << " is " << logits[i];
            break;
        }
    mw_context_free(ctx);
    mw_model_free(model);
}

PlannedFile plan_file(const std::string& path, const std::string& quant, uint32_t n_ctx) {
    PlannedFile p;
    p.bytes = read_file(path);
    const gguf::GgufFile header = gguf::GgufFile::parse(p.bytes, path, {.header_only = true});
    p.facts = model_facts(header, quant);
    if (!p.facts.runnable) return p;
    RunSettings run;
    run.n_ctx = n_ctx;
    run.n_threads = 2;
    p.plan = plan_memory(p.facts, run);
    return p;
}

}  // namespace mw::test
