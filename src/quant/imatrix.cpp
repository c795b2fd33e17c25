#include "quant/imatrix.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/forward.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "sys/mapped_file.h"

namespace mw {
namespace {

constexpr std::string_view kSums = ".in_sum2";
constexpr std::string_view kCounts = ".counts";

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<float> f32_values(const gguf::TensorInfo& t, const std::string& path) {
    if (t.type != uint32_t(GgmlType::F32)) {
        fail(ErrorKind::bad_file, "{}: imatrix tensor {} has type {}, expected F32", path, t.name,
             t.type);
    }
    std::vector<float> v(t.n_elements);
    std::memcpy(v.data(), t.data, v.size() * sizeof(float));
    return v;
}

Imatrix load_gguf(std::span<const uint8_t> bytes, const std::string& path) {
    const gguf::GgufFile file = gguf::GgufFile::parse(bytes, path);
    Imatrix m;
    if (const gguf::Value* v = file.get_array("imatrix.datasets", gguf::ValueType::string)) {
        for (std::string_view s : v->strings) m.datasets.emplace_back(s);
    }
    m.chunk_count = file.get_u32("imatrix.chunk_count").value_or(0);
    m.chunk_size = file.get_u32("imatrix.chunk_size").value_or(0);
    for (const gguf::TensorInfo& t : file.tensors()) {
        if (!ends_with(t.name, kSums)) continue;
        const std::string name(t.name.substr(0, t.name.size() - kSums.size()));
        const gguf::TensorInfo* c = file.find_tensor(name + std::string(kCounts));
        if (!c) fail(ErrorKind::bad_file, "{}: {} has no {}{} tensor", path, t.name, name, kCounts);
        const std::vector<float> sums = f32_values(t, path);
        const std::vector<float> counts = f32_values(*c, path);
        const int64_t n_cols = int64_t(t.ne[0]);
        if (counts.empty() || n_cols <= 0 || sums.size() != size_t(n_cols) * counts.size()) {
            fail(ErrorKind::bad_file, "{}: {} has {} values for {} matrices of {} columns", path,
                 t.name, sums.size(), counts.size(), n_cols);
        }
        ImatrixEntry& e = m.entries[name];
        e.n_cols = n_cols;
        e.sums.assign(sums.begin(), sums.end());
        e.counts.assign(counts.begin(), counts.end());
    }
    if (m.entries.empty())
        fail(ErrorKind::bad_file, "{}: no *{} tensors: not an imatrix", path, kSums);
    return m;
}

// The legacy .dat layout: i32 n_entries, then per entry i32 name length, name, i32 calls,
// i32 n_values, f32 values (mean x^2 * calls); then i32 chunk count and an optional dataset name.
Imatrix load_legacy(std::span<const uint8_t> bytes, const std::string& path) {
    size_t pos = 0;
    auto take = [&](size_t n, std::string_view what) {
        if (bytes.size() - pos < n) {
            fail(ErrorKind::bad_file, "{}: truncated imatrix: {} at offset {} needs {} bytes", path,
                 what, pos, n);
        }
        const uint8_t* p = bytes.data() + pos;
        pos += n;
        return p;
    };
    auto i32 = [&](std::string_view what) {
        int32_t v;
        std::memcpy(&v, take(4, what), 4);
        return v;
    };
    Imatrix m;
    const int32_t n_entries = i32("the entry count");
    if (n_entries <= 0) {
        fail(ErrorKind::bad_file, "{}: neither a GGUF nor a legacy imatrix (entry count {})", path,
             n_entries);
    }
    for (int32_t i = 0; i < n_entries; ++i) {
        const int32_t len = i32("a name length");
        if (len <= 0 || len > 4096)
            fail(ErrorKind::bad_file, "{}: entry {} has a name of {} bytes", path, i, len);
        const std::string name(reinterpret_cast<const char*>(take(size_t(len), "a name")),
                               size_t(len));
        const int32_t calls = i32("a call count");
        const int32_t n_values = i32("a value count");
        if (n_values <= 0)
            fail(ErrorKind::bad_file, "{}: entry {} has {} values", path, name, n_values);
        std::vector<float> values(static_cast<size_t>(n_values));
        std::memcpy(values.data(), take(size_t(n_values) * 4, "values"), size_t(n_values) * 4);
        // One count for the whole entry: sums / count gives back the stored mean.
        ImatrixEntry& e = m.entries[name];
        e.n_cols = n_values;
        e.sums.assign(values.begin(), values.end());
        e.counts = {double(std::max(calls, 1))};
    }
    if (bytes.size() - pos >= 4) m.chunk_count = uint32_t(std::max(0, i32("the chunk count")));
    if (bytes.size() - pos >= 4) {
        const int32_t len = i32("the dataset name length");
        if (len > 0 && size_t(len) <= bytes.size() - pos) {
            m.datasets.emplace_back(reinterpret_cast<const char*>(take(size_t(len), "dataset")),
                                    size_t(len));
        }
    }
    return m;
}

// Which weight tensor (and which of its stacked matrices) a WeightMatrix points into.
struct MatrixRange {
    const uint8_t* begin;
    const uint8_t* end;
    std::string name;
    size_t matrix_bytes;
    int64_t n_cols;
    size_t n_mat;
};

class Collector final : public MatmulObserver {
  public:
    Collector(const gguf::GgufFile& file, bool process_output, Imatrix& out)
        : process_output_(process_output), out_(out) {
        for (const gguf::TensorInfo& t : file.tensors()) {
            if (!t.data || t.n_dims < 2 || t.n_bytes == 0) continue;
            const size_t n_mat = size_t(t.ne[2] * t.ne[3]);
            ranges_.push_back({t.data, t.data + t.n_bytes, std::string(t.name),
                               size_t(t.n_bytes) / n_mat, int64_t(t.ne[0]), n_mat});
        }
        std::sort(ranges_.begin(), ranges_.end(),
                  [](const MatrixRange& a, const MatrixRange& b) { return a.begin < b.begin; });
    }

