#include "server/openai.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "template/text.h"

namespace mw::server {
namespace {

using nlohmann::json;
// Requests keep the client's key order: templates print tool schemas and earlier calls'
// arguments with tojson.
using rjson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
    ApiError e;
    e.status = 400;
    e.param = param;
    e.message = message;
    throw e;
}

// Deeper JSON than any real request holds is refused while parsing: copying, rendering and
// dumping a value recurse once per level, and 60 k levels overflowed the stack.
constexpr int kMaxJsonDepth = 128;

// Parses client JSON, throwing ApiError (400) for nesting beyond kMaxJsonDepth. Throws
// nlohmann's parse_error and out_of_range for what is not JSON.
rjson parse_bounded(std::string_view text, const std::string& where) {
    const rjson::parser_callback_t limit = [&](int depth, rjson::parse_event_t event, rjson&) {
        if ((event == rjson::parse_event_t::object_start ||
             event == rjson::parse_event_t::array_start) &&
            depth >= kMaxJsonDepth) {
            bad(where, fmt::format("{} nests deeper than {} levels", where, kMaxJsonDepth));
        }
        return true;
    };
    return rjson::parse(text.begin(), text.end(), limit);
}

const char* type_name(const rjson& v) {
    switch (v.type()) {
        case rjson::value_t::null:
            return "null";
        case rjson::value_t::boolean:
            return "a boolean";
        case rjson::value_t::string:
            return "a string";
        case rjson::value_t::array:
            return "an array";
        case rjson::value_t::object:
            return "an object";
        case rjson::value_t::number_integer:
        case rjson::value_t::number_unsigned:
            return "an integer";
        case rjson::value_t::number_float:
            return "a number";
        default:
            return "something else";
    }
}

double number(const rjson& body, const char* key, double lo, double hi) {
    const rjson& v = body.at(key);
    if (!v.is_number()) bad(key, fmt::format("'{}' must be a number, not {}", key, type_name(v)));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
        bad(key, fmt::format("'{}' is {}; it must be between {} and {}", key, v.dump(), lo, hi));
    }
    return d;
}

int64_t integer(const rjson& body, const char* key, int64_t lo, int64_t hi) {
    const rjson& v = body.at(key);
    bool whole = v.is_number_integer() || v.is_number_unsigned();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        whole = std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.0e15;
    }
    if (!whole) bad(key, fmt::format("'{}' must be an integer, not {}", key, v.dump()));
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
        bad(key, fmt::format("'{}' is {}; it must be between {} and {}", key, v.dump(), lo, hi));
    }
    const int64_t i = v.is_number_float() ? int64_t(v.get<double>()) : v.get<int64_t>();
    if (i < lo || i > hi) {
        bad(key, fmt::format("'{}' is {}; it must be between {} and {}", key, i, lo, hi));
    }
    return i;
}

// llama-server's per-request speculative decoding fields (flat keys with a dot). n_max 0 turns
// drafting off for the request; a server that does not speculate takes only 0.
void parse_speculative(const rjson& j, const RequestLimits& limits, CompletionRequest& r) {
    const char* n_max = "speculative.n_max";
    const char* n_min = "speculative.n_min";
    const char* p_min = "speculative.p_min";
    if (j.contains(n_max) && !j[n_max].is_null()) {
        if (limits.draft_max == 0 && integer(j, n_max, 0, INT32_MAX) != 0) {
            bad(n_max, fmt::format("'{}' is {}; this server does not speculate (start it with "
                                   "-md or --spec-type), so only 0 is valid",
                                   n_max, j[n_max].dump()));
        }
        r.draft_max = int32_t(integer(j, n_max, 0, limits.draft_max));
    }
    if (j.contains(n_min) && !j[n_min].is_null()) {
        const int32_t hi = r.draft_max >= 0 ? r.draft_max : limits.draft_max;
        r.draft_min = int32_t(integer(j, n_min, 0, hi));
    }
    if (j.contains(p_min) && !j[p_min].is_null()) r.draft_p_min = float(number(j, p_min, 0.0, 1.0));
}

