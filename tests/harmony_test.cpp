// gpt-oss's harmony replies split into reasoning, answer and tool calls (chat/harmony.h), from
// crafted token text as gpt-oss writes it after the prompt's "<|start|>assistant": whole, and
// cut at every byte (a stream never shows part of a marker, and the pieces add up to the same).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "chat/harmony.h"
#include "support/test_support.h"

namespace {

using mw::chat::HarmonyParser;
using mw::chat::ReplyDelta;

void add(ReplyDelta& total, const ReplyDelta& d) {
    total.reasoning += d.reasoning;
    total.content += d.content;
    for (const auto& c : d.tool_calls) total.tool_calls.push_back(c);
}

ReplyDelta parse_whole(std::string_view text) {
    HarmonyParser p;
    ReplyDelta total = p.push(text);
    add(total, p.finish());
    return total;
}

// Fed in pieces of `step` bytes; with `no_markers`, no piece of reasoning or content shows part
// of a marker.
ReplyDelta parse_in_pieces(std::string_view text, size_t step, bool no_markers) {
    HarmonyParser p;
    ReplyDelta total;
    for (size_t i = 0; i < text.size(); i += step) {
        const ReplyDelta d = p.push(text.substr(i, step));
        for (const std::string* s : {&d.reasoning, &d.content}) {
            if (!no_markers) break;
            EXPECT_EQ(s->find("<|"), std::string::npos) << *s;
            EXPECT_EQ(s->find("|>"), std::string::npos) << *s;
        }
        add(total, d);
    }
    add(total, p.finish());
    return total;
}

void expect_same(const ReplyDelta& a, const ReplyDelta& b) {
    EXPECT_EQ(a.reasoning, b.reasoning);
    EXPECT_EQ(a.content, b.content);
    ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
    for (size_t i = 0; i < a.tool_calls.size(); ++i) {
        EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name);
        EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments);
    }
}

ReplyDelta parse_every_way(std::string_view text, bool no_markers = true) {
    const ReplyDelta whole = parse_whole(text);
    for (size_t step = 1; step <= 12; ++step) {
        SCOPED_TRACE(fmt::format("pieces of {} bytes", step));
        expect_same(parse_in_pieces(text, step, no_markers), whole);
    }
    return whole;
}

TEST(Harmony, ReasoningThenAnswer) {
    // <|return|> ends generation: the stream stops before it.
    const ReplyDelta d = parse_every_way(
        "<|channel|>analysis<|message|>User asks 17*3. That is 51.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>17 × 3 = **51**.");
    EXPECT_EQ(d.reasoning, "User asks 17*3. That is 51.");
    EXPECT_EQ(d.content, "17 × 3 = **51**.");
    EXPECT_TRUE(d.tool_calls.empty());
}

TEST(Harmony, AnswerWithoutReasoningAndReturnPushed) {
    const ReplyDelta d =
        parse_every_way("<|channel|>final<|message|>Hi!\nHow can I help?<|return|>");
    EXPECT_EQ(d.reasoning, "");
    EXPECT_EQ(d.content, "Hi!\nHow can I help?");
}

TEST(Harmony, ToolCallRecipientBeforeTheChannel) {
    // As the template writes earlier calls; <|call|> ends generation, so finish() closes it.
    const ReplyDelta d = parse_every_way(
        "<|channel|>analysis<|message|>Need the weather tool.<|end|>"
        "<|start|>assistant to=functions.get_current_weather<|channel|>commentary json"
        "<|message|>{\"location\": \"Paris, France\"}");
    EXPECT_EQ(d.reasoning, "Need the weather tool.");
    EXPECT_EQ(d.content, "");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "get_current_weather");
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"location\": \"Paris, France\"}");
}

TEST(Harmony, ToolCallRecipientAfterTheChannelWithConstrain) {
    const ReplyDelta d = parse_every_way(
        "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
        "{\"q\":\"a <|b\"}<|call|>");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "search");
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"q\":\"a <|b\"}");
    EXPECT_EQ(d.content, "");
}

