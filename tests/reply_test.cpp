// Replies split into reasoning, answer and tool calls by the markers of the template that wrote
// the prompt (chat/reply.h): Qwen3.5's <think> and <tool_call><function=...>, Hermes/Qwen3 JSON
// calls, Gemma 4's thought channel and call syntax. Crafted texts as the published templates
// write them, whole and cut at every byte (a stream never shows part of a marker, and the
// pieces add up to the same split).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

#include "chat/reply.h"
#include "support/test_support.h"

namespace {

using mw::chat::ReplyDelta;
using mw::chat::ReplyFormat;
using nlohmann::json;

ReplyDelta parse_in_pieces(ReplyFormat f, std::string_view prompt, std::string_view text,
                           size_t step, std::initializer_list<std::string_view> markers) {
    auto p = mw::chat::make_reply_parser(f, prompt);
    ReplyDelta total;
    for (size_t i = 0; i < text.size(); i += step) {
        const ReplyDelta d = p->push(text.substr(i, step));
        for (const std::string* s : {&d.reasoning, &d.content})
            for (std::string_view m : markers)
                for (size_t n = 2; n <= m.size(); ++n)
                    EXPECT_EQ(s->find(m.substr(0, n)), std::string::npos) << *s;
        total.append(d);
    }
    total.append(p->finish());
    return total;
}

// The split of `text` as a reply to `prompt`, checked to be the same in pieces of 1..16 bytes.
ReplyDelta split(ReplyFormat f, std::string_view prompt, std::string_view text,
                 std::initializer_list<std::string_view> markers = {}) {
    const ReplyDelta whole = mw::chat::parse_reply(f, prompt, text);
    for (size_t step = 1; step <= 16; ++step) {
        SCOPED_TRACE(fmt::format("pieces of {} bytes", step));
        const ReplyDelta d = parse_in_pieces(f, prompt, text, step, markers);
        EXPECT_EQ(d.reasoning, whole.reasoning);
        EXPECT_EQ(d.content, whole.content);
        EXPECT_EQ(d.tool_calls.size(), whole.tool_calls.size());
        for (size_t i = 0; i < d.tool_calls.size() && i < whole.tool_calls.size(); ++i) {
            EXPECT_EQ(d.tool_calls[i].name, whole.tool_calls[i].name);
            EXPECT_EQ(d.tool_calls[i].arguments, whole.tool_calls[i].arguments);
        }
    }
    return whole;
}

std::string read_template(const std::string& name) {
    return mw::test::read_text(std::string(MEMWALL_TESTS_DIR) + "/data/chat-templates/templates/" +
                               name);
}

TEST(Reply, FormatFromTheTemplate) {
    EXPECT_EQ(mw::chat::reply_format_of(read_template("Qwen3.5-4B.jinja")), ReplyFormat::think);
    EXPECT_EQ(mw::chat::reply_format_of(read_template("HuggingFaceTB-SmolLM3-3B.jinja")),
              ReplyFormat::think);
    EXPECT_EQ(mw::chat::reply_format_of(read_template("LFM2.5-8B-A1B.jinja")), ReplyFormat::think);
    EXPECT_EQ(mw::chat::reply_format_of(read_template("google-gemma-4-31B-it.jinja")),
              ReplyFormat::gemma4);
    EXPECT_EQ(mw::chat::reply_format_of(read_template("openai-gpt-oss-120b.jinja")),
              ReplyFormat::harmony);
    EXPECT_EQ(mw::chat::reply_format_of("{% for m in messages %}{{ m.content }}{% endfor %}"),
              ReplyFormat::plain);
    EXPECT_TRUE(mw::chat::template_takes_tools(read_template("Qwen3.5-4B.jinja")));
    EXPECT_FALSE(mw::chat::template_takes_tools("{{ messages[0].content }}"));
    EXPECT_EQ(mw::chat::make_reply_parser(ReplyFormat::plain, "x"), nullptr);
}

// Qwen3.5 opens the reasoning in the prompt ("<think>\n"); the reply closes it.
TEST(Reply, Qwen35ReasoningOpenedByThePrompt) {
    const std::string prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n";
    const ReplyDelta d = split(ReplyFormat::think, prompt,
                               "The user greets me.\nI greet back.\n</think>\n\nHello! How can "
                               "I help?\n",
                               {"</think>", "<tool_call>"});
    EXPECT_EQ(d.reasoning, "The user greets me.\nI greet back.");
    EXPECT_EQ(d.content, "Hello! How can I help?");
    EXPECT_TRUE(d.tool_calls.empty());
}

// enable_thinking false: the prompt closes an empty block; everything is the answer, and a
// "<" that begins no marker is text.
TEST(Reply, ThinkingOffAndLooseAngleBrackets) {
    const std::string prompt = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    const ReplyDelta d = split(ReplyFormat::think, prompt, "a < b and <thin> is not </think");
    EXPECT_EQ(d.reasoning, "");
    EXPECT_EQ(d.content, "a < b and <thin> is not </think");
}

// SmolLM3 and Qwen3 write the opening tag themselves; an answer's inner white space stays.
TEST(Reply, ReasoningOpenedByTheModel) {
    const ReplyDelta d =
        split(ReplyFormat::think, "<|im_start|>assistant\n",
              "<think>\nHmm.\n</think>\nLine one.\n\n  Line two.", {"<think>", "</think>"});
    EXPECT_EQ(d.reasoning, "Hmm.");
    EXPECT_EQ(d.content, "Line one.\n\n  Line two.");
}

// A reply cut off by a limit inside its reasoning: the reasoning so far, no answer.
TEST(Reply, ReasoningCutOff) {
    const ReplyDelta d =
        split(ReplyFormat::think, "assistant\n<think>\n", "Step 1. Step 2.\n</thi");
    EXPECT_EQ(d.reasoning, "Step 1. Step 2.\n</thi");
    EXPECT_EQ(d.content, "");
}

// Qwen3.5's calls, as its template writes them for an earlier turn: parameters become JSON
// (a value that reads as JSON stays JSON, other text is a string).
TEST(Reply, Qwen35ToolCalls) {
    const ReplyDelta d = split(
        ReplyFormat::think, "assistant\n<think>\n",
        "Need the weather.\n</think>\n\nLet me check.\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "<parameter=opts>\n{\"units\": \"C\"}\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_time>\n<parameter=zone>\nline 1\nline 2\n</parameter>\n"
        "</function>\n</tool_call>",
        {"<tool_call>", "</think>"});
    EXPECT_EQ(d.reasoning, "Need the weather.");
    EXPECT_EQ(d.content, "Let me check.");
    ASSERT_EQ(d.tool_calls.size(), 2u);
    EXPECT_EQ(d.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(d.tool_calls[0].arguments),
              json::parse(R"({"city": "Paris", "days": 3, "opts": {"units": "C"}})"));
    EXPECT_EQ(d.tool_calls[1].name, "get_time");
    EXPECT_EQ(json::parse(d.tool_calls[1].arguments), json::parse(R"({"zone": "line 1\nline 2"})"));
}

// With the request's tools, a parameter whose schema says string stays a string even where
// it reads as JSON; the others are still JSON where they read as JSON.
TEST(Reply, Qwen35ArgumentsTypedByTheSchema) {
    const auto tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {
        "name": "ship", "parameters": {"type": "object", "properties": {
            "zip": {"type": "string"}, "note": {"type": ["string", "null"]},
            "count": {"type": "integer"}, "any": {}}}}}])");
    const auto strings = mw::chat::string_params_of(tools);
    EXPECT_EQ(strings.size(), 2u);
    const std::string reply =
        "<tool_call>\n<function=ship>\n<parameter=zip>\n75001\n</parameter>\n"
        "<parameter=note>\ntrue\n</parameter>\n<parameter=count>\n3\n</parameter>\n"
        "<parameter=any>\n[1]\n</parameter>\n</function>\n</tool_call>";
    const ReplyDelta typed = mw::chat::parse_reply(ReplyFormat::think, "", reply, strings);
    ASSERT_EQ(typed.tool_calls.size(), 1u);
    EXPECT_EQ(typed.tool_calls[0].arguments,
              R"({"zip":"75001","note":"true","count":3,"any":[1]})");
    // Streamed in pieces, the same.
    auto p = mw::chat::make_reply_parser(ReplyFormat::think, "", strings);
    ReplyDelta streamed;
    for (size_t i = 0; i < reply.size(); i += 5) streamed.append(p->push(reply.substr(i, 5)));
    streamed.append(p->finish());
    ASSERT_EQ(streamed.tool_calls.size(), 1u);
    EXPECT_EQ(streamed.tool_calls[0].arguments, typed.tool_calls[0].arguments);
    // Another function's parameter of the same name is not affected.
    const ReplyDelta other = mw::chat::parse_reply(
        ReplyFormat::think, "",
        "<tool_call>\n<function=post>\n<parameter=zip>\n75001\n</parameter>\n</function>\n"
        "</tool_call>",
        strings);
    ASSERT_EQ(other.tool_calls.size(), 1u);
    EXPECT_EQ(other.tool_calls[0].arguments, R"({"zip":75001})");
}

