#include "quant/quantize_model.h"

// --tensor-type patterns are std::regex (ECMAScript), as in llama-quantize. GCC 12 reports a false
// -Wmaybe-uninitialized inside libstdc++'s <regex> at -O2 under the sanitizers (GCC PR 105562).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <regex>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "quant/imatrix.h"
#include "sys/mapped_file.h"
#include "sys/thread_pool.h"
#include "tensor/quantize/quantize.h"
#include "tensor/quants.h"
#include "tensor/types.h"

namespace mw {
namespace {

using T = GgmlType;

constexpr uint32_t kQuantizationVersion = 2;  // general.quantization_version of today's blocks

std::string type_name(GgmlType t) {
    const auto layout = ggml_layout(uint32_t(t));
    return layout ? std::string(layout->name) : fmt::format("type {}", uint32_t(t));
}

bool is_block_type(GgmlType t) {
    const auto layout = ggml_layout(uint32_t(t));
    return layout && layout->block_size > 1;
}

// What quant_mix needs to know about the model, read straight from the metadata so that any
// architecture can be quantized.
QuantModelInfo model_info(const gguf::GgufFile& f, std::string_view arch) {
    auto number = [&](const std::string& key, uint32_t fallback) -> uint32_t {
        const gguf::Value* v = f.find(key);
        if (!v) return fallback;
        if (v->type == gguf::ValueType::array)
            return v->count ? uint32_t(v->elem_i64(0)) : fallback;
        return v->is_integer() ? uint32_t(v->as_u64()) : fallback;
    };
    const std::string a(arch);
    QuantModelInfo info;
    info.arch = arch;
    info.n_layer = number(a + ".block_count", 0);
    info.n_head = number(a + ".attention.head_count", 0);
    info.n_head_kv = number(a + ".attention.head_count_kv", info.n_head);
    info.n_expert = number(a + ".expert_count", 0);
    info.has_output = f.find_tensor("output.weight") != nullptr;
    info.is_70b_class = model_is_70b_class(arch, info.n_layer, info.n_head, info.n_head_kv);
    for (const gguf::TensorInfo& t : f.tensors()) add_attn_v_tensor(info, t.name);
    return info;
}

// llama-quantize refuses these targets without an importance matrix (tensor_requires_imatrix
// in llama-quant.cpp: "the result will be garbage"): the lattice i-quants of 3 bits and less, and
// Q2_K in a Q2_K_S file; the token embeddings and the output matrix are exempt.
bool requires_imatrix(std::string_view name, GgmlType to, QuantRecipe recipe) {
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" ||
        name == "output.weight") {
        return false;
    }
    switch (to) {
        case T::IQ3_XXS:
        case T::IQ2_XXS:
        case T::IQ2_XS:
        case T::IQ2_S:
        case T::IQ1_M:
        case T::IQ1_S:
            return true;
        case T::Q2_K:
            return recipe == QuantRecipe::Q2_K_S;
        default:
            return false;
    }
}

// One tensor of the output: its source, its type, and the importance of its columns.
struct TensorPlan {
    const gguf::TensorInfo* in;
    GgmlType from, to;
    std::vector<float> importance;  // n_mat * ne0, ne0 (shared by the matrices) or empty
};

class Planner {
  public:
    Planner(const gguf::GgufFile& file, const QuantizeOptions& options, const Imatrix* imatrix,
            const std::function<void(const QuantizeEvent&)>& on_event)
        : file_(file), options_(options), imatrix_(imatrix), on_event_(on_event) {
        arch_ = std::string(file.get_string("general.architecture").value_or(""));
        info_ = model_info(file, arch_);
        info_.has_imatrix = imatrix != nullptr;
        for (const TensorTypeOverride& o : options.overrides) {
            try {
                patterns_.emplace_back(o.pattern);
            } catch (const std::regex_error& e) {
                fail(ErrorKind::invalid_argument,
                     "--tensor-type {}: not a valid regular expression: {}", o.pattern, e.what());
            }
        }
    }

