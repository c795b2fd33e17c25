// A model's reply split into what a client shows: the reasoning, the answer and tool calls.
// Which markers a reply uses follows from the chat template that wrote its prompt:
//   harmony  gpt-oss's channels (chat/harmony.h);
//   think    <think>...</think> reasoning (Qwen3, Qwen3.5, SmolLM3, LFM2.5, DeepSeek-R1) and
//            <tool_call>...</tool_call> calls, as JSON (Hermes, Qwen3) or as Qwen3.5's
//            <function=NAME><parameter=P>VALUE</parameter></function>;
//   gemma4   Gemma 4's <|channel>thought ...<channel|> reasoning and
//            <|tool_call>call:NAME{key:value,...}<tool_call|> calls;
//   plain    everything is the answer.
// The parsers take the reply's text (special tokens rendered as their text) in pieces as it
// streams and return what each piece completes, never part of a marker.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mw::chat {

struct ToolCall {
    std::string name;       // the function's name
    std::string arguments;  // JSON text (as the model wrote it, or converted to JSON)
};

struct ReplyDelta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;  // complete calls
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
    void append(const ReplyDelta& d) {
        reasoning += d.reasoning;
        content += d.content;
        tool_calls.insert(tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    }
};

enum class ReplyFormat { plain, harmony, think, gemma4 };

// The format a template's replies take, from the markers the template writes.
ReplyFormat reply_format_of(std::string_view template_text);
const char* reply_format_name(ReplyFormat f);
// Whether the template renders a request's `tools` (reads a `tools` variable).
bool template_takes_tools(std::string_view template_text);

class ReplyParser {
  public:
    virtual ~ReplyParser() = default;
    // The reply's next piece of text; returns what is complete.
    virtual ReplyDelta push(std::string_view text) = 0;
    // The end of the reply (an end token, a limit): flushes what is held back.
    virtual ReplyDelta finish() = 0;
};

// The (function, parameter) pairs whose JSON schema type is a string, from a request's `tools`.
// Qwen3.5 writes parameter values bare: without the schema, "75001" and 75001 look alike.
using StringParams = std::set<std::pair<std::string, std::string>>;
StringParams string_params_of(const nlohmann::ordered_json& tools);

// A parser for a reply to `prompt` (the rendered prompt: a prompt that ends inside an open
// reasoning block, as Qwen3.5's "<think>\n" does, starts the reply there). Null for plain.
// `strings`: the parameters to keep as strings.
std::unique_ptr<ReplyParser> make_reply_parser(ReplyFormat format, std::string_view prompt,
                                               StringParams strings = {});

// The whole reply at once.
ReplyDelta parse_reply(ReplyFormat format, std::string_view prompt, std::string_view reply,
                       StringParams strings = {});

}  // namespace mw::chat