bool boolean(const rjson& body, const char* key) {
    const rjson& v = body.at(key);
    if (!v.is_boolean()) bad(key, fmt::format("'{}' must be a boolean, not {}", key, type_name(v)));
    return v.get<bool>();
}

// Message content: a string, or OpenAI's list of parts of which memwall reads text parts.
std::string message_text(const rjson& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_array()) {
        std::string text;
        for (size_t i = 0; i < content.size(); ++i) {
            const rjson& part = content[i];
            const std::string at = fmt::format("{}[{}]", where, i);
            if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
                bad(at, fmt::format("{} must be an object with a 'type'", at));
            }
            if (part["type"] != "text") {
                bad(at, fmt::format("{}: content of type '{}' is not supported (text only)", at,
                                    part["type"].get<std::string>()));
            }
            if (!part.contains("text") || !part["text"].is_string()) {
                bad(at, fmt::format("{}.text must be a string", at));
            }
            text += part["text"].get<std::string>();
        }
        return text;
    }
    bad(where, fmt::format("{} must be a string or an array of text parts, not {}", where,
                           type_name(content)));
}

rjson check_messages(const rjson& messages) {
    if (!messages.is_array()) {
        bad("messages", fmt::format("'messages' must be an array, not {}", type_name(messages)));
    }
    if (messages.empty()) bad("messages", "'messages' must hold at least one message");
    static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant",
                                                 "tool"};
    rjson out = rjson::array();
    for (size_t i = 0; i < messages.size(); ++i) {
        const rjson& m = messages[i];
        const std::string at = fmt::format("messages[{}]", i);
        if (!m.is_object()) bad(at, fmt::format("{} must be an object, not {}", at, type_name(m)));
        if (!m.contains("role")) bad(at + ".role", fmt::format("{} has no 'role'", at));
        if (!m["role"].is_string()) {
            bad(at + ".role",
                fmt::format("{}.role must be a string, not {}", at, type_name(m["role"])));
        }
        std::string role = m["role"].get<std::string>();
        if (role.empty()) bad(at + ".role", fmt::format("{}.role is empty", at));
        if (!kRoles.count(role)) {
            bad(at + ".role", fmt::format("{}.role '{}' is not one of system, developer, user, "
                                          "assistant, tool",
                                          at, role));
        }
        if (role == "developer") role = "system";  // OpenAI's newer name for it
        rjson msg = {{"role", role}};
        const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
        if (!m.contains("content") || m["content"].is_null()) {
            if (!(role == "assistant" && has_calls)) {
                bad(at + ".content", fmt::format("{} ({}) has no content", at, role));
            }
            msg["content"] = nullptr;
        } else {
            msg["content"] = message_text(m["content"], at + ".content");
        }
        if (has_calls) {
            if (!m["tool_calls"].is_array())
                bad(at + ".tool_calls", at + ".tool_calls must be an array");
            rjson calls = m["tool_calls"];
            // Templates read function.arguments as an object (the transformers convention).
            for (rjson& c : calls) {
                if (c.is_object() && c.contains("function") && c["function"].is_object() &&
                    c["function"].contains("arguments") && c["function"]["arguments"].is_string()) {
                    // A string that is not JSON stays a string; one nested too deep is refused.
                    try {
                        c["function"]["arguments"] =
                            parse_bounded(c["function"]["arguments"].get<std::string>(),
                                          at + ".tool_calls[].function.arguments");
                    } catch (const rjson::exception&) {
                    }
                }
            }
            msg["tool_calls"] = calls;
        }
        // An earlier answer's reasoning, as llama-server returns it (Qwen3.5 and Gemma 4 read
        // it; gpt-oss's template reads "thinking", set from it where the server renders one).
        if (role == "assistant" && m.contains("reasoning_content") &&
            !m["reasoning_content"].is_null()) {
            if (!m["reasoning_content"].is_string())
                bad(at + ".reasoning_content", at + ".reasoning_content must be a string");
            msg["reasoning_content"] = m["reasoning_content"];
        }
        for (const char* key : {"name", "tool_call_id"}) {
            if (m.contains(key)) {
                if (!m[key].is_string())
                    bad(at + "." + key, fmt::format("{}.{} must be a string", at, key));
                msg[key] = m[key];
            }
        }
        out.push_back(std::move(msg));
    }
    return out;
}

