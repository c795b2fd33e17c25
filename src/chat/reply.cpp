#include "chat/reply.h"

#include <nlohmann/json.hpp>

#include "chat/harmony.h"

namespace mw::chat {
namespace {

// Arguments keep the order the model wrote them in.
using json = nlohmann::ordered_json;

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The markers of one family's replies.
struct Markup {
    std::string_view reasoning_open;
    std::string_view reasoning_close;
    std::string_view call_open;
    std::string_view call_close;
    // A call's text between its markers as {"name", "arguments"}; false: not a call.
    bool (*decode_call)(std::string_view body, const StringParams& strings, ToolCall& out);
};

// A JSON value as the model wrote it: kept as JSON when it is one, else a string.
json value_of(std::string_view text) {
    const json v = json::parse(text, nullptr, false);
    return v.is_discarded() ? json(std::string(text)) : v;
}

// Hermes/Qwen3: {"name": "f", "arguments": {...}}. Qwen3.5:
//   <function=f>\n<parameter=city>\nParis\n</parameter>\n</function>
bool decode_think_call(std::string_view body, const StringParams& strings, ToolCall& out) {
    body = trim(body);
    if (!body.empty() && body.front() == '{') {
        const json j = json::parse(body, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string())
            return false;
        out.name = j["name"].get<std::string>();
        const json args = j.contains("arguments")    ? j["arguments"]
                          : j.contains("parameters") ? j["parameters"]
                                                     : json::object();
        out.arguments = args.is_string() ? args.get<std::string>() : args.dump();
        return true;
    }
    constexpr std::string_view kFunction = "<function=", kParameter = "<parameter=",
                               kParamEnd = "</parameter>";
    if (body.substr(0, kFunction.size()) != kFunction) return false;
    const size_t name_end = body.find('>');
    if (name_end == std::string_view::npos) return false;
    out.name = std::string(trim(body.substr(kFunction.size(), name_end - kFunction.size())));
    if (out.name.empty()) return false;
    json args = json::object();
    std::string_view rest = body.substr(name_end + 1);
    for (size_t p = rest.find(kParameter); p != std::string_view::npos; p = rest.find(kParameter)) {
        rest.remove_prefix(p + kParameter.size());
        const size_t key_end = rest.find('>');
        if (key_end == std::string_view::npos) return false;
        const std::string key(trim(rest.substr(0, key_end)));
        rest.remove_prefix(key_end + 1);
        const size_t value_end = rest.find(kParamEnd);
        std::string_view value = rest.substr(0, value_end);
        // The template writes "\n" around each value.
        if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
        if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
        // Bare values: JSON where it reads as JSON, unless the schema says string ("75001").
        args[key] = strings.count({out.name, key}) ? json(std::string(value)) : value_of(value);
        if (value_end == std::string_view::npos) break;
        rest.remove_prefix(value_end + kParamEnd.size());
    }
    out.arguments = args.dump();
    return true;
}

// Gemma 4's argument syntax to JSON: keys bare, strings between <|"|> markers, values as JSON
// otherwise. Returns false at anything else.
class GemmaArgs {
  public:
    explicit GemmaArgs(std::string_view s) : s_(s) {}
    bool value(json& out, int depth = 0) {
        if (depth > 32) return false;
        skip();
        if (eat(kQuote)) {
            const size_t end = s_.find(kQuote, p_);
            if (end == std::string_view::npos) return false;
            out = std::string(s_.substr(p_, end - p_));
            p_ = end + kQuote.size();
            return true;
        }
        if (eat("{")) {
            out = json::object();
            skip();
            if (eat("}")) return true;
            for (;;) {
                skip();
                std::string key;
                if (eat(kQuote)) {
                    const size_t end = s_.find(kQuote, p_);
                    if (end == std::string_view::npos) return false;
                    key = std::string(s_.substr(p_, end - p_));
                    p_ = end + kQuote.size();
                } else {
                    while (p_ < s_.size() && s_[p_] != ':' && s_[p_] != '}' && s_[p_] != ',')
                        key += s_[p_++];
                    key = std::string(trim(key));
                }
                skip();
                if (key.empty() || !eat(":")) return false;
                if (!value(out[key], depth + 1)) return false;
                skip();
                if (eat("}")) return true;
                if (!eat(",")) return false;
            }
        }
        if (eat("[")) {
            out = json::array();
            skip();
            if (eat("]")) return true;
            for (;;) {
                json item;
                if (!value(item, depth + 1)) return false;
                out.push_back(std::move(item));
                skip();
                if (eat("]")) return true;
                if (!eat(",")) return false;
            }
        }
        // A number, true, false or null, up to the next delimiter.
        size_t end = p_;
        while (end < s_.size() && s_[end] != ',' && s_[end] != '}' && s_[end] != ']') ++end;
        const std::string_view word = trim(s_.substr(p_, end - p_));
        if (word.empty()) return false;
        out = value_of(word);
        p_ = end;
        return true;
    }
    bool at_end() {
        skip();
        return p_ == s_.size();
    }

