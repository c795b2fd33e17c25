#include "runtime/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "base/error.h"
#include "runtime/context.h"

namespace mw {
namespace {

struct LogSoftmax {
    double log_z = 0.0;  // log of the partition function
    int32_t argmax = 0;
};

// As llama.cpp: the maximum in float, the sum of exponentials in double.
LogSoftmax log_softmax(const float* logits, int64_t n) {
    LogSoftmax r;
    float max = logits[0];
    for (int64_t i = 1; i < n; ++i) {
        if (logits[i] > max) {
            max = logits[i];
            r.argmax = int32_t(i);
        }
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(double(logits[i] - max));
    r.log_z = double(max) + std::log(sum);
    return r;
}

// Mean and its standard error of values given by their sum and sum of squares.
double standard_error(double sum, double sum_sq, int64_t n) {
    if (n < 2) return 0.0;
    const double mean = sum / double(n);
    const double var = sum_sq / double(n) - mean * mean;
    return var > 0.0 ? std::sqrt(var / double(n - 1)) : 0.0;
}

// The p-quantile of sorted values, interpolating linearly between neighbours.
double percentile(const std::vector<double>& v, double p) {
    if (v.empty()) return 0.0;
    const double at = p * double(v.size() - 1);
    const size_t lo = size_t(at);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

std::unique_ptr<Context> make_context(const LoadedModel& m, const PerplexityParams& p) {
    ContextParams cp;
    cp.n_ctx = p.n_ctx;
    cp.n_batch = p.n_batch ? std::min(p.n_batch, p.n_ctx) : p.n_ctx;
    cp.n_threads = p.n_threads;
    cp.type_k = p.type_k;
    cp.type_v = p.type_v;
    return std::make_unique<Context>(m, cp);
}

}  // namespace

TokenScore score_position(const float* logits, const float* base_logits, int64_t n_vocab,
                          int32_t target) {
    TokenScore s;
    const LogSoftmax q = log_softmax(logits, n_vocab);
    s.nll = q.log_z - double(logits[target]);
    if (!base_logits) return s;
    const LogSoftmax b = log_softmax(base_logits, n_vocab);
    s.base_nll = b.log_z - double(base_logits[target]);
    s.same_top = q.argmax == b.argmax;
    double kld = 0.0;
    for (int64_t v = 0; v < n_vocab; ++v) {
        const double log_pb = double(base_logits[v]) - b.log_z;
        const double log_pq = double(logits[v]) - q.log_z;
        kld += std::exp(log_pb) * (log_pb - log_pq);
    }
    s.kld = kld;
    return s;
}

PerplexityResult perplexity(const LoadedModel& model, const LoadedModel* base,
                            std::string_view text, const PerplexityParams& params,
                            const PerplexityCallback& on_chunk) {
    const auto start = std::chrono::steady_clock::now();
    const uint32_t n_ctx = params.n_ctx;
    if (n_ctx < 4) {
        fail(ErrorKind::invalid_argument,
             "perplexity: a chunk of {} tokens is too short (at least 4)", n_ctx);
    }
    const Vocab& vocab = *model.vocab;
    std::vector<int32_t> tokens = vocab.tokenize(text, true, false);
    const int64_t n_vocab = model.model.hp.n_vocab;
    if (base) {
        if (int64_t(base->model.hp.n_vocab) != n_vocab) {
            fail(ErrorKind::invalid_argument,
                 "perplexity: the base model has {} tokens in its vocabulary, the model {}",
                 base->model.hp.n_vocab, n_vocab);
        }
        if (base->vocab->tokenize(text, true, false) != tokens) {
            fail(ErrorKind::invalid_argument,
                 "perplexity: the base model tokenizes the text differently from the model; KL "
                 "divergence needs the same tokens");
        }
    }
    const int64_t n_available = int64_t(tokens.size()) / n_ctx;
    if (n_available == 0) {
        fail(ErrorKind::invalid_argument,
             "perplexity: the text has {} tokens, fewer than one chunk of {} (use a longer text "
             "or a smaller context)",
             tokens.size(), n_ctx);
    }
    const int32_t n_chunks = int32_t(
        params.max_chunks > 0 ? std::min<int64_t>(params.max_chunks, n_available) : n_available);

    std::unique_ptr<Context> ctx = make_context(model, params);
    std::unique_ptr<Context> base_ctx = base ? make_context(*base, params) : nullptr;

    PerplexityResult r;
    r.n_text_tokens = int64_t(tokens.size());
    r.n_ctx = n_ctx;
    r.has_base = base != nullptr;
    r.n_threads = ctx->n_threads();
    const bool add_bos = vocab.add_bos() && vocab.bos() != kNoToken;
    const uint32_t first = n_ctx / 2;
    double nll = 0.0, nll2 = 0.0, base_nll = 0.0, base_nll2 = 0.0, kld = 0.0, kld2 = 0.0;
    int64_t same_top = 0;
    std::vector<double> klds;
    std::vector<int32_t> chunk(n_ctx);

    for (int32_t c = 0; c < n_chunks; ++c) {
        const size_t begin = size_t(c) * n_ctx;
        std::copy(tokens.begin() + begin, tokens.begin() + begin + n_ctx, chunk.begin());
        if (add_bos) chunk[0] = vocab.bos();
        ctx->truncate(0);
        ctx->decode(chunk.data(), n_ctx, true);
        if (base_ctx) {
            base_ctx->truncate(0);
            base_ctx->decode(chunk.data(), n_ctx, true);
        }
        for (uint32_t pos = first; pos + 1 < n_ctx; ++pos) {
            const int32_t target = tokens[begin + pos + 1];
            const TokenScore s = score_position(ctx->logits(int32_t(pos)),
                                                base_ctx ? base_ctx->logits(int32_t(pos)) : nullptr,
                                                n_vocab, target);
            nll += s.nll;
            nll2 += s.nll * s.nll;
            if (base_ctx) {
                base_nll += s.base_nll;
                base_nll2 += s.base_nll * s.base_nll;
                kld += s.kld;
                kld2 += s.kld * s.kld;
                klds.push_back(s.kld);
                same_top += s.same_top;
            }
            ++r.n_scored;
        }
        r.n_chunks = c + 1;
        r.ppl = std::exp(nll / double(r.n_scored));
        r.running_ppl.push_back(r.ppl);
        if (on_chunk) {
            PerplexityProgress p;
            p.chunk = c + 1;
            p.n_chunks = n_chunks;
            p.n_scored = r.n_scored;
            p.ppl = r.ppl;
            p.has_base = r.has_base;
            p.kld_mean = r.has_base ? kld / double(r.n_scored) : 0.0;
            p.top1_agreement = r.has_base ? double(same_top) / double(r.n_scored) : 0.0;
            p.elapsed_s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            p.tokens_per_s = p.elapsed_s > 0 ? double(r.n_chunks) * n_ctx / p.elapsed_s : 0.0;
            p.n_threads = r.n_threads;
            if (!on_chunk(p)) break;
        }
    }

    const int64_t n = r.n_scored;
    r.ppl_err = r.ppl * standard_error(nll, nll2, n);
    if (r.has_base) {
        r.base_ppl = std::exp(base_nll / double(n));
        r.base_ppl_err = r.base_ppl * standard_error(base_nll, base_nll2, n);
        r.kld_mean = kld / double(n);
        r.kld_err = standard_error(kld, kld2, n);
        std::sort(klds.begin(), klds.end());
        r.kld_median = percentile(klds, 0.5);
        r.kld_p99 = percentile(klds, 0.99);
        r.kld_max = klds.empty() ? 0.0 : klds.back();
        r.top1_agreement = double(same_top) / double(n);
        r.ppl_ratio = std::exp((nll - base_nll) / double(n));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace mw