// "tools" as OpenAI defines them (functions with a name), null when there are none or
// tool_choice is "none". Forcing a call ("required", a named function) would need constrained
// sampling, which memwall does not have: refused rather than ignored.
rjson check_tools(const rjson& j) {
    if (j.contains("parallel_tool_calls") && !j["parallel_tool_calls"].is_null() &&
        !j["parallel_tool_calls"].is_boolean()) {
        bad("parallel_tool_calls", fmt::format("'parallel_tool_calls' must be a boolean, not {}",
                                               type_name(j["parallel_tool_calls"])));
    }
    std::string choice = "auto";
    if (j.contains("tool_choice") && !j["tool_choice"].is_null()) {
        const rjson& c = j["tool_choice"];
        if (c.is_string() && (c == "auto" || c == "none")) {
            choice = c.get<std::string>();
        } else if (c.is_string() && c == "required") {
            bad("tool_choice",
                "tool_choice \"required\" is not supported (memwall cannot force "
                "a call); use \"auto\" or \"none\"");
        } else if (c.is_object()) {
            bad("tool_choice",
                "a named tool_choice is not supported (memwall cannot force a "
                "call); use \"auto\" or \"none\"");
        } else {
            bad("tool_choice",
                fmt::format("'tool_choice' is {}; it must be \"auto\" or \"none\"", c.dump()));
        }
    }
    if (!j.contains("tools") || j["tools"].is_null()) return nullptr;
    const rjson& tools = j["tools"];
    if (!tools.is_array())
        bad("tools", fmt::format("'tools' must be an array, not {}", type_name(tools)));
    for (size_t i = 0; i < tools.size(); ++i) {
        const rjson& t = tools[i];
        const std::string at = fmt::format("tools[{}]", i);
        if (!t.is_object()) bad(at, fmt::format("{} must be an object, not {}", at, type_name(t)));
        if (t.contains("type") && (!t["type"].is_string() || t["type"] != "function")) {
            bad(at + ".type", fmt::format("{}.type must be \"function\"", at));
        }
        if (!t.contains("function") || !t["function"].is_object())
            bad(at + ".function", fmt::format("{} has no 'function' object", at));
        const rjson& f = t["function"];
        if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty())
            bad(at + ".function.name", fmt::format("{}.function has no name", at));
        if (f.contains("parameters") && !f["parameters"].is_object() && !f["parameters"].is_null())
            bad(at + ".function.parameters",
                fmt::format("{}.function.parameters must be an object (a JSON schema)", at));
    }
    if (tools.empty() || choice == "none") return nullptr;
    return tools;
}

}  // namespace

json error_json(const ApiError& e) {
    // A message may quote the body (a key, the JSON parser's "last read"), whose bytes need not
    // be UTF-8: JSON cannot carry them, so they become U+FFFD.
    json err = {{"message", tmpl::text::repair_utf8(e.message)}, {"type", e.type}};
    err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
    err["code"] = e.code.empty() ? json(nullptr) : json(e.code);
    return {{"error", err}};
}

