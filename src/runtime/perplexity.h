// Perplexity of a model over a text, computed the way llama.cpp's llama-perplexity does so the
// numbers compare: the text is tokenized once (BOS added as the vocab asks, special-token text
// not parsed), cut into floor(n_tokens / n_ctx) non-overlapping chunks, each chunk evaluated
// from an empty KV cache with its first token replaced by BOS (when the vocab adds BOS), and the
// second half of each chunk scored: positions n_ctx/2 .. n_ctx-2 predict tokens n_ctx/2+1 ..
// n_ctx-1. PPL = exp(mean NLL), and its error PPL * sqrt((mean(NLL^2) - mean(NLL)^2)/(N - 1)).
//
// With a base model (the unquantized original), the same chunks run through it too and each
// scored position also gives KL(base || model) of the two next-token distributions and whether
// their top tokens agree: the measures of how far a quantization moved the model.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "format/ggml_types.h"
#include "runtime/loaded_model.h"

namespace mw {

struct PerplexityParams {
    uint32_t n_ctx = 512;    // tokens per chunk
    uint32_t n_batch = 0;    // 0: n_ctx
    int32_t max_chunks = 0;  // <= 0: every whole chunk of the text
    int n_threads = 0;       // as ContextParams
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
};

struct PerplexityProgress {
    int32_t chunk = 0;     // chunks done
    int32_t n_chunks = 0;  // chunks to do
    int64_t n_scored = 0;
    double ppl = 0.0;  // so far
    bool has_base = false;
    double kld_mean = 0.0;        // so far (with a base model)
    double top1_agreement = 0.0;  // so far, fraction
    double elapsed_s = 0.0;
    double tokens_per_s = 0.0;  // chunk tokens evaluated per second (each model)
    int n_threads = 0;          // threads evaluating
};

struct PerplexityResult {
    int64_t n_text_tokens = 0;
    int32_t n_chunks = 0;  // evaluated
    uint32_t n_ctx = 0;
    int64_t n_scored = 0;
    double ppl = 0.0;
    double ppl_err = 0.0;
    std::vector<double> running_ppl;  // after each chunk

    bool has_base = false;
    double base_ppl = 0.0;
    double base_ppl_err = 0.0;
    double kld_mean = 0.0;
    double kld_err = 0.0;  // standard error of the mean
    double kld_median = 0.0;
    double kld_p99 = 0.0;  // 99th percentile (linear interpolation)
    double kld_max = 0.0;
    double top1_agreement = 0.0;  // fraction of scored positions with the same argmax
    double ppl_ratio = 0.0;       // PPL(model) / PPL(base)
    double seconds = 0.0;
    int n_threads = 0;
};

// Called after each chunk; returning false stops after that chunk (the result covers the chunks
// done).
using PerplexityCallback = std::function<bool(const PerplexityProgress&)>;

// Throws ErrorKind::invalid_argument when the text is shorter than one chunk or the base model's
// vocabulary differs.
PerplexityResult perplexity(const LoadedModel& model, const LoadedModel* base,
                            std::string_view text, const PerplexityParams& params,
                            const PerplexityCallback& on_chunk = {});

// The statistics of one scored position, from the two models' logits (base may be null).
struct TokenScore {
    double nll = 0.0;       // -log p_model(target)
    double base_nll = 0.0;  // -log p_base(target)
    double kld = 0.0;       // KL(base || model)
    bool same_top = false;
};
TokenScore score_position(const float* logits, const float* base_logits, int64_t n_vocab,
                          int32_t target);

}  // namespace mw
