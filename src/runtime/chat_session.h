// A conversation with a model (memwall chat, the C API's mw_chat): the history is rendered with
// the chat template each turn, and only what the KV cache does not hold already is decoded
// (the previous turns are a prefix of the new prompt). When the conversation outgrows the
// context, the oldest turns are dropped (the system prompt stays).
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reply.h"
#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "runtime/speculative.h"

namespace mw {

struct ChatOptions {
    std::string system_prompt;      // empty: none
    std::string template_override;  // empty: the file's template
    SamplerParams sampling;
    int32_t n_predict = -1;  // tokens per reply; -1: until an end token or a full context
    // Called after each generated token is decoded (pacing); may be empty.
    std::function<void(Context&)> after_token;
    // More template variables (e.g. {"enable_thinking": false}): an object, or null.
    nlohmann::json template_variables;
    // Receives the reply's reasoning as it streams (false: stop); empty: it is not streamed.
    std::function<bool(std::string_view)> on_reasoning;
};

struct ChatReply {
    std::string text;  // the answer (with gpt-oss, its final channel)
    // The reasoning (gpt-oss's analysis channel, Qwen3.5's <think>, Gemma 4's thought channel):
    // split from the answer, which alone is streamed to on_text and kept in the history (the
    // templates drop earlier reasoning).
    std::string reasoning;
    int32_t n_prompt_tokens = 0;  // the whole rendered conversation
    int32_t n_reused_tokens = 0;  // of them, found in the cache
    int32_t n_generated = 0;
    int32_t n_dropped_turns = 0;  // oldest messages dropped to fit the context
    double prompt_ms = 0.0;
    double decode_ms = 0.0;
    bool cancelled = false;
    bool context_full = false;  // the reply stopped at a full context
};

class ChatSession {
  public:
    // The context's sequence 0 holds the conversation.
    ChatSession(const LoadedModel& model, Context& ctx, ChatOptions options);

    // Adds the user's message and generates the reply, streaming its text to on_text (which
    // may return false to stop the reply). Throws invalid_argument when the message alone
    // does not fit the context.
    ChatReply send(std::string_view user, const std::function<bool(std::string_view)>& on_text);
    // Stops the reply being generated (async-signal-safe: sets a flag).
    void cancel() { cancel_.store(true); }
    // Forgets the conversation (the system prompt stays).
    void reset();
    const nlohmann::json& messages() const { return messages_; }
    // Replies decode speculatively with `spec` (on this session's context; null: off). The
    // text is what plain sampling gives (greedy: the same text).
    void set_speculator(Speculator* spec) { spec_ = spec; }

  private:
    std::vector<int32_t> render(const nlohmann::json& messages);

    const LoadedModel& model_;
    Context& ctx_;
    ChatOptions opt_;
    std::function<std::string(const nlohmann::json&)> render_text_;
    chat::ReplyFormat reply_format_;                     // the markers of the template's replies
    std::string rendered_;                               // the last prompt rendered
    nlohmann::json messages_ = nlohmann::json::array();  // user and assistant turns
    Sampler sampler_;
    Speculator* spec_ = nullptr;
    std::atomic<bool> cancel_{false};
    static_assert(std::atomic<bool>::is_always_lock_free);
};

}  // namespace mw
