// gpt-oss's replies in OpenAI's harmony format, split into what a client shows: the reasoning
// (the analysis channel), the answer (the final channel) and tool calls (a message addressed
// to a recipient, e.g. `to=functions.get_weather`).
//
// After the prompt's "<|start|>assistant" the model writes messages such as
//
//   <|channel|>analysis<|message|>Need the weather.<|end|>
//   <|start|>assistant<|channel|>final<|message|>It is sunny.        (then <|return|>)
//   <|start|>assistant to=functions.get_weather<|channel|>commentary
//   json<|message|>{"city":"Paris"}
//   <|start|>assistant<|channel|>commentary to=functions.get_weather
//   <|constrain|>json<|message|>{...}
//                                                                     (then <|call|>)
//
// with the special tokens rendered as their text (TokenTextStream with special = true). The
// parser is fed that text in pieces as it streams and returns what each piece completes, never
// a part of a marker. A commentary message without a recipient (a preamble to tool calls) is
// answer text, as in OpenAI's API. Text that is not harmony at all is passed on as the answer.
#pragma once

#include <string>
#include <string_view>

#include "chat/reply.h"

namespace mw::chat {

// Whether a chat template writes harmony (gpt-oss's): its replies need HarmonyParser.
bool is_harmony_template(std::string_view template_text);

// A tool call's name is "get_weather" for functions.get_weather, else the recipient; its
// arguments the message as written (JSON for functions).
class HarmonyParser : public ReplyParser {
  public:
    // The reply's next piece of text; returns what is complete.
    ReplyDelta push(std::string_view text) override;
    // The end of the reply (an end token, a limit): flushes what is held back, closing an
    // unterminated message (a tool call ended by <|call|>, which stops generation).
    ReplyDelta finish() override;

  private:
    enum class State { header, body, plain };
    void parse_header(std::string_view header);
    void close_message(ReplyDelta& out);
    void emit_body(std::string_view text, ReplyDelta& out);

    State state_ = State::header;
    std::string buf_;  // text not yet consumed (a header, or a possible marker's start)
    std::string channel_;
    std::string recipient_;
    std::string call_args_;  // the body of a message to a recipient
};

}  // namespace mw::chat