CompletionRequest parse_completion_request(std::string_view body, bool chat,
                                           const SamplerParams& defaults,
                                           const RequestLimits& limits) {
    rjson j;
    try {
        j = parse_bounded(body, "the body");
    } catch (const rjson::parse_error& e) {
        ApiError err;
        err.message = fmt::format("the body is not valid JSON (at byte {}): {}", e.byte,
                                  std::string(e.what()));
        throw err;
    } catch (const rjson::out_of_range& e) {  // a number beyond a double: 1e999
        ApiError err;
        err.message = fmt::format("the body is not valid JSON: {}", std::string(e.what()));
        throw err;
    }
    if (!j.is_object())
        bad("", fmt::format("the body must be a JSON object, not {}", type_name(j)));

    static const std::set<std::string> kCommon = {"model",
                                                  "max_tokens",
                                                  "temperature",
                                                  "top_p",
                                                  "min_p",
                                                  "top_k",
                                                  "seed",
                                                  "stop",
                                                  "stream",
                                                  "stream_options",
                                                  "presence_penalty",
                                                  "frequency_penalty",
                                                  "repeat_penalty",
                                                  "repeat_last_n",
                                                  "user",
                                                  "n",
                                                  "logprobs",
                                                  "ignore_eos",
                                                  "cache_prompt",
                                                  "speculative.n_max",
                                                  "speculative.n_min",
                                                  "speculative.p_min"};
    static const std::set<std::string> kChat = {"messages",         "max_completion_tokens",
                                                "response_format",  "chat_template_kwargs",
                                                "reasoning_effort", "tools",
                                                "tool_choice",      "parallel_tool_calls"};
    static const std::set<std::string> kCompletion = {"prompt"};
    std::vector<std::string> unsupported;
    for (const auto& item : j.items()) {
        const std::string& k = item.key();
        if (kCommon.count(k) || (chat ? kChat.count(k) : kCompletion.count(k))) continue;
        unsupported.push_back(k);
    }
    if (!unsupported.empty()) {
        std::string list;
        for (const std::string& u : unsupported) list += (list.empty() ? "'" : ", '") + u + "'";
        bad(unsupported.front(),
            fmt::format("unsupported field{} for {}: {}", unsupported.size() > 1 ? "s" : "",
                        chat ? "/v1/chat/completions" : "/v1/completions", list));
    }

    CompletionRequest r;
    r.chat = chat;
    r.sampling = defaults;
    if (chat) {
        if (!j.contains("messages")) bad("messages", "'messages' is required");
        r.messages = check_messages(j["messages"]);
    } else {
        if (!j.contains("prompt")) bad("prompt", "'prompt' is required");
        const rjson& p = j["prompt"];
        if (p.is_string()) {
            r.prompt = p.get<std::string>();
        } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
            r.prompt = p[0].get<std::string>();
        } else if (p.is_array() && p.size() > 1) {
            bad("prompt", "only one prompt per request is supported");
        } else {
            bad("prompt", fmt::format("'prompt' must be a string, not {}", type_name(p)));
        }
    }
    if (chat && j.contains("chat_template_kwargs") && !j["chat_template_kwargs"].is_null()) {
        const rjson& k = j["chat_template_kwargs"];
        if (!k.is_object()) {
            bad("chat_template_kwargs",
                fmt::format("'chat_template_kwargs' must be an object, not {}", type_name(k)));
        }
        r.template_variables = k;
    }
    if (chat && j.contains("reasoning_effort") && !j["reasoning_effort"].is_null()) {
        const rjson& e = j["reasoning_effort"];
        if (!e.is_string() || (e != "low" && e != "medium" && e != "high")) {
            bad("reasoning_effort",
                fmt::format("'reasoning_effort' is {}; it must be \"low\", \"medium\" or \"high\"",
                            e.dump()));
        }
        if (!r.template_variables.contains("reasoning_effort"))
            r.template_variables["reasoning_effort"] = e;
    }
    if (chat) r.tools = check_tools(j);
    if (j.contains("model")) {
        if (!j["model"].is_string()) bad("model", "'model' must be a string");
        r.model = j["model"].get<std::string>();
    }
    const int64_t max_limit = limits.max_tokens > 0 ? limits.max_tokens : INT32_MAX;
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
        if (j.contains(key) && !j[key].is_null())
            r.max_tokens = int32_t(integer(j, key, 1, max_limit));
    }
    if (j.contains("temperature") && !j["temperature"].is_null())
        r.sampling.temperature = float(number(j, "temperature", 0.0, 2.0));  // OpenAI's range
    if (j.contains("top_p") && !j["top_p"].is_null())
        r.sampling.top_p = float(number(j, "top_p", 0.0, 1.0));
    if (j.contains("min_p") && !j["min_p"].is_null())
        r.sampling.min_p = float(number(j, "min_p", 0.0, 1.0));
    if (j.contains("top_k") && !j["top_k"].is_null())
        r.sampling.top_k =
            int32_t(integer(j, "top_k", 0, limits.n_vocab ? limits.n_vocab : INT32_MAX));
    if (j.contains("presence_penalty") && !j["presence_penalty"].is_null())
        r.sampling.presence_penalty = float(number(j, "presence_penalty", -2.0, 2.0));
    if (j.contains("frequency_penalty") && !j["frequency_penalty"].is_null())
        r.sampling.frequency_penalty = float(number(j, "frequency_penalty", -2.0, 2.0));
    if (j.contains("repeat_penalty") && !j["repeat_penalty"].is_null())
        r.sampling.repeat_penalty = float(number(j, "repeat_penalty", 0.0, 10.0));
    if (j.contains("repeat_last_n") && !j["repeat_last_n"].is_null())
        r.sampling.repeat_last_n = int32_t(integer(j, "repeat_last_n", -1, 1 << 20));
    if (j.contains("seed") && !j["seed"].is_null()) {
        const int64_t seed = integer(j, "seed", INT64_MIN, INT64_MAX);
        r.sampling.seed = uint64_t(seed);
        r.seed_given = true;
    }
    if (j.contains("n") && !j["n"].is_null() && integer(j, "n", 1, 1) != 1) bad("n", "n must be 1");
    if (j.contains("logprobs") && !j["logprobs"].is_null() && boolean(j, "logprobs")) {
        bad("logprobs", "'logprobs' is not supported");
    }
    if (j.contains("user") && !j["user"].is_null() && !j["user"].is_string()) {
        bad("user", "'user' must be a string");
    }
    if (j.contains("cache_prompt") && !j["cache_prompt"].is_null()) boolean(j, "cache_prompt");
    if (j.contains("ignore_eos") && !j["ignore_eos"].is_null())
        r.ignore_eos = boolean(j, "ignore_eos");
    parse_speculative(j, limits, r);
    if (j.contains("response_format") && !j["response_format"].is_null()) {
        const rjson& f = j["response_format"];
        if (!f.is_object() || !f.contains("type") || f["type"] != "text") {
            bad("response_format", "only response_format {\"type\": \"text\"} is supported");
        }
    }
    if (j.contains("stop") && !j["stop"].is_null()) {
        const rjson& s = j["stop"];
        auto add = [&](const rjson& v, const std::string& at) {
            if (!v.is_string())
                bad("stop", fmt::format("{} must be a string, not {}", at, type_name(v)));
            if (v.get<std::string>().empty()) bad("stop", fmt::format("{} is empty", at));
            r.stop.push_back(v.get<std::string>());
        };
        if (s.is_string()) {
            add(s, "'stop'");
        } else if (s.is_array()) {
            if (s.size() > 16) bad("stop", "'stop' holds at most 16 strings");
            for (size_t i = 0; i < s.size(); ++i) add(s[i], fmt::format("stop[{}]", i));
        } else {
            bad("stop", fmt::format("'stop' must be a string or an array of strings, not {}",
                                    type_name(s)));
        }
    }
    if (j.contains("stream") && !j["stream"].is_null()) r.stream = boolean(j, "stream");
    if (j.contains("stream_options") && !j["stream_options"].is_null()) {
        const rjson& o = j["stream_options"];
        if (!o.is_object()) bad("stream_options", "'stream_options' must be an object");
        for (const auto& item : o.items()) {
            if (item.key() != "include_usage") {
                bad("stream_options." + item.key(),
                    fmt::format("unsupported field 'stream_options.{}'", item.key()));
            }
        }
        if (o.contains("include_usage")) {
            if (!o["include_usage"].is_boolean()) {
                bad("stream_options.include_usage",
                    "'stream_options.include_usage' must be a boolean");
            }
            r.include_usage = o["include_usage"].get<bool>();
        }
    }
    return r;
}