  private:
    static constexpr std::string_view kQuote = "<|\"|>";
    void skip() {
        while (p_ < s_.size() && is_space(s_[p_])) ++p_;
    }
    bool eat(std::string_view t) {
        if (s_.substr(p_, t.size()) != t) return false;
        p_ += t.size();
        return true;
    }
    std::string_view s_;
    size_t p_ = 0;
};

// Gemma 4: call:get_weather{city:<|"|>Paris<|"|>}
// Gemma 4 quotes its strings: the schema is not needed.
bool decode_gemma4_call(std::string_view body, const StringParams&, ToolCall& out) {
    body = trim(body);
    constexpr std::string_view kCall = "call:";
    if (body.substr(0, kCall.size()) != kCall) return false;
    body.remove_prefix(kCall.size());
    const size_t brace = body.find('{');
    if (brace == std::string_view::npos) return false;
    out.name = std::string(trim(body.substr(0, brace)));
    GemmaArgs args(body.substr(brace));
    json j;
    if (out.name.empty() || !args.value(j) || !j.is_object() || !args.at_end()) return false;
    out.arguments = j.dump();
    return true;
}

constexpr Markup kThink = {"<think>", "</think>", "<tool_call>", "</tool_call>", decode_think_call};
constexpr Markup kGemma4 = {"<|channel>thought", "<channel|>", "<|tool_call>", "<tool_call|>",
                            decode_gemma4_call};

// The length of the longest end of `text` that begins one of `markers` (held back: the rest
// may come with the next piece).
size_t partial_marker(std::string_view text, std::initializer_list<std::string_view> markers) {
    size_t longest = 0;
    for (std::string_view m : markers) {
        for (size_t n = std::min(m.size() - 1, text.size()); n > longest; --n) {
            if (text.substr(text.size() - n) == m.substr(0, n)) {
                longest = n;
                break;
            }
        }
    }
    return longest;
}

// The end of `text` that is white space.
size_t trailing_space(std::string_view text) {
    size_t n = 0;
    while (n < text.size() && is_space(text[text.size() - 1 - n])) ++n;
    return n;
}

// Reasoning, answer and calls marked as Markup says. White space around the reasoning and
// between the answer and its calls is the template's layout, not text: it is dropped.
class MarkupParser : public ReplyParser {
  public:
    MarkupParser(const Markup& m, bool in_reasoning, StringParams strings)
        : m_(m),
          strings_(std::move(strings)),
          state_(in_reasoning ? State::reasoning : State::content) {}

    ReplyDelta push(std::string_view text) override {
        ReplyDelta out;
        buf_ += text;
        for (;;) {
            if (state_ == State::call) {
                const size_t end = buf_.find(m_.call_close);
                if (end == std::string::npos) return out;
                close_call(std::string_view(buf_).substr(0, end), out);
                buf_.erase(0, end + m_.call_close.size());
                state_ = State::content;
                continue;
            }
            const bool reasoning = state_ == State::reasoning;
            size_t at = std::string::npos, len = 0;
            State next = State::content;
            if (reasoning) {
                at = buf_.find(m_.reasoning_close);
                len = m_.reasoning_close.size();
            } else {
                const size_t r = buf_.find(m_.reasoning_open), c = buf_.find(m_.call_open);
                if (r < c) {
                    at = r, len = m_.reasoning_open.size(), next = State::reasoning;
                } else if (c != std::string::npos) {
                    at = c, len = m_.call_open.size(), next = State::call;
                }
            }
            std::string& sink = reasoning ? out.reasoning : out.content;
            if (at == std::string::npos) {
                // Held back: a marker's start, and white space that may turn out to be layout.
                const std::string_view view = buf_;
                size_t hold = reasoning ? partial_marker(view, {m_.reasoning_close})
                                        : partial_marker(view, {m_.reasoning_open, m_.call_open});
                hold += trailing_space(view.substr(0, view.size() - hold));
                emit(view.substr(0, view.size() - hold), sink);
                buf_.erase(0, buf_.size() - hold);
                return out;
            }
            const std::string_view before = std::string_view(buf_).substr(0, at);
            emit(trim_end(before), sink);
            // Kept in case the call turns out not to be one.
            space_before_call_ = before.substr(before.size() - trailing_space(before));
            buf_.erase(0, at + len);
            state_ = next;
            lead_ = true;
        }
    }

