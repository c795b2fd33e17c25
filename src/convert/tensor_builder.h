// The tensors of a Hugging Face checkpoint (its safetensors shards, mapped) and the GGUF tensor
// list built from them, shared by the converter's architecture builders (convert_hf.cpp,
// convert_qwen35.cpp, convert_lfm2.cpp, convert_gemma4.cpp, convert_gptoss.cpp). Every missing or
// misshapen tensor is collected, so that one error lists them all, and every tensor of the
// checkpoint must be used.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "convert/hf_config.h"
#include "convert/tensor_plan.h"
#include "format/json_text.h"
#include "format/safetensors.h"
#include "sys/mapped_file.h"

namespace mw::convert {
namespace fs = std::filesystem;

inline std::string join(const std::string& dir, const std::string& file) {
    return (fs::path(dir) / file).string();
}

inline bool is_file(const std::string& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

inline std::string shape_text(const std::vector<uint64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
    return s + "]";
}

// The safetensors shards of the folder, mapped, with every tensor by name.
class Checkpoint {
  public:
    explicit Checkpoint(const std::string& dir) : dir_(dir) {
        const std::string index_path = join(dir, "model.safetensors.index.json");
        std::map<std::string, std::string> weight_map;  // tensor -> shard file name
        std::vector<std::string> shards;
        if (is_file(index_path)) {
            weight_map = read_index(index_path);
            std::set<std::string> names;
            for (const auto& [tensor, file] : weight_map) names.insert(file);
            shards.assign(names.begin(), names.end());
        } else {
            std::error_code ec;
            for (const auto& entry : fs::directory_iterator(dir, ec)) {
                const std::string n = entry.path().filename().string();
                if (n.rfind("model", 0) == 0 && n.size() > 12 &&
                    n.compare(n.size() - 12, 12, ".safetensors") == 0) {
                    shards.push_back(n);
                }
            }
            if (ec) fail(ErrorKind::io, "{}: cannot list the folder: {}", dir, ec.message());
            std::sort(shards.begin(), shards.end());
        }
        if (shards.empty()) no_weights();
        for (const std::string& shard : shards) add_shard(shard, weight_map);
        for (const auto& [tensor, file] : weight_map) {
            if (!tensors_.count(tensor)) {
                fail(ErrorKind::bad_file,
                     "{}: the weight map puts tensor \"{}\" in {}, but that file does not have it",
                     index_path, tensor, file);
            }
        }
    }

    // The tensor, or null when absent. Marks it used.
    const SourceTensor* take(const std::string& name) {
        const auto it = tensors_.find(name);
        if (it == tensors_.end()) return nullptr;
        used_.insert(name);
        return &it->second;
    }
    bool has(const std::string& name) const { return tensors_.count(name) != 0; }

    std::vector<std::string> unused() const {
        std::vector<std::string> out;
        for (const auto& [name, t] : tensors_) {
            if (!used_.count(name)) out.push_back(name);
        }
        return out;
    }

  private:
    [[noreturn]] void no_weights() const {
        for (const char* other : {"pytorch_model.bin", "pytorch_model.bin.index.json",
                                  "consolidated.00.pth", "model.gguf"}) {
            if (is_file(join(dir_, other))) {
                fail(ErrorKind::unsupported,
                     "{}: has {} but no model*.safetensors: memwall converts safetensors "
                     "checkpoints only",
                     dir_, other);
            }
        }
        fail(ErrorKind::bad_file,
             "{}: no model*.safetensors files (and no "
             "model.safetensors.index.json)",
             dir_);
    }

    std::map<std::string, std::string> read_index(const std::string& path) {
        const MappedFile f = MappedFile::open(path, {.use_mmap = false});
        const nlohmann::json root = parse_json_strict(f.bytes(), path, "safetensors index");
        const auto it = root.is_object() ? root.find("weight_map") : root.end();
        if (it == root.end() || !it->is_object()) {
            fail(ErrorKind::bad_file, "{}: \"weight_map\" is missing or not an object", path);
        }
        std::map<std::string, std::string> map;
        for (const auto& [tensor, file] : it->items()) {
            if (!file.is_string()) {
                fail(ErrorKind::bad_file,
                     "{}: \"weight_map\" entry \"{}\" is {}, expected a file "
                     "name",
                     path, tensor, json_type_word(file));
            }
            const std::string& name = file.get_ref<const std::string&>();
            // Shards are plain file names beside the index; anything else is not read.
            if (name.empty() || name.find('/') != name.npos || name.find('\\') != name.npos ||
                name == "." || name == "..") {
                fail(ErrorKind::bad_file,
                     "{}: \"weight_map\" entry \"{}\" names \"{}\", which is "
                     "not a file in the model folder",
                     path, tensor, name);
            }
            map[tensor] = name;
        }
        if (map.empty()) fail(ErrorKind::bad_file, "{}: \"weight_map\" is empty", path);
        return map;
    }

    void add_shard(const std::string& shard, const std::map<std::string, std::string>& weight_map) {
        const std::string path = join(dir_, shard);
        if (!is_file(path)) {
            fail(ErrorKind::io,
                 "{}: missing safetensors shard (named by "
                 "model.safetensors.index.json)",
                 path);
        }
        files_.push_back(std::make_unique<MappedFile>(MappedFile::open(path)));
        const std::span<const uint8_t> bytes = files_.back()->bytes();
        const safetensors::Header header = safetensors::parse_header(bytes, path);
        for (const safetensors::TensorInfo& info : header.tensors) {
            if (!weight_map.empty()) {
                const auto it = weight_map.find(info.name);
                if (it == weight_map.end() || it->second != shard) {
                    fail(ErrorKind::bad_file,
                         "{}: has tensor \"{}\", which model.safetensors.index.json {}", path,
                         info.name,
                         it == weight_map.end() ? std::string("does not list")
                                                : "puts in " + it->second);
                }
            }
            SourceTensor t;
            t.name = info.name;
            t.file = path;
            t.data = bytes.data() + info.offset;
            t.shape = info.shape;
            switch (info.dtype) {
                case safetensors::Dtype::F32:
                    t.dtype = SourceDtype::F32;
                    break;
                case safetensors::Dtype::F16:
                    t.dtype = SourceDtype::F16;
                    break;
                case safetensors::Dtype::BF16:
                    t.dtype = SourceDtype::BF16;
                    break;
                case safetensors::Dtype::F64:
                    t.dtype = SourceDtype::F64;
                    break;
                case safetensors::Dtype::U8:
                    t.dtype = SourceDtype::U8;
                    break;
                default:
                    fail(ErrorKind::unsupported,
                         "{}: tensor \"{}\" has dtype {}; memwall converts F32, F16, BF16 and F64 "
                         "tensors (and gpt-oss's U8 MXFP4 blocks)",
                         path, info.name, safetensors::dtype_name(info.dtype));
            }
            const auto [it, inserted] = tensors_.emplace(info.name, std::move(t));
            if (!inserted) {
                fail(ErrorKind::bad_file, "{}: tensor \"{}\" is also in {}", path, info.name,
                     it->second.file);
            }
        }
    }

    std::string dir_;
    std::vector<std::unique_ptr<MappedFile>> files_;
    std::map<std::string, SourceTensor> tensors_;
    std::set<std::string> used_;
};

// Builds the GGUF tensor list from the checkpoint, collecting every missing or misshapen tensor
// so that one error lists them all.
class TensorBuilder {
  public:
    TensorBuilder(Checkpoint& ck, OutType out) : ck_(ck), out_(out) {}

    // A tensor of `shape` (HF order, outermost first), written with GGUF dims reversed.
    void add(const std::string& gguf_name, const std::string& hf_name,
             const std::vector<uint64_t>& shape, std::vector<uint32_t> row_order = {}) {
        const SourceTensor* src = find(hf_name, shape);
        if (!src) return;
        OutputTensor t = output(gguf_name, shape);
        t.parts.push_back(*src);
        t.row_order = std::move(row_order);
        outputs_.push_back(std::move(t));
    }

    // Some rows of a source tensor, in the order given (deepseek2's attn_v_b out of kv_b_proj);
    // out_shape in HF order.
    void add_rows(const std::string& gguf_name, const std::string& hf_name,
                  const std::vector<uint64_t>& shape, const std::vector<uint64_t>& out_shape,
                  std::vector<uint32_t> row_order) {
        const SourceTensor* src = find(hf_name, shape);
        if (!src) return;
        OutputTensor t = output(gguf_name, out_shape);
        t.parts.push_back(*src);
        t.row_order = std::move(row_order);
        outputs_.push_back(std::move(t));
    }

    // A tensor computed from a source tensor while the file is written (a transpose).
    void add_computed(const std::string& gguf_name, const std::string& hf_name,
                      const std::vector<uint64_t>& shape, const std::vector<uint64_t>& out_shape,
                      std::function<void(const SourceTensor&, float*)> fn) {
        const SourceTensor* src = find(hf_name, shape);
        if (!src) return;
        OutputTensor t = output(gguf_name, out_shape);
        t.compute = [source = *src, fn = std::move(fn)](float* out) { fn(source, out); };
        outputs_.push_back(std::move(t));
    }

    // A norm weight; Gemma stores w for a norm that multiplies by 1 + w, GGUF the factor.
    void add_norm(const std::string& gguf_name, const std::string& hf_name, uint64_t n,
                  bool plus_one) {
        if (!plus_one) return add(gguf_name, hf_name, {n});
        const SourceTensor* src = find(hf_name, {n});
        if (!src) return;
        OutputTensor t = output(gguf_name, {n});
        t.values.resize(n);
        src->decode_row(0, t.values.data());
        for (float& v : t.values) v += 1.0f;
        outputs_.push_back(std::move(t));
    }

    // A vector whose elements are reordered (a Q/K bias in llama layout).
    void add_permuted_vector(const std::string& gguf_name, const std::string& hf_name, uint64_t n,
                             const std::vector<uint32_t>& order) {
        const SourceTensor* src = find(hf_name, {n});
        if (!src) return;
        std::vector<float> v(n);
        src->decode_row(0, v.data());
        OutputTensor t = output(gguf_name, {n});
        t.values.resize(n);
        for (uint64_t i = 0; i < n; ++i) t.values[i] = v[order[i]];
        outputs_.push_back(std::move(t));
    }

    // Experts stacked into one 3-D tensor: GGUF dims [in, out, n_expert].
    void add_experts(const std::string& gguf_name, const std::vector<std::string>& hf_names,
                     const std::vector<uint64_t>& shape) {
        OutputTensor t = output(gguf_name, {uint64_t(hf_names.size()), shape[0], shape[1]});
        for (const std::string& name : hf_names) {
            if (const SourceTensor* src = find(name, shape)) t.parts.push_back(*src);
        }
        if (t.parts.size() == hf_names.size()) outputs_.push_back(std::move(t));
    }

    // A tensor of `type` whose bytes fn writes from the sources (each of its shape, U8 allowed):
    // packed data repacked as it is, not re-encoded. out_shape in HF order.
    void add_raw(const std::string& gguf_name, GgmlType type,
                 const std::vector<uint64_t>& out_shape,
                 const std::vector<std::pair<std::string, std::vector<uint64_t>>>& sources,
                 std::function<void(const std::vector<SourceTensor>&, uint8_t*)> fn) {
        std::vector<SourceTensor> srcs;
        for (const auto& [name, shape] : sources) {
            if (const SourceTensor* src = find(name, shape, true)) srcs.push_back(*src);
        }
        if (srcs.size() != sources.size()) return;
        OutputTensor t = output(gguf_name, out_shape);
        t.type = type;
        t.raw = [srcs = std::move(srcs), fn = std::move(fn)](uint8_t* dst) { fn(srcs, dst); };
        outputs_.push_back(std::move(t));
    }

    void add_values(const std::string& gguf_name, std::vector<float> values) {
        OutputTensor t = output(gguf_name, {values.size()});
        t.values = std::move(values);
        outputs_.push_back(std::move(t));
    }

    void finish(const std::string& dir, const HfConfig& c) const {
        if (missing_.empty() && problems_.empty()) return;
        std::string msg =
            fmt::format("{}: the checkpoint does not match config.json ({}, {} layers):", dir,
                        c.model_type, c.n_layer);
        if (!missing_.empty()) {
            msg += fmt::format(" {} missing tensor{}:", missing_.size(),
                               missing_.size() > 1 ? "s" : "");
            for (size_t i = 0; i < missing_.size() && i < 16; ++i) msg += " " + missing_[i];
            if (missing_.size() > 16) msg += fmt::format(" ... and {} more", missing_.size() - 16);
            msg += ".";
        }
        for (size_t i = 0; i < problems_.size() && i < 16; ++i) msg += " " + problems_[i] + ".";
        throw Error(ErrorKind::bad_file, msg);
    }

    const std::vector<OutputTensor>& outputs() const { return outputs_; }

  private:
    const SourceTensor* find(const std::string& hf_name, const std::vector<uint64_t>& shape,
                             bool packed = false) {
        const SourceTensor* src = ck_.take(hf_name);
        if (!src) {
            missing_.push_back(hf_name);
            return nullptr;
        }
        if ((src->dtype == SourceDtype::U8) != packed) {
            problems_.push_back(fmt::format("{} (in {}) has dtype {}, expected {}", hf_name,
                                            fs::path(src->file).filename().string(),
                                            source_dtype_name(src->dtype),
                                            packed ? "U8 (packed blocks)" : "F32, F16 or BF16"));
            return nullptr;
        }
        if (src->shape != shape) {
            problems_.push_back(fmt::format("{} (in {}) has shape {}, expected {}", hf_name,
                                            fs::path(src->file).filename().string(),
                                            shape_text(src->shape), shape_text(shape)));
            return nullptr;
        }
        return src;
    }

    OutputTensor output(const std::string& gguf_name, const std::vector<uint64_t>& shape) const {
        OutputTensor t;
        t.name = gguf_name;
        t.ne.assign(shape.rbegin(), shape.rend());
        t.type = choose_type(out_, gguf_name, shape.size(), t.ne[0]);
        return t;
    }

    Checkpoint& ck_;
    OutType out_;
    std::vector<OutputTensor> outputs_;
    std::vector<std::string> missing_;
    std::vector<std::string> problems_;
};

// Qwen3.5's mixer of layer `layer` (convert_qwen35.cpp): a gated DeltaNet or a gated attention
// layer, with llama.cpp's transformations (A = -exp(A_log), squeezed conv kernels, value heads
// in the tiled order).
void build_qwen35_mixer(TensorBuilder& b, const HfConfig& c, const std::string& hf,
                        const std::string& gguf, uint32_t layer);

// LFM2 and LFM2-MoE (convert_lfm2.cpp): every layer and the final norm; token_embd is the
// caller's.
void build_lfm2(TensorBuilder& b, Checkpoint& ck, const HfConfig& c);

// gpt-oss (convert_gptoss.cpp): every layer and the final norm; token_embd and the output are
// the caller's.
void build_gptoss(TensorBuilder& b, Checkpoint& ck, const HfConfig& c);

// Gemma 4 (convert_gemma4.cpp): rope_freqs, the per-layer embeddings, every layer and the final
// norm; token_embd and the output are the caller's.
void build_gemma4(TensorBuilder& b, const HfConfig& c);

}  // namespace mw::convert