    TensorPlan plan(const gguf::TensorInfo& t) {
        TensorPlan p{&t, GgmlType(t.type), GgmlType(t.type), {}};
        const int64_t ne0 = int64_t(t.ne[0]);
        const bool quantizable = is_quantizable_tensor(t.name, t.n_dims);
        if (options_.pure) {
            if (quantizable) p.to = fit(t, recipe_base_type(options_.recipe));
        } else {
            p.to = tensor_type_for(options_.recipe, info_, t.name, t.n_dims, ne0, p.from);
            // The rules' type for rows that fit (every block size divides 256), to say when the
            // row length forced a fallback.
            const GgmlType wanted =
                tensor_type_for(options_.recipe, info_, t.name, t.n_dims, 256, p.from);
            if (wanted != p.to) note_fallback(t, wanted, p.to);
        }
        if (quantizable) {
            for (size_t i = 0; i < patterns_.size(); ++i) {
                if (std::regex_search(t.name.begin(), t.name.end(), patterns_[i])) {
                    p.to = fit(t, options_.overrides[i].type);
                }
            }
        }
        if (!imatrix_ && p.to != p.from && quantizable &&
            requires_imatrix(t.name, p.to, options_.recipe)) {
            fail(ErrorKind::invalid_argument,
                 "{}: {} ({}) requires an importance matrix (--imatrix FILE, from `memwall "
                 "imatrix`): without one so few bits give garbage, and llama-quantize refuses "
                 "it too",
                 t.name, type_name(p.to), recipe_name(options_.recipe));
        }
        if (!file_quantizer(p.to)) {
            fail(ErrorKind::unsupported, "{}: memwall cannot write tensors of type {}", t.name,
                 type_name(p.to));
        }
        if (p.to == p.from) return p;

        const TypeTraits* from = type_traits(p.from);
        if (is_block_type(p.from) && !options_.allow_requantize) {
            fail(ErrorKind::invalid_argument,
                 "{}: tensor {} is already quantized ({}); requantizing to {} compounds the "
                 "errors of both: start from an F32/F16/BF16 file, or pass --allow-requantize",
                 file_.name(), t.name, type_name(p.from), type_name(p.to));
        }
        if (!from || !from->to_float) {
            fail(ErrorKind::unsupported, "{}: tensor {} has type {}, which memwall cannot decode",
                 file_.name(), t.name, type_name(p.from));
        }
        ++n_quantized_;
        if (imatrix_ && is_block_type(p.to)) attach_importance(t, p);
        return p;
    }

    size_t n_quantized() const { return n_quantized_; }
    size_t n_fallback() const { return n_fallback_; }
    size_t n_with_imatrix() const { return n_with_imatrix_; }

  private:
    GgmlType fit(const gguf::TensorInfo& t, GgmlType wanted) {
        const GgmlType got = row_length_fallback(wanted, int64_t(t.ne[0]));
        if (got != wanted) note_fallback(t, wanted, got);
        return got;
    }

    void note_fallback(const gguf::TensorInfo& t, GgmlType wanted, GgmlType got) {
        ++n_fallback_;
        const auto block = ggml_layout(uint32_t(wanted))->block_size;
        note(t.name,
             fmt::format("{}: rows of {} are not a multiple of {} ({}): using fallback type {}",
                         t.name, t.ne[0], block, type_name(wanted), type_name(got)),
             &wanted, got);
    }

    void attach_importance(const gguf::TensorInfo& t, TensorPlan& p) {
        const std::string name(t.name);
        std::vector<float> means = imatrix_->means(name);
        if (means.empty()) {
            note(t.name,
                 fmt::format("{}: not in the imatrix: quantized without importance weights", name));
            return;
        }
        const uint64_t ne0 = t.ne[0], n_mat = t.ne[2] * t.ne[3];
        if (means.size() != ne0 * n_mat && means.size() != ne0) {
            fail(ErrorKind::bad_file,
                 "{}: the imatrix entry for {} has {} values, but the tensor has {} columns x {} "
                 "matrices (an imatrix of another model?)",
                 options_.imatrix_path, name, means.size(), ne0, n_mat);
        }
        p.importance = std::move(means);
        ++n_with_imatrix_;
    }

    void note(std::string_view name, const std::string& message,
              const GgmlType* fallback_from = nullptr, GgmlType fallback_to = GgmlType::F32) {
        if (!on_event_) return;
        QuantizeEvent e;
        e.kind = QuantizeEvent::Kind::note;
        e.name = name;
        e.message = message;
        if (fallback_from) {
            e.fallback = true;
            e.wanted = *fallback_from;
            e.to = fallback_to;
        }
        on_event_(e);
    }

