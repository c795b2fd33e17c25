// `memwall verify`: is a model file on disk whole and sound, before anything runs it? The GGUF
// structure (the validating reader), the file's size against its tensor table (a truncated
// download says where it ends and how much is missing), every tensor's bounds and type, every
// value decoded through its type's row of the type table (non-finite floats and scales), the
// model and vocabulary as the loader binds them, and optionally the full-file SHA-256.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mw {

struct VerifyOptions {
    std::string sha256;  // expected (64 hex digits); empty: the file is not hashed
    int n_threads = 0;   // 0: default_thread_count()
    // Now and then during the long passes: bytes done of bytes to do, and which pass.
    std::function<void(uint64_t done, uint64_t total, const char* pass)> progress;
};

struct VerifyCheck {
    std::string name;    // structure, size, tensors, values, model, sha256
    std::string status;  // "pass", "fail", "skip"
    std::string detail;  // one sentence: what was found (the field and value when it fails)
};

// A tensor with values that are not finite.
struct NonFiniteTensor {
    std::string name;
    std::string type;
    uint64_t values = 0;  // non-finite values decoded
    uint64_t blocks = 0;  // blocks holding them (= values for F32, F16, BF16)
    uint64_t first_element = 0;
    uint64_t first_offset = 0;  // file offset of the block of the first
};

// A tensor with blocks that no writer of its format produces (TypeTraits::check_block).
struct InvalidBlocksTensor {
    std::string name;
    std::string type;
    uint64_t blocks = 0;
    uint64_t first_block = 0;
    uint64_t first_offset = 0;  // file offset of that block
    std::string problem;        // what is wrong with it
};

struct VerifyReport {
    std::string path;
    uint64_t file_bytes = 0;
    bool ok = false;
    std::vector<VerifyCheck> checks;
    uint32_t version = 0;
    uint64_t n_metadata = 0;
    uint64_t n_tensors = 0;
    uint64_t data_offset = 0;
    uint64_t data_end = 0;         // where the tensor table says the data ends
    uint64_t missing_bytes = 0;    // data_end - file_bytes, when truncated
    uint64_t trailing_bytes = 0;   // file_bytes - data_end, when longer
    uint64_t tensors_cut = 0;      // tensors not wholly in the file
    std::string first_cut_tensor;  // the first of them by offset
    uint64_t tensors_checked = 0;  // through the value pass
    uint64_t values_checked = 0;
    std::vector<NonFiniteTensor> non_finite;
    std::vector<InvalidBlocksTensor> invalid_blocks;
    std::vector<std::string> unchecked;  // "IQ2_XXS x12": types memwall cannot decode
    std::string sha256;                  // computed, when asked
    std::string sha256_expected;
};

// Never throws for what is wrong with the file (that is the report); throws mw::Error when the
// file cannot be opened or a requested SHA-256 is not 64 hex digits.
VerifyReport verify_file(const std::string& path, const VerifyOptions& options);

std::string verify_report_to_json(const VerifyReport& report);

}  // namespace mw
