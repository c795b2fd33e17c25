// Token sampling: penalties (repetition, frequency, presence), top-k, top-p, min-p and
// temperature, applied in that order (llama.cpp's default chain), then a draw from a seeded
// generator. Temperature <= 0 is greedy (after the penalties).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace mw {

struct SamplerParams {
    float temperature = 0.8f;
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float repeat_penalty = 1.0f;     // 1: off
    float frequency_penalty = 0.0f;  // subtracted once per occurrence (OpenAI's); 0: off
    float presence_penalty = 0.0f;   // subtracted once if present (OpenAI's); 0: off
    int32_t repeat_last_n = 64;      // tokens the penalties look back (-1: all accepted)
    uint64_t seed = 0;
};

// A token and its probability.
struct TokenProb {
    int32_t id;
    float p;
};

class Sampler {
  public:
    explicit Sampler(const SamplerParams& params);

    int32_t sample(const float* logits, int32_t n_vocab);
    // The distribution sample() draws from (after the penalties, top-k, top-p, min-p and
    // temperature), most likely first; greedy: the argmax with p = 1. Speculative decoding's
    // acceptance rule needs it whole, not one draw.
    void distribution(const float* logits, int32_t n_vocab, std::vector<TokenProb>& out);
    // A uniform draw in [0, 1) from the sampler's seeded generator.
    double uniform();
    const SamplerParams& params() const { return params_; }
    void accept(int32_t token);
    void reset();

  private:
    struct Candidate {
        int32_t id;
        float logit;
        float p;
    };
    void apply_penalty();
    void keep_top_k(size_t k);
    void keep_top_p(float p);
    void keep_min_p(float p);
    void softmax_sorted();
    // The candidates left by the chain, with their probabilities (greedy: none sorted, the
    // argmax's index returned; otherwise -1).
    long prepare(const float* logits, int32_t n_vocab);

    SamplerParams params_;
    std::mt19937_64 rng_;
    std::deque<int32_t> recent_;
    std::vector<int32_t> counted_;  // recent tokens sorted (reused between calls)
    std::vector<Candidate> cand_;
    bool sorted_ = false;
};

// Index of the largest value; ties go to the lowest index.
int32_t argmax(const float* logits, int32_t n);

}  // namespace mw
