// Binds a GGUF file's tensors to a model's members by name, checking shapes and types, and
// collects every missing or malformed tensor so that one error lists them all. Internal to model/.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "model/model.h"

namespace mw {

inline std::string shape_string(const gguf::TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += fmt::format("{}{}", d ? ", " : "", t.ne[d]);
    return s + "]";
}

class Binder {
  public:
    explicit Binder(const gguf::GgufFile& file) : f_(file) {}

    WeightMatrix matrix(const std::string& name, int64_t n_cols, int64_t n_rows,
                        bool required = true) {
        const gguf::TensorInfo* t = find(name, required);
        if (!t) return {};
        if (!check_shape(*t, {n_cols, n_rows})) return {};
        return make_matrix(*t, n_cols, n_rows);
    }

    ExpertWeights experts(const std::string& name, int64_t n_cols, int64_t n_rows,
                          int64_t n_expert) {
        const gguf::TensorInfo* t = find(name, true);
        if (!t) return {};
        if (!check_shape(*t, {n_cols, n_rows, n_expert})) return {};
        ExpertWeights e;
        e.first = make_matrix(*t, n_cols, n_rows);
        e.expert_stride = e.first.row_bytes * size_t(n_rows);
        return e;
    }

    // A small tensor (norm weight, bias; 1-D unless `shape` says otherwise), decoded to n floats.
    std::vector<float> vector(const std::string& name, int64_t n, bool required = true,
                              std::vector<int64_t> shape = {}) {
        const gguf::TensorInfo* t = find(name, required);
        if (!t) return {};
        if (shape.empty()) shape = {n};
        if (!check_shape(*t, shape)) return {};
        const TypeTraits* traits = type_traits(t->type);
        if (!traits || !traits->to_float || traits->block_size != 1) {
            problems_.push_back(
                fmt::format("{} has type {}, expected F32/F16/BF16", name, type_name(t->type)));
            return {};
        }
        // A header alone (planning from a config or a download's first bytes) has nothing to
        // decode: holding n zeros per norm cost 338 MB for a fuzzed config of 623 layers.
        if (!t->data) return {};
        std::vector<float> out(size_t(n), 0.0f);
        traits->to_float(t->data, out.data(), n);
        return out;
    }

    bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }
    const gguf::GgufFile& file() const { return f_; }

    void finish(const HParams& hp) const {
        if (missing_.empty() && problems_.empty()) return;
        std::string msg = fmt::format("{}: cannot bind the {} model ({} layers):", f_.name(),
                                      hp.arch, hp.n_layer);
        if (!missing_.empty()) {
            msg += fmt::format(" {} missing tensor{}:", missing_.size(),
                               missing_.size() > 1 ? "s" : "");
            for (size_t i = 0; i < missing_.size() && i < 24; ++i) msg += " " + missing_[i];
            if (missing_.size() > 24) msg += fmt::format(" ... and {} more", missing_.size() - 24);
            msg += ".";
        }
        for (const std::string& p : problems_) msg += " " + p + ".";
        throw Error(problems_.empty() ? ErrorKind::bad_file : ErrorKind::bad_file, msg);
    }

  private:
    static std::string type_name(uint32_t id) {
        const auto layout = ggml_layout(id);
        return layout ? std::string(layout->name) : fmt::format("#{}", id);
    }

    const gguf::TensorInfo* find(const std::string& name, bool required) {
        const gguf::TensorInfo* t = f_.find_tensor(name);
        if (!t && required) missing_.push_back(name);
        // Weights are read in place as floats and blocks with fp16/f32 scales: a file with
        // general.alignment below 4 can place them where such reads are undefined.
        if (t && t->data && reinterpret_cast<uintptr_t>(t->data) % kWeightAlignment != 0) {
            problems_.push_back(fmt::format(
                "{} data (offset {} of the data section, general.alignment = {}) is not aligned to "
                "{} bytes",
                name, t->offset, f_.alignment(), kWeightAlignment));
            return nullptr;
        }
        return t;
    }

    static constexpr uintptr_t kWeightAlignment = 4;

    bool check_shape(const gguf::TensorInfo& t, const std::vector<int64_t>& expected) {
        bool ok = true;
        size_t d = 0;
        for (int64_t e : expected) {
            if (int64_t(t.ne[d]) != e) ok = false;
            ++d;
        }
        for (; d < gguf::kMaxDims; ++d) {
            if (t.ne[d] != 1) ok = false;
        }
        if (!ok) {
            std::string want = "[";
            size_t i = 0;
            for (int64_t e : expected) want += fmt::format("{}{}", i++ ? ", " : "", e);
            problems_.push_back(
                fmt::format("{} has shape {}, expected {}", t.name, shape_string(t), want + "]"));
        }
        return ok;
    }

    WeightMatrix make_matrix(const gguf::TensorInfo& t, int64_t n_cols, int64_t n_rows) {
        const TypeTraits* traits = type_traits(t.type);
        if (!traits || !traits->vec_dot || !traits->to_float) {
            problems_.push_back(
                fmt::format("{} has tensor type {}, which memwall cannot compute "
                            "with yet",
                            t.name, type_name(t.type)));
            return {};
        }
        WeightMatrix w;
        w.data = t.data;
        w.traits = traits;
        w.n_cols = n_cols;
        w.n_rows = n_rows;
        w.row_bytes = row_bytes(*traits, n_cols);
        return w;
    }

    const gguf::GgufFile& f_;
    std::vector<std::string> missing_;
    std::vector<std::string> problems_;
};

}  // namespace mw