json usage_json(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json timings_json(const Usage& u) {
    const int32_t prompt_n = u.prompt_tokens - u.cached_tokens;
    auto per_second = [](int32_t n, double ms) { return ms > 0 ? 1000.0 * n / ms : 0.0; };
    json t = {{"cache_n", u.cached_tokens},
              {"prompt_n", prompt_n},
              {"prompt_ms", u.prompt_ms},
              {"prompt_per_second", per_second(prompt_n, u.prompt_ms)},
              {"predicted_n", u.completion_tokens},
              {"predicted_ms", u.decode_ms},
              {"predicted_per_second", per_second(u.completion_tokens, u.decode_ms)}};
    if (u.draft_n >= 0) {
        t["draft_n"] = u.draft_n;
        t["draft_n_accepted"] = u.draft_accepted;
    }
    return t;
}

namespace {
json finish_json(Finish f) {
    return f == Finish::none ? json(nullptr) : json(finish_name(f));
}
}  // namespace

json chat_response(const std::string& id, int64_t created, const std::string& model,
                   const std::string& text, Finish finish, const Usage& usage) {
    json choice = {{"index", 0},
                   {"message", {{"role", "assistant"}, {"content", text}}},
                   {"logprobs", nullptr},
                   {"finish_reason", finish_json(finish)}};
    return {{"id", id},
            {"object", "chat.completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})},
            {"usage", usage_json(usage)},
            {"timings", timings_json(usage)}};
}

json chat_chunk(const std::string& id, int64_t created, const std::string& model,
                const std::string* text, bool with_role, Finish finish) {
    json delta = json::object();
    if (with_role) delta["role"] = "assistant";
    if (text) delta["content"] = *text;
    json choice = {{"index", 0},
                   {"delta", delta},
                   {"logprobs", nullptr},
                   {"finish_reason", finish_json(finish)}};
    return {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})}};
}

