// OpenAI's request and response shapes for /v1/chat/completions and /v1/completions: a request
// body is checked field by field (types, ranges, fields memwall does not support), and every
// problem is an ApiError with the status and the message the client gets, in OpenAI's error JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/harmony.h"
#include "model/sampler.h"
#include "server/scheduler.h"

namespace mw::server {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";  // or "server_error", "authentication_error"
    std::string param;                           // the field at fault, if any
    std::string code;
};

// {"error": {"message", "type", "param", "code"}}
nlohmann::json error_json(const ApiError& e);

struct CompletionRequest {
    bool chat = false;
    nlohmann::ordered_json messages;  // chat: the conversation, checked, keys in the client's order
    std::string prompt;               // completions
    std::string model;
    int32_t max_tokens = -1;  // -1: not given
    SamplerParams sampling;
    bool seed_given = false;
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;
    bool ignore_eos = false;
    // llama-server's "speculative.n_max", "speculative.n_min", "speculative.p_min": -1 not given.
    int32_t draft_max = -1;
    int32_t draft_min = -1;
    float draft_p_min = -1.0f;
    // More variables for the chat template: "chat_template_kwargs" (e.g. enable_thinking for
    // Qwen3.5, SmolLM3 and Gemma 4) and OpenAI's "reasoning_effort" (gpt-oss reads it).
    nlohmann::json template_variables = nlohmann::json::object();
    // The functions the model may call ("tools", checked); null: none, or tool_choice "none".
    // Their keys keep the client's order: the template prints the schemas with tojson.
    nlohmann::ordered_json tools;
};

// The limits a request is checked against.
struct RequestLimits {
    int32_t max_tokens = -1;  // the server's limit per request (-1: none)
    uint32_t n_vocab = 0;
    int32_t draft_max = 0;  // the server's --draft-max (0: it does not speculate)
};

// Parses and checks a request body; throws ApiError (400 with the parse position for malformed
// JSON, naming the field for a wrong type or value, listing unsupported fields). Sampling fields
// not given keep `defaults`.
CompletionRequest parse_completion_request(std::string_view body, bool chat,
                                           const SamplerParams& defaults,
                                           const RequestLimits& limits);

// Responses.
nlohmann::json usage_json(const Usage& u);
// llama-server's "timings" (an extension OpenAI clients ignore): prompt and generation counts
// and milliseconds, and with speculative decoding draft_n and draft_n_accepted.
nlohmann::json timings_json(const Usage& u);
nlohmann::json chat_response(const std::string& id, int64_t created, const std::string& model,
                             const std::string& text, Finish finish, const Usage& usage);
// A streamed chunk: the role in the first one, text in the middle ones, the finish reason in
// the last.
nlohmann::json chat_chunk(const std::string& id, int64_t created, const std::string& model,
                          const std::string* text, bool with_role, Finish finish);
// A harmony reply (chat/harmony.h) split as llama-server does: the analysis channel in
// "reasoning_content", the final one in "content", calls in "tool_calls" (finish_reason
// "tool_calls"). In a chunk, `delta` is what the stream completed since the last one; tool calls
// are numbered from `first_call`.
nlohmann::json chat_response_split(const std::string& id, int64_t created, const std::string& model,
                                   const chat::ReplyDelta& reply, Finish finish,
                                   const Usage& usage);
nlohmann::json chat_chunk_split(const std::string& id, int64_t created, const std::string& model,
                                const chat::ReplyDelta& delta, size_t first_call);
nlohmann::json completion_response(const std::string& id, int64_t created, const std::string& model,
                                   const std::string& text, Finish finish, const Usage& usage);
nlohmann::json completion_chunk(const std::string& id, int64_t created, const std::string& model,
                                const std::string& text, Finish finish);
// The final chunk of a stream with stream_options.include_usage.
nlohmann::json usage_chunk(const std::string& id, int64_t created, const std::string& model,
                           bool chat, const Usage& usage);

}  // namespace mw::server