    ReplyDelta finish() override {
        ReplyDelta out = push("");
        if (state_ == State::call) {
            // Generation stopped inside a call (a limit): a call if it reads as one.
            ToolCall call;
            if (m_.decode_call(buf_, strings_, call)) {
                out.tool_calls.push_back(std::move(call));
            } else {
                out.content += space_before_call_ + std::string(m_.call_open) + buf_;
            }
        } else {
            emit(trim_end(buf_), state_ == State::reasoning ? out.reasoning : out.content);
        }
        buf_.clear();
        return out;
    }

  private:
    enum class State { content, reasoning, call };

    static std::string_view trim_end(std::string_view s) {
        return s.substr(0, s.size() - trailing_space(s));
    }
    // Text of the current part; its leading white space is layout.
    void emit(std::string_view text, std::string& sink) {
        if (lead_) {
            while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
            if (text.empty()) return;
            lead_ = false;
        }
        sink += text;
    }
    void close_call(std::string_view body, ReplyDelta& out) {
        ToolCall call;
        if (m_.decode_call(body, strings_, call)) {
            out.tool_calls.push_back(std::move(call));
            lead_ = true;
        } else {
            // Not a call after all: nothing is lost, it is answer text.
            out.content += space_before_call_ + std::string(m_.call_open) + std::string(body) +
                           std::string(m_.call_close);
            lead_ = false;
        }
    }

    const Markup& m_;
    const StringParams strings_;
    State state_;
    bool lead_ = true;
    std::string buf_;
    std::string space_before_call_;
};

}  // namespace

ReplyFormat reply_format_of(std::string_view t) {
    if (is_harmony_template(t)) return ReplyFormat::harmony;
    if (t.find("<|channel>") != std::string_view::npos &&
        t.find(kGemma4.reasoning_close) != std::string_view::npos)
        return ReplyFormat::gemma4;
    if (t.find(kThink.reasoning_close) != std::string_view::npos ||
        t.find(kThink.call_open) != std::string_view::npos)
        return ReplyFormat::think;
    return ReplyFormat::plain;
}

const char* reply_format_name(ReplyFormat f) {
    switch (f) {
        case ReplyFormat::harmony:
            return "harmony";
        case ReplyFormat::think:
            return "think";
        case ReplyFormat::gemma4:
            return "gemma4";
        case ReplyFormat::plain:
            break;
    }
    return "plain";
}

StringParams string_params_of(const nlohmann::ordered_json& tools) {
    StringParams out;
    if (!tools.is_array()) return out;
    for (const auto& t : tools) {
        if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
        const auto& f = t["function"];
        if (!f.contains("name") || !f["name"].is_string() || !f.contains("parameters")) continue;
        const auto& params = f["parameters"];
        if (!params.is_object() || !params.contains("properties") ||
            !params["properties"].is_object())
            continue;
        for (const auto& [key, schema] : params["properties"].items()) {
            // "string", or ["string", "null"]: a value that may be text is kept as text.
            if (!schema.is_object() || !schema.contains("type")) continue;
            const auto& type = schema["type"];
            bool text = type == "string";
            if (type.is_array()) {
                text = true;
                for (const auto& alt : type) text = text && (alt == "string" || alt == "null");
            }
            if (text) out.emplace(f["name"].get<std::string>(), key);
        }
    }
    return out;
}

bool template_takes_tools(std::string_view t) {
    return t.find("tools") != std::string_view::npos;
}

std::unique_ptr<ReplyParser> make_reply_parser(ReplyFormat format, std::string_view prompt,
                                               StringParams strings) {
    const Markup* m = nullptr;
    switch (format) {
        case ReplyFormat::plain:
            return nullptr;
        case ReplyFormat::harmony:
            return std::make_unique<HarmonyParser>();
        case ReplyFormat::think:
            m = &kThink;
            break;
        case ReplyFormat::gemma4:
            m = &kGemma4;
            break;
    }
    // The prompt ends by opening a reasoning block that the reply continues ("<think>\n").
    const std::string_view end = trim(prompt);
    const bool in_reasoning =
        end.size() >= m->reasoning_open.size() &&
        end.substr(end.size() - m->reasoning_open.size()) == m->reasoning_open;
    return std::make_unique<MarkupParser>(*m, in_reasoning, std::move(strings));
}

ReplyDelta parse_reply(ReplyFormat format, std::string_view prompt, std::string_view reply,
                       StringParams strings) {
    std::unique_ptr<ReplyParser> p = make_reply_parser(format, prompt, std::move(strings));
    if (!p) {
        ReplyDelta d;
        d.content = std::string(reply);
        return d;
    }
    ReplyDelta d = p->push(reply);
    d.append(p->finish());
    return d;
}

}  // namespace mw::chat
