#include "runtime/verify.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/error.h"
#include "format/gguf.h"
#include "model/model.h"
#include "net/sha256.h"
#include "net/url.h"
#include "sys/mapped_file.h"
#include "sys/thread_pool.h"
#include "tensor/types.h"
#include "vocab/vocab.h"

namespace mw {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kChunkElements = int64_t(1) << 20;  // one work item of the value pass
constexpr int64_t kDecodeElements = 4096;             // decoded at once into a thread's buffer

void add(VerifyReport& r, std::string name, std::string status, std::string detail) {
    r.checks.push_back({std::move(name), std::move(status), std::move(detail)});
}

// The tensors wholly inside the file, in file order, cut into chunks of whole blocks.
struct Chunk {
    size_t tensor;        // index into the tensors checked
    int64_t first_block;  // of the tensor
    int64_t n_blocks;
};

struct ChunkResult {
    uint64_t values = 0;
    uint64_t blocks = 0;
    uint64_t first_element = UINT64_MAX;
    uint64_t invalid_blocks = 0;  // TypeTraits::check_block found a problem
    uint64_t first_invalid = UINT64_MAX;
    const char* problem = nullptr;  // of the first
};

struct Checked {
    const gguf::TensorInfo* info;
    const TypeTraits* traits;
};

// Decodes every block of `chunk` through its type's to_float and counts what is not finite. The
// bytes are copied to an aligned buffer first: a file's data may sit at any offset the file's
// alignment allows, and the decoders read typed values.
ChunkResult check_chunk(const Chunk& chunk, const Checked& t, std::vector<uint8_t>& raw,
                        std::vector<float>& values) {
    const TypeTraits& tr = *t.traits;
    const int64_t bs = tr.block_size;
    const int64_t blocks_per_piece = std::max<int64_t>(1, kDecodeElements / bs);
    ChunkResult r;
    for (int64_t b = 0; b < chunk.n_blocks; b += blocks_per_piece) {
        const int64_t nb = std::min(blocks_per_piece, chunk.n_blocks - b);
        const int64_t first_block = chunk.first_block + b;
        const size_t bytes = size_t(nb) * tr.type_size;
        std::memcpy(raw.data(), t.info->data + size_t(first_block) * tr.type_size, bytes);
        tr.to_float(raw.data(), values.data(), nb * bs);
        for (int64_t k = 0; k < nb && tr.check_block; ++k) {
            const char* problem = tr.check_block(raw.data() + size_t(k) * tr.type_size);
            if (!problem) continue;
            if (r.invalid_blocks++ == 0) {
                r.first_invalid = uint64_t(first_block + k);
                r.problem = problem;
            }
        }
        for (int64_t k = 0; k < nb; ++k) {
            uint64_t bad = 0;
            for (int64_t i = 0; i < bs; ++i) {
                if (!std::isfinite(values[size_t(k * bs + i)])) {
                    if (bad++ == 0) {
                        r.first_element =
                            std::min(r.first_element, uint64_t(first_block + k) * bs + uint64_t(i));
                    }
                }
            }
            r.values += bad;
            r.blocks += bad ? 1 : 0;
        }
    }
    return r;
}

std::string type_name(uint32_t type) {
    const auto layout = ggml_layout(type);
    return layout ? std::string(layout->name) : fmt::format("type {}", type);
}

std::string count_list(const std::map<std::string, int>& counts) {
    std::string s;
    for (const auto& [name, n] : counts)
        s += fmt::format("{}{} x{}", s.empty() ? "" : ", ", name, n);
    return s;
}

class Verifier {
  public:
    Verifier(const std::string& path, const VerifyOptions& o) : path_(path), o_(o) {}
    VerifyReport run();

  private:
    bool check_structure();
    void check_size();
    void check_tensors();
    void check_values();
    std::string invalid_blocks_sentence() const;
    void check_model();
    void report(uint64_t done, uint64_t total, const char* pass);