// Hermes / Qwen3 JSON calls; one that is not a call comes back as text, nothing lost.
TEST(Reply, JsonToolCallsAndMalformedOnes) {
    const ReplyDelta d = split(ReplyFormat::think, "assistant\n",
                               "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": "
                               "2}}\n</tool_call>");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "add");
    EXPECT_EQ(json::parse(d.tool_calls[0].arguments), json::parse(R"({"a": 1, "b": 2})"));
    EXPECT_EQ(d.content, "");

    const ReplyDelta bad =
        split(ReplyFormat::think, "assistant\n", "Try <tool_call>{oops</tool_call> done");
    EXPECT_TRUE(bad.tool_calls.empty());
    EXPECT_EQ(bad.content, "Try <tool_call>{oops</tool_call> done");

    // Cut off inside a call that already reads as one; and inside one that does not.
    const ReplyDelta cut = split(ReplyFormat::think, "assistant\n",
                                 "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
    ASSERT_EQ(cut.tool_calls.size(), 1u);
    EXPECT_EQ(cut.tool_calls[0].arguments, "{}");
    const ReplyDelta cut2 = split(ReplyFormat::think, "assistant\n", "<tool_call>\n{\"na");
    EXPECT_TRUE(cut2.tool_calls.empty());
    EXPECT_EQ(cut2.content, "<tool_call>\n{\"na");
}