    void on_matmul(const WeightMatrix& w, const float* x, int64_t n_tokens) override {
        auto it =
            std::upper_bound(ranges_.begin(), ranges_.end(), w.data,
                             [](const uint8_t* p, const MatrixRange& r) { return p < r.begin; });
        if (it == ranges_.begin()) return;
        const MatrixRange& r = *--it;
        if (w.data >= r.end || w.n_cols != r.n_cols) return;
        if (!process_output_ && r.name.compare(0, 4, "blk.") != 0) return;
        const size_t mat = size_t(w.data - r.begin) / r.matrix_bytes;
        ImatrixEntry& e = out_.entries[r.name];
        if (e.counts.empty()) {
            e.n_cols = r.n_cols;
            e.sums.assign(r.n_mat * size_t(r.n_cols), 0.0);
            e.counts.assign(r.n_mat, 0.0);
        }
        double* sums = e.sums.data() + mat * size_t(r.n_cols);
        for (int64_t t = 0; t < n_tokens; ++t) {
            const float* row = x + t * r.n_cols;
            for (int64_t j = 0; j < r.n_cols; ++j) sums[j] += double(row[j]) * row[j];
        }
        e.counts[mat] += double(n_tokens);
    }

  private:
    std::vector<MatrixRange> ranges_;
    bool process_output_;
    Imatrix& out_;
};

// -log p(target) under the logits (log-sum-exp in double).
double negative_log_likelihood(const float* logits, size_t n_vocab, int32_t target) {
    const float max = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - max);
    return std::log(sum) - (double(logits[target]) - max);
}

}  // namespace

std::vector<float> Imatrix::means(const std::string& name) const {
    const auto it = entries.find(name);
    if (it == entries.end()) return {};
    const ImatrixEntry& e = it->second;
    std::vector<float> out(e.sums.size());
    for (size_t m = 0; m < e.n_mat(); ++m) {
        for (int64_t j = 0; j < e.n_cols; ++j) {
            const size_t i = m * size_t(e.n_cols) + size_t(j);
            out[i] = e.counts[m] > 0 ? float(e.sums[i] / e.counts[m]) : 1.0f;
        }
    }
    return out;
}