    const gguf::GgufFile& file_;
    const QuantizeOptions& options_;
    const Imatrix* imatrix_;
    const std::function<void(const QuantizeEvent&)>& on_event_;
    std::string arch_;
    QuantModelInfo info_;
    std::vector<std::regex> patterns_;
    size_t n_quantized_ = 0, n_fallback_ = 0, n_with_imatrix_ = 0;
};

// F16 rows to floats: the type table's reference decoder (bit by bit) cost 1 ns per weight, about
// a tenth of a TQ2_0 file's time; with F16C one instruction converts 8 values, exactly.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default"))) void f16_rows_to_float(
    const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        _Float16 h;
        std::memcpy(&h, src + 2 * i, sizeof h);
        dst[i] = float(h);
    }
}
constexpr bool kFastF16 = true;
#else
void f16_rows_to_float(const uint8_t*, float*, int64_t) {}
constexpr bool kFastF16 = false;
#endif

// Decodes and re-encodes one tensor into dst on all threads, in chunks of rows that stay inside
// one matrix (experts have their own importance).
void encode_tensor(ThreadPool& pool, const TensorPlan& p, QuantSearch search, uint8_t* dst) {
    const gguf::TensorInfo& t = *p.in;
    const int64_t ne0 = int64_t(t.ne[0]);
    const int64_t rows_per_mat = int64_t(t.ne[1]);
    const int64_t n_mat = int64_t(t.ne[2] * t.ne[3]);
    const TypeTraits& from = *type_traits(p.from);
    const TypeTraits& to = *type_traits(p.to);
    const size_t in_row = row_bytes(from, ne0), out_row = row_bytes(to, ne0);
    const int64_t chunk_rows = std::max<int64_t>(1, (int64_t(1) << 15) / ne0);
    const int64_t chunks_per_mat = (rows_per_mat + chunk_rows - 1) / chunk_rows;
    // With importance weights too the search asked for: the fast one weighs every trial by the
    // importance and, on kq-tiny, gives a lower KL divergence than llama-quantize's files with
    // the same imatrix (Q4_K_M 0.332 vs 0.336, Q3_K_S 0.981 vs 1.024) at a third of the exact
    // search's time; --thorough gains a little more (0.326, 0.979). docs/quantize.md.
    const int64_t n_chunks = chunks_per_mat * n_mat;

    std::atomic<int64_t> next{0};
    std::mutex error_mutex;
    std::exception_ptr error;
    pool.for_each_thread([&](int, int) {
        std::vector<float> rows(size_t(chunk_rows * ne0));
        for (int64_t c = next++; c < n_chunks; c = next++) {
            const int64_t mat = c / chunks_per_mat;
            const int64_t r0 = mat * rows_per_mat + (c % chunks_per_mat) * chunk_rows;
            const int64_t r1 = std::min(r0 + chunk_rows, (mat + 1) * rows_per_mat);
            const float* importance = nullptr;
            if (!p.importance.empty()) {
                importance = p.importance.data() +
                             (p.importance.size() == size_t(ne0) ? 0 : size_t(mat * ne0));
            }
            try {
                const int64_t n = (r1 - r0) * ne0;
                if (kFastF16 && p.from == GgmlType::F16) {
                    f16_rows_to_float(t.data + size_t(r0) * in_row, rows.data(), n);
                } else {
                    from.to_float(t.data + size_t(r0) * in_row, rows.data(), n);
                }
                // One vectorisable pass (no exit per value); the index only when needed.
                int bad = 0;
                for (int64_t i = 0; i < n; ++i) bad |= !(std::fabs(rows[size_t(i)]) <= FLT_MAX);
                for (int64_t i = 0; bad && i < n; ++i) {
                    if (!std::isfinite(rows[size_t(i)])) {
                        fail(ErrorKind::bad_file,
                             "tensor {} has a non-finite value ({}) at element {}", t.name,
                             rows[size_t(i)], r0 * ne0 + i);
                    }
                }
                quantize_rows(p.to, rows.data(), dst + size_t(r0) * out_row, r1 - r0, ne0,
                              importance, search);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
                next = n_chunks;
            }
        }
    });
    if (error) std::rethrow_exception(error);
}

// The layer of a "blk.N." tensor name, -1 for the others.
int layer_of(std::string_view name) {
    if (name.substr(0, 4) != "blk.") return -1;
    int layer = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && layer < (1 << 24); ++i) {
        layer = layer * 10 + (name[i] - '0');
    }
    return i > 4 ? layer : -1;
}

