// libFuzzer target: a Hugging Face config.json as `memwall plan --config` reads it: the spec from
// the JSON, the GGUF header a conversion of it would have, and the plan from that header. The
// seeds are configs of every model_type the planner knows (fuzz_make_seeds).
//
// A finding is a crash, a sanitizer report, an exception other than mw::Error, an error that does
// not name the file, or a heap use beyond the limit: a config is a few hundred bytes, but it may
// describe a model of any size the GGUF reader would accept, whose header (tensor infos) the
// planner writes, so the limit is fixed rather than proportional to the input.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "format/gguf.h"
#include "fuzz_util.h"
#include "heap_limit.h"
#include "plan/model_spec.h"
#include "plan/planner.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_hf_config";
constexpr std::string_view kName = "config.json";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::HeapLimit limit(uint64_t(256) << 20);
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const ModelSpec spec = spec_from_hf_config(text, std::string(kName));
        const std::vector<uint8_t> header = spec_gguf_header(spec, QuantRecipe::Q4_K_M);
        const gguf::GgufFile f =
            gguf::GgufFile::parse(header, std::string(kName), {.header_only = true});
        const ModelFacts facts = model_facts(f, "Q4_K_M");
        (void)plan_memory(facts, RunSettings{.n_ctx = 4096, .n_batch = 512, .n_threads = 1});
    } catch (const Error& e) {
        fuzz::check_message(kTarget, e, kName);
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "an exception other than mw::Error", e.what());
    }
    return 0;
}
