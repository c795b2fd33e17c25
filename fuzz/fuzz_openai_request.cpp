// libFuzzer target: a request body as memwall serve reads it for /v1/chat/completions and
// /v1/completions (server/openai.h), then the replies the server would write from it.
//
// A finding is a crash, a sanitizer report, an exception other than server::ApiError, an error
// that is not a 4xx with a message (a client's bad body is never the server's fault), an error
// or request that cannot be written back as JSON (every byte of a body may come back in a
// message or a reply), or a heap use beyond the limit.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "heap_limit.h"
#include "server/openai.h"

namespace {

using namespace mw;
constexpr const char* kTarget = "fuzz_openai_request";

void check(std::string_view body, bool chat) {
    server::RequestLimits limits;
    limits.max_tokens = 4096;
    limits.n_vocab = 32000;
    try {
        const server::CompletionRequest r =
            server::parse_completion_request(body, chat, SamplerParams{}, limits);
        if (chat && !r.messages.is_array())
            fuzz::violated(kTarget, "chat request without messages");
        (void)r.messages.dump();
        (void)server::completion_chunk("id", 0, r.model, r.prompt, server::Finish::stop).dump();
        for (const std::string& s : r.stop) {
            if (s.empty()) fuzz::violated(kTarget, "an empty stop string was accepted");
        }
    } catch (const server::ApiError& e) {
        if (e.status < 400 || e.status > 499) {
            fuzz::violated(kTarget, "a bad body answered with a status other than 4xx:",
                           std::to_string(e.status) + " " + e.message);
        }
        if (e.message.empty()) fuzz::violated(kTarget, "an error without a message");
        (void)server::error_json(e).dump();
    } catch (const std::exception& e) {
        fuzz::violated(kTarget, "an exception other than ApiError", e.what());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::HeapLimit limit(uint64_t(256) << 20);
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    check(body, true);
    check(body, false);
    return 0;
}