namespace {

// OpenAI's tool_calls entries; the arguments stay the string the model wrote.
json tool_calls_json(const std::string& id, const std::vector<chat::ToolCall>& calls, size_t first,
                     bool with_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json c = {{"id", fmt::format("call_{}_{}", id, first + i)},
                  {"type", "function"},
                  {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) c["index"] = first + i;
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

json chat_response_split(const std::string& id, int64_t created, const std::string& model,
                         const chat::ReplyDelta& reply, Finish finish, const Usage& usage) {
    json r = chat_response(id, created, model, reply.content, finish, usage);
    json& message = r["choices"][0]["message"];
    if (!reply.reasoning.empty()) message["reasoning_content"] = reply.reasoning;
    if (!reply.tool_calls.empty()) {
        message["tool_calls"] = tool_calls_json(id, reply.tool_calls, 0, false);
        if (reply.content.empty()) message["content"] = nullptr;
        if (finish == Finish::stop) r["choices"][0]["finish_reason"] = "tool_calls";
    }
    return r;
}

json chat_chunk_split(const std::string& id, int64_t created, const std::string& model,
                      const chat::ReplyDelta& delta, size_t first_call) {
    json r = chat_chunk(id, created, model, nullptr, false, Finish::none);
    json& d = r["choices"][0]["delta"];
    if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty()) d["content"] = delta.content;
    if (!delta.tool_calls.empty())
        d["tool_calls"] = tool_calls_json(id, delta.tool_calls, first_call, true);
    return r;
}

json completion_response(const std::string& id, int64_t created, const std::string& model,
                         const std::string& text, Finish finish, const Usage& usage) {
    json choice = {{"index", 0},
                   {"text", text},
                   {"logprobs", nullptr},
                   {"finish_reason", finish_json(finish)}};
    return {{"id", id},
            {"object", "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})},
            {"usage", usage_json(usage)},
            {"timings", timings_json(usage)}};
}

json completion_chunk(const std::string& id, int64_t created, const std::string& model,
                      const std::string& text, Finish finish) {
    json choice = {{"index", 0},
                   {"text", text},
                   {"logprobs", nullptr},
                   {"finish_reason", finish_json(finish)}};
    return {{"id", id},
            {"object", "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})}};
}

json usage_chunk(const std::string& id, int64_t created, const std::string& model, bool chat,
                 const Usage& usage) {
    return {{"id", id},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array()},
            {"usage", usage_json(usage)}};
}

}  // namespace mw::server
