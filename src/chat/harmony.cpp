#include "chat/harmony.h"

#include <algorithm>
#include <array>

namespace mw::chat {
namespace {

constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kChannel = "<|channel|>";
// What ends a message's body. <|start|> without an end before it: the model skipped the end.
constexpr std::array<std::string_view, 4> kBodyEnds = {"<|end|>", "<|return|>", "<|call|>",
                                                       "<|start|>"};
// A header is a role, a recipient, a channel and a content type: a few dozen bytes. Longer
// without <|message|>, the reply is not harmony and is passed on as it is.
constexpr size_t kMaxHeader = 512;

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

// The length of the longest end of `text` that begins some marker of kBodyEnds (held back: the
// rest of the marker may come with the next piece).
size_t partial_marker(std::string_view text) {
    const size_t from = text.size() > 9 ? text.size() - 9 : 0;
    for (size_t p = from; p < text.size(); ++p) {
        if (text[p] != '<') continue;
        const std::string_view tail = text.substr(p);
        for (std::string_view m : kBodyEnds)
            if (m.size() > tail.size() && m.substr(0, tail.size()) == tail) return tail.size();
    }
    return 0;
}

}  // namespace

bool is_harmony_template(std::string_view text) {
    return text.find("<|start|>") != std::string_view::npos &&
           text.find(kChannel) != std::string_view::npos &&
           text.find(kMessage) != std::string_view::npos;
}

void HarmonyParser::parse_header(std::string_view h) {
    channel_.clear();
    recipient_.clear();
    if (size_t p = h.find(kChannel); p != std::string_view::npos) {
        p += kChannel.size();
        while (p < h.size() && is_word_char(h[p])) channel_ += h[p++];
    }
    // " to=functions.get_weather", before or after the channel.
    for (size_t p = h.find("to="); p != std::string_view::npos; p = h.find("to=", p + 1)) {
        if (p > 0 && is_word_char(h[p - 1])) continue;
        p += 3;
        while (p < h.size() && h[p] != ' ' && h[p] != '\n' && h[p] != '<') recipient_ += h[p++];
        break;
    }
}

void HarmonyParser::emit_body(std::string_view text, ReplyDelta& out) {
    if (!recipient_.empty()) {
        call_args_ += text;
    } else if (channel_ == "analysis") {
        out.reasoning += text;
    } else {
        out.content += text;  // final, a commentary preamble, or no channel
    }
}

void HarmonyParser::close_message(ReplyDelta& out) {
    if (!recipient_.empty()) {
        constexpr std::string_view kFunctions = "functions.";
        std::string name = recipient_;
        if (std::string_view(name).substr(0, kFunctions.size()) == kFunctions)
            name.erase(0, kFunctions.size());
        out.tool_calls.push_back({std::move(name), std::move(call_args_)});
    }
    call_args_.clear();
    channel_.clear();
    recipient_.clear();
}

ReplyDelta HarmonyParser::push(std::string_view text) {
    ReplyDelta out;
    buf_ += text;
    for (;;) {
        if (state_ == State::plain) {
            out.content += buf_;
            buf_.clear();
            return out;
        }
        if (state_ == State::header) {
            // The bound holds however the text is cut: a header found past it is plain text
            // as well, as it would be had it arrived in small pieces.
            const size_t p = buf_.find(kMessage);
            if (p == std::string::npos || p > kMaxHeader) {
                // Not found yet: a marker could still begin within the bound.
                if (p == std::string::npos && buf_.size() < kMaxHeader + kMessage.size())
                    return out;
                state_ = State::plain;
                continue;
            }
            parse_header(std::string_view(buf_).substr(0, p));
            buf_.erase(0, p + kMessage.size());
            state_ = State::body;
            continue;
        }
        // Body: up to the first end marker.
        size_t end = std::string::npos, end_len = 0;
        for (std::string_view m : kBodyEnds) {
            const size_t p = buf_.find(m);
            if (p < end) {
                end = p;
                end_len = m.size();
            }
        }
        if (end == std::string::npos) {
            const size_t hold = partial_marker(buf_);
            emit_body(std::string_view(buf_).substr(0, buf_.size() - hold), out);
            buf_.erase(0, buf_.size() - hold);
            return out;
        }
        emit_body(std::string_view(buf_).substr(0, end), out);
        close_message(out);
        buf_.erase(0, end + end_len);
        state_ = State::header;
    }
}

ReplyDelta HarmonyParser::finish() {
    ReplyDelta out = push("");
    if (state_ == State::body) {
        emit_body(buf_, out);  // a held-back '<|...' that never became a marker is text
        close_message(out);    // a tool call ends with <|call|>, an end token never pushed
    } else if (state_ == State::header && buf_.find("<|") == std::string::npos) {
        out.content += buf_;  // a short reply that is not harmony
    }
    buf_.clear();
    state_ = State::header;
    channel_.clear();
    recipient_.clear();
    call_args_.clear();
    return out;
}

}  // namespace mw::chat