TEST(Harmony, PreambleIsAnswerAndBuiltinToolsKeepTheirRecipient) {
    const ReplyDelta d = parse_every_way(
        "<|channel|>commentary<|message|>Let me look that up.<|end|>"
        "<|start|>assistant<|channel|>analysis to=browser.search code<|message|>"
        "{\"query\": \"memwall\"}<|call|>");
    EXPECT_EQ(d.content, "Let me look that up.");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "browser.search");
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"query\": \"memwall\"}");
}

TEST(Harmony, TextThatIsNotAMarkerIsKept) {
    const ReplyDelta d =
        parse_every_way("<|channel|>final<|message|>Use <|end in HTML? a<b, x <|endx|> <", false);
    EXPECT_EQ(d.content, "Use <|end in HTML? a<b, x <|endx|> <");
}

TEST(Harmony, NotHarmonyIsTheAnswer) {
    EXPECT_EQ(parse_every_way("Just text, no channels.").content, "Just text, no channels.");
    std::string long_text(2000, 'x');
    EXPECT_EQ(parse_every_way(long_text).content, long_text);
    // A header past the bound is text however the reply is cut (whole, as the server's
    // non-streamed answer parses it, or in pieces).
    const std::string late = long_text + "<|channel|>final<|message|>y";
    EXPECT_EQ(parse_every_way(late, false).content, late);
    for (size_t n : {505u, 510u, 512u}) {  // just within it, the marker arriving in pieces
        const ReplyDelta d = parse_every_way(std::string(n, 'h') + "<|message|>z");
        EXPECT_EQ(d.content, "z") << n;
    }
    EXPECT_EQ(parse_every_way(std::string(513, 'h') + "<|message|>z", false).content.size(),
              513u + 12u);
    // A reply cut off inside a header shows nothing of it.
    const ReplyDelta cut = parse_every_way("<|channel|>analysis<|message|>a<|end|><|start|>assi");
    EXPECT_EQ(cut.reasoning, "a");
    EXPECT_EQ(cut.content, "");
}

// Random texts of markers, marker fragments and words: cutting them anywhere changes nothing.
TEST(Harmony, RandomTextsSplitTheSameInAnyPieces) {
    const char* const kParts[] = {"<|start|>",
                                  "<|channel|>",
                                  "<|message|>",
                                  "<|end|>",
                                  "<|return|>",
                                  "<|call|>",
                                  "<|constrain|>",
                                  "analysis",
                                  "final",
                                  "commentary",
                                  " to=functions.f",
                                  "assistant",
                                  "<|",
                                  "|>",
                                  "<",
                                  "x",
                                  " ",
                                  "{\"a\": 1}",
                                  "é"};
    uint64_t state = 12345;
    const auto next = [&](uint64_t n) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (state >> 33) % n;
    };
    for (int round = 0; round < 300; ++round) {
        std::string text;
        for (uint64_t i = 0, n = 1 + next(40); i < n; ++i) text += kParts[next(std::size(kParts))];
        SCOPED_TRACE(text);
        const ReplyDelta whole = parse_whole(text);
        HarmonyParser p;
        ReplyDelta pieces;
        for (size_t at = 0; at < text.size();) {
            const size_t n = 1 + next(7);
            add(pieces, p.push(std::string_view(text).substr(at, n)));
            at += n;
        }
        add(pieces, p.finish());
        expect_same(pieces, whole);
    }
}

TEST(Harmony, TheParserStartsAfreshAfterFinish) {
    HarmonyParser p;
    p.push("<|channel|>analysis<|message|>x");
    p.finish();
    ReplyDelta d = p.push("<|channel|>final<|message|>y");
    add(d, p.finish());
    EXPECT_EQ(d.reasoning, "");
    EXPECT_EQ(d.content, "y");
}

TEST(Harmony, TemplatesThatWriteHarmony) {
    const std::string dir = std::string(MEMWALL_TESTS_DIR) + "/data/chat-templates/templates/";
    EXPECT_TRUE(
        mw::chat::is_harmony_template(mw::test::read_text(dir + "openai-gpt-oss-120b.jinja")));
    for (const char* other : {"Qwen3.5-4B.jinja", "google-gemma-4-31B-it.jinja",
                              "LFM2.5-8B-A1B.jinja", "HuggingFaceTB-SmolLM3-3B.jinja"})
        EXPECT_FALSE(mw::chat::is_harmony_template(mw::test::read_text(dir + other))) << other;
}

}  // namespace