Imatrix load_imatrix(const std::string& path) {
    const MappedFile file = MappedFile::open(path);
    const std::span<const uint8_t> bytes = file.bytes();
    uint32_t magic = 0;
    if (bytes.size() >= 4) std::memcpy(&magic, bytes.data(), 4);
    return magic == gguf::kMagic ? load_gguf(bytes, path) : load_legacy(bytes, path);
}

void save_imatrix(const Imatrix& imatrix, const std::string& path) {
    gguf::GgufWriter w;
    w.set_string("general.type", "imatrix");
    w.set_array_strings("imatrix.datasets", imatrix.datasets);
    w.set_u32("imatrix.chunk_count", imatrix.chunk_count);
    w.set_u32("imatrix.chunk_size", imatrix.chunk_size);
    // The writer keeps spans: the float copies live until write_file returns (moving the inner
    // vectors keeps their buffers).
    std::vector<std::vector<float>> storage;
    auto bytes_of = [](const std::vector<float>& v) {
        return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                        v.size() * sizeof(float));
    };
    for (const auto& [name, e] : imatrix.entries) {
        const uint64_t n_mat = e.n_mat();
        storage.emplace_back(e.sums.begin(), e.sums.end());
        w.add_tensor(name + std::string(kSums), GgmlType::F32, {uint64_t(e.n_cols), n_mat},
                     bytes_of(storage.back()));
        storage.emplace_back(e.counts.begin(), e.counts.end());
        w.add_tensor(name + std::string(kCounts), GgmlType::F32, {1, n_mat},
                     bytes_of(storage.back()));
    }
    w.write_file(path);
}

Imatrix compute_imatrix(const LoadedModel& model, std::string_view text,
                        const ImatrixParams& params,
                        const std::function<void(const ImatrixProgress&)>& on_chunk) {
    const Vocab& vocab = *model.vocab;
    const uint32_t n_ctx = params.n_ctx;
    if (n_ctx < 2)
        fail(ErrorKind::invalid_argument,
             "imatrix: the chunk size must be at least 2 tokens, not {}", n_ctx);
    const std::vector<int32_t> tokens = vocab.tokenize(text, true, false);
    int n_chunks = int(tokens.size() / n_ctx);
    if (params.n_chunks >= 0) n_chunks = std::min(n_chunks, params.n_chunks);
    if (n_chunks == 0) {
        fail(ErrorKind::invalid_argument,
             "imatrix: the text has {} tokens, fewer than one chunk of {} (lower -c)",
             tokens.size(), n_ctx);
    }

    Imatrix out;
    out.chunk_size = n_ctx;
    if (!params.dataset.empty()) out.datasets.push_back(params.dataset);
    Collector collector(model.gguf, params.process_output, out);
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx;
    cp.n_threads = params.n_threads;
    Context ctx(model, cp);
    ctx.set_matmul_observer(&collector);

    const size_t n_vocab = model.model.hp.n_vocab;
    const auto start = std::chrono::steady_clock::now();
    double nll = 0;
    int64_t n_scored = 0;
    std::vector<int32_t> chunk(n_ctx);
    for (int c = 0; c < n_chunks; ++c) {
        std::copy(tokens.begin() + int64_t(c) * n_ctx, tokens.begin() + int64_t(c + 1) * n_ctx,
                  chunk.begin());
        if (vocab.add_bos() && vocab.bos() != kNoToken) chunk[0] = vocab.bos();
        ctx.truncate(0);
        ctx.decode(chunk.data(), n_ctx, true);
        // Perplexity over the second half, where each prediction has context.
        for (uint32_t i = n_ctx / 2; i + 1 < n_ctx; ++i) {
            nll += negative_log_likelihood(ctx.logits(int32_t(i)), n_vocab, chunk[i + 1]);
            ++n_scored;
        }
        out.chunk_count = uint32_t(c + 1);
        if (on_chunk) {
            ImatrixProgress p;
            p.chunk = c + 1;
            p.n_chunks = n_chunks;
            p.ppl = n_scored ? std::exp(nll / double(n_scored)) : 0.0;
            p.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            on_chunk(p);
        }
    }
    ctx.set_matmul_observer(nullptr);
    if (out.entries.empty()) {
        fail(ErrorKind::unsupported, "imatrix: {}: the forward pass reported no matrix inputs",
             model.file.path());
    }
    return out;
}

}  // namespace mw