    const std::string& path_;
    const VerifyOptions& o_;
    VerifyReport r_;
    MappedFile file_;
    gguf::GgufFile header_;
    std::optional<gguf::GgufFile> full_;  // with tensor data: when the file is whole
    Clock::time_point last_report_{};
};

void Verifier::report(uint64_t done, uint64_t total, const char* pass) {
    if (!o_.progress) return;
    const auto now = Clock::now();
    if (done < total && now - last_report_ < std::chrono::milliseconds(200)) return;
    last_report_ = now;
    o_.progress(done, total, pass);
}

bool Verifier::check_structure() {
    try {
        header_ = gguf::GgufFile::parse(file_.bytes(), path_, {.header_only = true});
    } catch (const Error& e) {
        add(r_, "structure", "fail", e.what());
        return false;
    }
    r_.version = header_.version();
    r_.n_metadata = header_.metadata().size();
    r_.n_tensors = header_.tensors().size();
    r_.data_offset = header_.data_offset();
    r_.data_end = header_.data_end();
    add(r_, "structure", "pass",
        fmt::format("GGUF v{}, {} metadata keys, {} tensors, tensor data from byte {}", r_.version,
                    r_.n_metadata, r_.n_tensors, r_.data_offset));
    return true;
}

void Verifier::check_size() {
    const uint64_t size = r_.file_bytes;
    if (size >= r_.data_end) {
        r_.trailing_bytes = size - r_.data_end;
        add(r_, "size", "pass",
            r_.trailing_bytes == 0
                ? fmt::format("the tensor table ends at byte {}, where the file ends", r_.data_end)
                : fmt::format("the tensor table ends at byte {}; {} more bytes follow (padding "
                              "or data no tensor claims)",
                              r_.data_end, r_.trailing_bytes));
        return;
    }
    r_.missing_bytes = r_.data_end - size;
    const gguf::TensorInfo* first = nullptr;
    for (const gguf::TensorInfo& t : header_.tensors()) {
        if (header_.data_offset() + t.offset + t.n_bytes <= size) continue;
        ++r_.tensors_cut;
        if (!first || t.offset < first->offset) first = &t;
    }
    if (first) r_.first_cut_tensor = std::string(first->name);
    const uint64_t begin = first ? header_.data_offset() + first->offset : size;
    add(r_, "size", "fail",
        fmt::format("{}: truncated: {} bytes missing: the file has {} bytes, its tensor table "
                    "needs {}; tensor \"{}\" data [{}, {}) lies outside the file{} (the file "
                    "ends {}), and {} tensor{} in all {} not wholly there (or an offset is wrong)",
                    path_, r_.missing_bytes, size, r_.data_end, r_.first_cut_tensor, begin,
                    first ? begin + first->n_bytes : size, begin < size ? " in part" : "",
                    begin < size ? fmt::format("{} bytes into it", size - begin)
                                 : fmt::format("{} bytes before it", size - std::min(size, begin)),
                    r_.tensors_cut, r_.tensors_cut == 1 ? "" : "s",
                    r_.tensors_cut == 1 ? "is" : "are"));
}

void Verifier::check_tensors() {
    if (r_.missing_bytes > 0) {
        add(r_, "tensors", "skip", "the file is truncated");
        return;
    }
    try {
        full_ = gguf::GgufFile::parse(file_.bytes(), path_);
    } catch (const Error& e) {
        add(r_, "tensors", "fail", e.what());
        return;
    }
    std::map<std::string, int> types, unknown;
    for (const gguf::TensorInfo& t : full_->tensors()) {
        const std::string name = type_name(t.type);
        types[name]++;
        const TypeTraits* tr = type_traits(t.type);
        if (!tr || !tr->to_float) unknown[name]++;
    }
    for (const auto& [name, n] : unknown) r_.unchecked.push_back(fmt::format("{} x{}", name, n));
    add(r_, "tensors", "pass",
        fmt::format("{} tensors inside the file, without overlaps: {}{}", full_->tensors().size(),
                    count_list(types),
                    unknown.empty() ? ""
                                    : fmt::format("; memwall cannot decode {} (their values are "
                                                  "not checked)",
                                                  count_list(unknown))));
}

void Verifier::check_values() {
    if (!full_) {
        add(r_, "values", "skip",
            r_.missing_bytes > 0 ? "the file is truncated" : "the tensor table is unusable");
        return;
    }
    std::vector<Checked> tensors;
    std::vector<Chunk> chunks;
    uint64_t total_bytes = 0;
    for (const gguf::TensorInfo& t : full_->tensors()) {
        const TypeTraits* tr = type_traits(t.type);
        if (!tr || !tr->to_float) continue;
        const int64_t n_blocks = int64_t(t.n_elements / tr->block_size);
        const int64_t per_chunk = std::max<int64_t>(1, kChunkElements / tr->block_size);
        for (int64_t b = 0; b < n_blocks; b += per_chunk) {
            chunks.push_back({tensors.size(), b, std::min(per_chunk, n_blocks - b)});
        }
        tensors.push_back({&t, tr});
        total_bytes += t.n_bytes;
    }
    std::vector<ChunkResult> results(chunks.size());
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> done_bytes{0};
    ThreadPool pool(o_.n_threads > 0 ? o_.n_threads : default_thread_count());
    pool.for_each_thread([&](int ith, int) {
        std::vector<uint8_t> raw(size_t(kDecodeElements) * 64);  // any type's blocks
        std::vector<float> values(size_t(kDecodeElements) + 256);
        for (size_t c = next++; c < chunks.size(); c = next++) {
            const Checked& t = tensors[chunks[c].tensor];
            results[c] = check_chunk(chunks[c], t, raw, values);
            done_bytes += uint64_t(chunks[c].n_blocks) * t.traits->type_size;
            if (ith == 0) report(done_bytes, total_bytes, "values");
        }
    });
    report(total_bytes, total_bytes, "values");

    // Per tensor, in file order.
    std::vector<NonFiniteTensor> bad(tensors.size());
    std::vector<InvalidBlocksTensor> invalid(tensors.size());
    for (size_t c = 0; c < chunks.size(); ++c) {
        const ChunkResult& cr = results[c];
        NonFiniteTensor& b = bad[chunks[c].tensor];
        b.values += cr.values;
        b.blocks += cr.blocks;
        if (cr.values && b.values == cr.values) b.first_element = cr.first_element;
        InvalidBlocksTensor& v = invalid[chunks[c].tensor];
        v.blocks += cr.invalid_blocks;
        if (cr.invalid_blocks && v.blocks == cr.invalid_blocks) {
            v.first_block = cr.first_invalid;
            v.problem = cr.problem;
        }
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Checked& t = tensors[i];
        if (invalid[i].blocks) {
            invalid[i].name = std::string(t.info->name);
            invalid[i].type = t.traits->name;
            invalid[i].first_offset = full_->data_offset() + t.info->offset +
                                      invalid[i].first_block * t.traits->type_size;
            r_.invalid_blocks.push_back(invalid[i]);
        }
        r_.values_checked += t.info->n_elements;
        if (bad[i].values == 0) continue;
        bad[i].name = std::string(t.info->name);
        bad[i].type = t.traits->name;
        bad[i].first_offset = full_->data_offset() + t.info->offset +
                              bad[i].first_element / t.traits->block_size * t.traits->type_size;
        r_.non_finite.push_back(bad[i]);
    }
    r_.tensors_checked = tensors.size();
    if (r_.non_finite.empty() && r_.invalid_blocks.empty()) {
        add(r_, "values", "pass",
            fmt::format("{} values of {} tensors decoded, all finite", r_.values_checked,
                        r_.tensors_checked));
        return;
    }
    if (r_.non_finite.empty()) {
        add(r_, "values", "fail", fmt::format("{}: {}", path_, invalid_blocks_sentence()));
        return;
    }
    const NonFiniteTensor& b = r_.non_finite.front();
    const TypeTraits* tr = type_traits(*ggml_type_from_name(b.type));
    const std::string where =
        tr && tr->is_quantized
            ? fmt::format(
                  "{} values in {} blocks, the first block at byte {} (block {}: a scale "
                  "that is not finite)",
                  b.values, b.blocks, b.first_offset, b.first_element / tr->block_size)
            : fmt::format("{} values, the first at element {} (byte {})", b.values, b.first_element,
                          b.first_offset);
    add(r_, "values", "fail",
        fmt::format("{}: {} tensor{} with values that are not finite (inf or NaN); tensor \"{}\" "
                    "({}): {}{}",
                    path_, r_.non_finite.size(), r_.non_finite.size() == 1 ? "" : "s", b.name,
                    b.type, where,
                    r_.invalid_blocks.empty() ? "" : "; and " + invalid_blocks_sentence()));
}

std::string Verifier::invalid_blocks_sentence() const {
    const InvalidBlocksTensor& v = r_.invalid_blocks.front();
    return fmt::format(
        "{} tensor{} with blocks no writer of the format produces; tensor \"{}\" ({}): {} "
        "block{}, the first at byte {} (block {}: {})",
        r_.invalid_blocks.size(), r_.invalid_blocks.size() == 1 ? "" : "s", v.name, v.type,
        v.blocks, v.blocks == 1 ? "" : "s", v.first_offset, v.first_block, v.problem);
}

void Verifier::check_model() {
    if (!full_) {
        add(r_, "model", "skip",
            r_.missing_bytes > 0 ? "the file is truncated" : "the tensor table is unusable");
        return;
    }
    try {
        // In the loader's order, so that the first problem is the one `run` would report.
        const Vocab vocab = Vocab::from_gguf(*full_);
        const Model model = Model::bind(*full_);
        if (vocab.n_tokens() != int32_t(model.hp.n_vocab)) {
            fail(ErrorKind::bad_file,
                 "{}: the vocabulary has {} tokens but token_embd.weight has {} rows", path_,
                 vocab.n_tokens(), model.hp.n_vocab);
        }
        add(r_, "model", "pass",
            fmt::format("{}: {} layers, {} embedding, vocabulary of {} tokens; memwall loads it",
                        model.hp.arch, model.hp.n_layer, model.hp.n_embd, vocab.n_tokens()));
    } catch (const Error& e) {
        add(r_, "model", "fail", e.what());
    }
}

VerifyReport Verifier::run() {
    r_.path = path_;
    std::string expected = o_.sha256;
    for (char& c : expected) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (!expected.empty() && !net::is_sha256_hex(expected)) {
        fail(ErrorKind::invalid_argument, "--sha256 {}: not a SHA-256 (64 hex digits)", o_.sha256);
    }
    r_.sha256_expected = expected;
    file_ = MappedFile::open(path_);
    r_.file_bytes = file_.file_size();

    // The hash reads the file on its own thread while the checks decode it.
    std::atomic<uint64_t> hashed{0};
    std::atomic<bool> hash_done{false};
    std::string hash, hash_error;
    std::jthread hasher;  // joined however this function ends
    if (!expected.empty()) {
        hasher = std::jthread([&] {
            try {
                hash = net::sha256_file(path_, UINT64_MAX, [&](uint64_t d) { hashed = d; });
            } catch (const Error& e) {
                hash_error = e.what();
            }
            hash_done = true;
        });
    }

    if (check_structure()) {
        check_size();
        check_tensors();
        check_values();
        check_model();
    } else {
        for (const char* name : {"size", "tensors", "values", "model"}) {
            add(r_, name, "skip", "the GGUF header is unusable");
        }
    }

    if (hasher.joinable()) {
        while (!hash_done) {
            report(hashed, r_.file_bytes, "sha256");
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        hasher.join();
        report(r_.file_bytes, r_.file_bytes, "sha256");
        r_.sha256 = hash;
        if (!hash_error.empty()) {
            add(r_, "sha256", "fail", hash_error);
        } else if (hash == expected) {
            add(r_, "sha256", "pass", hash);
        } else {
            add(r_, "sha256", "fail",
                fmt::format("{}: SHA-256 mismatch: the file has {}, expected {}", path_, hash,
                            expected));
        }
    } else {
        add(r_, "sha256", "skip", "no SHA-256 given to compare with");
    }
    r_.ok = std::none_of(r_.checks.begin(), r_.checks.end(),
                         [](const VerifyCheck& c) { return c.status == "fail"; });
    return r_;
}

}  // namespace

VerifyReport verify_file(const std::string& path, const VerifyOptions& options) {
    Verifier v(path, options);
    return v.run();
}

std::string verify_report_to_json(const VerifyReport& r) {
    using nlohmann::json;
    json checks = json::array(), non_finite = json::array(), invalid = json::array();
    for (const InvalidBlocksTensor& t : r.invalid_blocks) {
        invalid.push_back({{"name", t.name},
                           {"type", t.type},
                           {"blocks", t.blocks},
                           {"first_block", t.first_block},
                           {"first_offset", t.first_offset},
                           {"problem", t.problem}});
    }
    for (const VerifyCheck& c : r.checks) {
        checks.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}});
    }
    for (const NonFiniteTensor& t : r.non_finite) {
        non_finite.push_back({{"name", t.name},
                              {"type", t.type},
                              {"values", t.values},
                              {"blocks", t.blocks},
                              {"first_element", t.first_element},
                              {"first_offset", t.first_offset}});
    }
    const json j = {{"file", r.path},
                    {"file_bytes", r.file_bytes},
                    {"ok", r.ok},
                    {"checks", checks},
                    {"version", r.version},
                    {"n_metadata", r.n_metadata},
                    {"n_tensors", r.n_tensors},
                    {"data_offset", r.data_offset},
                    {"data_end", r.data_end},
                    {"missing_bytes", r.missing_bytes},
                    {"trailing_bytes", r.trailing_bytes},
                    {"tensors_cut", r.tensors_cut},
                    {"first_cut_tensor", r.first_cut_tensor},
                    {"tensors_checked", r.tensors_checked},
                    {"values_checked", r.values_checked},
                    {"non_finite", non_finite},
                    {"invalid_blocks", invalid},
                    {"unchecked_types", r.unchecked},
                    {"sha256", r.sha256},
                    {"sha256_expected", r.sha256_expected}};
    return j.dump(1);
}

}  // namespace mw