// llama-quantize's output order: the tensors outside the layers first, then layer by layer,
// by name within each group; so that the files match byte for byte in layout.
bool llama_cpp_order(const TensorPlan& a, const TensorPlan& b) {
    const int la = layer_of(a.in->name), lb = layer_of(b.in->name);
    return la != lb ? la < lb : a.in->name < b.in->name;
}

uint64_t tensor_bytes(GgmlType type, const gguf::TensorInfo& t) {
    const auto layout = ggml_layout(uint32_t(type));
    return t.n_elements / layout->block_size * layout->type_size;
}

}  // namespace

QuantizeReport quantize_model(const std::string& in_path, const std::string& out_path,
                              const QuantizeOptions& options,
                              const std::function<void(const QuantizeEvent&)>& on_event) {
    const auto start = std::chrono::steady_clock::now();
    const MappedFile in = MappedFile::open(in_path);
    const gguf::GgufFile file = gguf::GgufFile::parse(in.bytes(), in_path);

    Imatrix imatrix;
    if (!options.imatrix_path.empty()) imatrix = load_imatrix(options.imatrix_path);
    const Imatrix* imatrix_ptr = options.imatrix_path.empty() ? nullptr : &imatrix;

    // Decide every type first, so that errors come before any output is written.
    Planner planner(file, options, imatrix_ptr, on_event);
    std::vector<TensorPlan> plans;
    plans.reserve(file.tensors().size());
    for (const gguf::TensorInfo& t : file.tensors()) plans.push_back(planner.plan(t));
    std::stable_sort(plans.begin(), plans.end(), llama_cpp_order);

    gguf::GgufWriter writer(file.alignment());
    for (const gguf::KeyValue& kv : file.metadata()) writer.set_value(kv.key, kv.value);
    // Appended last, in llama-quantize's order.
    writer.remove("general.file_type");
    writer.set_u32("general.quantization_version", kQuantizationVersion);
    writer.set_u32("general.file_type", recipe_file_type(options.recipe));
    if (imatrix_ptr) {
        writer.set_string("quantize.imatrix.file", options.imatrix_path);
        if (!imatrix.datasets.empty())
            writer.set_string("quantize.imatrix.dataset", imatrix.datasets[0]);
        writer.set_i32("quantize.imatrix.entries_count", int32_t(imatrix.entries.size()));
        writer.set_i32("quantize.imatrix.chunks_count", int32_t(imatrix.chunk_count));
    }

    ThreadPool pool(options.n_threads > 0 ? options.n_threads : default_thread_count());
    QuantizeReport report;
    std::vector<uint64_t> done_bytes;  // input bytes of tensors 0..i
    for (const TensorPlan& p : plans) {
        const gguf::TensorInfo& t = *p.in;
        std::vector<uint64_t> ne(t.ne, t.ne + t.n_dims);
        if (p.to == p.from) {
            writer.add_tensor(t.name, p.to, std::move(ne),
                              std::span<const uint8_t>(t.data, t.n_bytes));
        } else {
            writer.add_tensor(t.name, p.to, std::move(ne), [&pool, &p, &options](uint8_t* dst) {
                encode_tensor(pool, p, options.search, dst);
            });
        }
        report.in_tensor_bytes += t.n_bytes;
        report.out_tensor_bytes += tensor_bytes(p.to, t);
        report.n_elements += t.n_elements;
        done_bytes.push_back(report.in_tensor_bytes);
    }

    writer.write_file(out_path, [&](size_t i, size_t n) {
        if (!on_event) return;
        const TensorPlan& p = plans[i - 1];
        QuantizeEvent e;
        e.index = i;
        e.n_tensors = n;
        e.name = p.in->name;
        e.from = p.from;
        e.to = p.to;
        e.bytes_done = done_bytes[i - 1];
        e.bytes_total = report.in_tensor_bytes;
        e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        on_event(e);
    });

    report.in_file_bytes = in.file_size();
    report.out_file_bytes = writer.total_bytes();
    report.n_tensors = plans.size();
    report.n_quantized = planner.n_quantized();
    report.n_fallback = planner.n_fallback();
    report.n_with_imatrix = planner.n_with_imatrix();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

}  // namespace mw
