// Importance matrices ("imatrix"): for every weight matrix, the sum of the squares of each input
// column over a calibration text, and how many rows (tokens) were summed; per expert for MoE
// tensors. quantize weighs each column's error by the mean x^2 (tensor/quantize/quantize.h).
//
// Files use llama.cpp's formats: GGUF (general.type = "imatrix", imatrix.datasets,
// imatrix.chunk_count, imatrix.chunk_size; tensors NAME.in_sum2, F32 [n_cols, n_mat], and
// NAME.counts, F32 [1, n_mat]) is what memwall writes; the older binary .dat format (per entry:
// name, call count, n_cols * n_mat values = mean x^2 * calls) is read too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

struct LoadedModel;

struct ImatrixEntry {
    int64_t n_cols = 0;
    std::vector<double> sums;    // n_mat x n_cols sums of x^2
    std::vector<double> counts;  // n_mat: rows summed into each matrix
    size_t n_mat() const { return counts.size(); }
};

struct Imatrix {
    std::map<std::string, ImatrixEntry> entries;  // by weight tensor name ("blk.0.attn_q.weight")
    std::vector<std::string> datasets;            // the calibration texts
    uint32_t chunk_count = 0;
    uint32_t chunk_size = 0;

    // The mean x^2 per column of every matrix of `name` (n_mat * n_cols values; 1 for a matrix
    // that saw no rows, as llama.cpp reads it), or empty when there is no entry.
    std::vector<float> means(const std::string& name) const;
};

// Reads either format (told apart by the GGUF magic); mw::Error naming the file and field when it
// is malformed.
Imatrix load_imatrix(const std::string& path);
// Writes the GGUF format (atomically, like every GGUF memwall writes).
void save_imatrix(const Imatrix& imatrix, const std::string& path);

struct ImatrixParams {
    uint32_t n_ctx = 512;         // tokens per chunk; each chunk starts from an empty cache
    int32_t n_chunks = -1;        // chunks to process (-1: all the text gives)
    int n_threads = 0;            // 0: the runtime's default
    bool process_output = false;  // also collect output.weight (llama.cpp's --process-output)
    std::string dataset;          // recorded in the file (the text's path)
};

struct ImatrixProgress {
    int chunk = 0;  // chunks done
    int n_chunks = 0;
    double ppl = 0.0;  // running perplexity over the second half of each chunk
    double seconds = 0.0;
};

// Runs the model over the text in chunks of n_ctx tokens (a BOS first when the vocabulary adds
// one) and accumulates the input statistics of every matrix product of the blk.* weights.
Imatrix compute_imatrix(const LoadedModel& model, std::string_view text,
                        const ImatrixParams& params,
                        const std::function<void(const ImatrixProgress&)>& on_chunk = {});

}  // namespace mw