// Gemma 4: the thought channel and its call syntax (strings between <|"|>, keys bare).
TEST(Reply, Gemma4ThoughtAndCalls) {
    const std::string prompt = "<|turn>user\nHi<turn|>\n<|turn>model\n";
    const ReplyDelta d = split(ReplyFormat::gemma4, prompt,
                               "<|channel>thought\nThe user wants weather.<channel|>Checking."
                               "<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,"
                               "opts:{metric:true,tags:[<|\"|>a<|\"|>,2]}}<tool_call|>",
                               {"<|channel>", "<|tool_call>"});
    EXPECT_EQ(d.reasoning, "The user wants weather.");
    EXPECT_EQ(d.content, "Checking.");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(d.tool_calls[0].arguments),
              json::parse(R"({"city": "Paris, FR", "days": 3,
                              "opts": {"metric": true, "tags": ["a", 2]}})"));

    // Thinking off: the prompt ends with an empty thought channel; all is the answer.
    const ReplyDelta off =
        split(ReplyFormat::gemma4, prompt + "<|channel>thought\n<channel|>", "Hello there.");
    EXPECT_EQ(off.reasoning, "");
    EXPECT_EQ(off.content, "Hello there.");

    const ReplyDelta bad = split(ReplyFormat::gemma4, prompt, "<|tool_call>call:f{x:}<tool_call|>");
    EXPECT_TRUE(bad.tool_calls.empty());
    EXPECT_EQ(bad.content, "<|tool_call>call:f{x:}<tool_call|>");
}

}  // namespace
