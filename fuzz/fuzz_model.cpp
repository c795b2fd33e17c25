// libFuzzer target: a model from a fuzzed GGUF file through the first forward steps, as
// `memwall run` treats a file: the plan from its header first (refuse-or-fit), then the load
// (parse, vocabulary, binding of every weight with its shape), a context of 8 tokens, one
// prompt batch and one decoding step. The seeds are tiny models of every architecture and tensor
// type (fuzz_make_seeds); the structure-aware GGUF mutator changes their counts, types,
// dimensions, offsets and hyper-parameters.
//
// A finding is a crash, a sanitizer report (out-of-bounds weight reads included), an exception
// other than mw::Error while loading, an error that does not name the file, any error after a
// successful load (the context and forward pass must work on whatever loaded), or more heap than
// the file justifies (HeapLimit: a file cannot make memwall allocate for sizes it only claims).
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "fuzz_util.h"
#include "gguf_mutator.h"
#include "heap_limit.h"
#include "plan/planner.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_model";
constexpr std::string_view kName = "fuzz.gguf";
constexpr uint32_t kContext = 8;

// What `memwall run` and `memwall plan` do first: plan from the header alone.
void plan(std::span<const uint8_t> bytes) {
    std::optional<gguf::GgufFile> header;
    try {
        header.emplace(gguf::GgufFile::parse(bytes, std::string(kName), {.header_only = true}));
        const ModelFacts facts = model_facts(*header, "");
        for (const uint32_t n_ctx : {0u, kContext}) {
            (void)plan_memory(facts, RunSettings{.n_ctx = n_ctx, .n_batch = 512, .n_threads = 1});
        }
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
    }
}

// The prompt and one decoding step; everything here must succeed on a model that loaded.
void run(const LoadedModel& m, GgmlType kv_type) {
    ContextParams params;
    params.n_ctx = kContext;
    params.n_batch = 4;  // the 6-token prompt takes two batches
    params.n_threads = 1;
    params.type_k = kv_type;
    params.type_v = kv_type;
    Context ctx(m, params);

    std::vector<int32_t> prompt = m.vocab->tokenize("hi ab\n<s>", true, true);
    if (prompt.size() > 6) prompt.resize(6);
    if (prompt.empty()) prompt.push_back(0);
    ctx.decode(prompt.data(), uint32_t(prompt.size()), true);
    const uint32_t n_vocab = m.model.hp.n_vocab;
    int32_t next = 0;
    for (size_t i = 0; i < prompt.size(); ++i) {
        const float* logits = ctx.logits(int32_t(i));
        if (!logits) fuzz::violated(kTarget, "no logits for prompt position", std::to_string(i));
        if (i + 1 < prompt.size()) continue;
        for (uint32_t t = 1; t < n_vocab; ++t) {
            if (logits[t] > logits[next]) next = int32_t(t);
        }
    }
    ctx.decode(&next, 1, false);
    if (!ctx.logits(-1)) fuzz::violated(kTarget, "no logits after a decoding step");
    if (ctx.n_past() != prompt.size() + 1) fuzz::violated(kTarget, "n_past after two decodes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::HeapLimit limit(fuzz::heap_limit_for(size));
    const std::span<const uint8_t> bytes(data, size);
    plan(bytes);

    std::unique_ptr<LoadedModel> m;
    try {
        m = LoadedModel::load_from_bytes(bytes, std::string(kName));
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
        return 0;
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "loading threw something other than mw::Error", e.what());
    }
    if (m->model.hp.n_vocab != uint32_t(m->vocab->n_tokens())) {
        fuzz::violated(kTarget, "vocabulary and token_embd.weight disagree after loading");
    }
    // The KV cache types need no block alignment of the head size (F16, F32, BF16).
    const GgmlType kv_types[] = {GgmlType::F16, GgmlType::F32, GgmlType::BF16};
    try {
        run(*m, kv_types[size % 3]);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "a loaded model failed to run", e.what());
    }
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    return mw::fuzz::mutate_gguf(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
    return mw::fuzz::cross_over_gguf(data1, size1, data2, size2, out, max_out_size, seed);
}
