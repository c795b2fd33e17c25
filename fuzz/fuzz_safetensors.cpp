// libFuzzer target: the header of a .safetensors file, as `memwall convert` reads each shard.
// The input is the whole file (8-byte length, JSON header, tensor data). The seeds are small valid
// files of every dtype, with metadata, several tensors and an empty one (fuzz_make_seeds).
//
// A finding is a crash, a sanitizer report, an exception other than mw::Error, an error that does
// not name the file, a heap use beyond the limit, or an accepted header whose tensors do not lie
// inside the file exactly as their dtype and shape say.
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>

#include "format/safetensors.h"
#include "fuzz_util.h"
#include "heap_limit.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_safetensors";
constexpr std::string_view kName = "model.safetensors";

void check_accepted(const safetensors::Header& h, size_t file_size) {
    uint64_t end = h.data_offset;
    for (const safetensors::TensorInfo& t : h.tensors) {
        if (t.offset != end) fuzz::violated(kTarget, "tensor data not contiguous:", t.name);
        if (t.n_bytes != t.n_elements * safetensors::dtype_size(t.dtype)) {
            fuzz::violated(kTarget, "tensor byte count does not match its shape:", t.name);
        }
        if (t.offset > file_size || t.n_bytes > file_size - t.offset) {
            fuzz::violated(kTarget, "tensor data outside the file:", t.name);
        }
        end = t.offset + t.n_bytes;
    }
    if (end != file_size) fuzz::violated(kTarget, "tensor data does not end the file", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The JSON tree of a header costs a small multiple of its bytes; nothing may cost more.
    fuzz::HeapLimit limit(uint64_t(64) << 20);
    try {
        const safetensors::Header h =
            safetensors::parse_header(std::span<const uint8_t>(data, size), std::string(kName));
        check_accepted(h, size);
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "an exception other than mw::Error", e.what());
    }
    return 0;
}
