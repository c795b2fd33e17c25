// gpt-oss's harmony replies through the server: the response shapes llama-server gives (the
// analysis channel in reasoning_content, the final one in content, tool calls in tool_calls with
// finish_reason "tool_calls"); the server and `memwall chat`'s session on gpt-oss-tiny with the
// published gpt-oss template (the tiny model's 512-token vocabulary has no harmony tokens, so
// its reply is plain text: it must come back whole as content, streamed and not).
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

#include "chat/harmony.h"
#include "server/openai.h"
#include "support/chat_session.h"
#include "support/test_server.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

TEST(ServerHarmony, ResponsesSplitReasoningContentAndToolCalls) {
    mw::chat::HarmonyParser p;
    mw::chat::ReplyDelta reply = p.push(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
        "<|message|>Answer.");
    const mw::chat::ReplyDelta rest = p.finish();
    reply.content += rest.content;
    json r = mw::server::chat_response_split("id1", 7, "m", reply, mw::server::Finish::stop, {});
    const json& m = r["choices"][0]["message"];
    EXPECT_EQ(m["role"], "assistant");
    EXPECT_EQ(m["content"], "Answer.");
    EXPECT_EQ(m["reasoning_content"], "Think.");
    EXPECT_FALSE(m.contains("tool_calls"));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");

    mw::chat::ReplyDelta call;
    call.reasoning = "Need weather.";
    call.tool_calls.push_back({"get_weather", "{\"city\": \"Paris\"}"});
    r = mw::server::chat_response_split("id2", 7, "m", call, mw::server::Finish::stop, {});
    const json& c = r["choices"][0]["message"];
    EXPECT_TRUE(c["content"].is_null());
    ASSERT_EQ(c["tool_calls"].size(), 1u);
    EXPECT_EQ(c["tool_calls"][0]["type"], "function");
    EXPECT_EQ(c["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(c["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");
    EXPECT_TRUE(c["tool_calls"][0]["id"].is_string());
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");

    const json chunk = mw::server::chat_chunk_split("id2", 7, "m", call, 3);
    const json& d = chunk["choices"][0]["delta"];
    EXPECT_EQ(d["reasoning_content"], "Need weather.");
    EXPECT_FALSE(d.contains("content"));
    EXPECT_EQ(d["tool_calls"][0]["index"], 3);
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
}

// The template's keyword arguments: chat_template_kwargs as given, reasoning_effort among
// them unless they set it; an answer's reasoning_content kept for the template.
TEST(ServerHarmony, RequestsCarryTemplateVariables) {
    using mw::server::parse_completion_request;
    const auto parse = [](const std::string& body) {
        return parse_completion_request(body, true, {}, {});
    };
    auto r = parse(R"({"messages": [{"role": "user", "content": "Hi"},
                                    {"role": "assistant", "content": "A", "reasoning_content": "R"},
                                    {"role": "user", "content": "Q"}],
                      "reasoning_effort": "high",
                      "chat_template_kwargs": {"enable_thinking": false}})");
    EXPECT_EQ(r.template_variables, json::parse(R"({"enable_thinking": false,
                                                    "reasoning_effort": "high"})"));
    EXPECT_EQ(r.messages[1]["reasoning_content"], "R");
    r = parse(R"({"messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": "low",
                  "chat_template_kwargs": {"reasoning_effort": "medium"}})");
    EXPECT_EQ(r.template_variables["reasoning_effort"], "medium");
    const auto refused = [&](const std::string& body, const std::string& param) {
        try {
            parse(body);
            ADD_FAILURE() << "accepted " << body;
        } catch (const mw::server::ApiError& e) {
            EXPECT_EQ(e.status, 400);
            EXPECT_EQ(e.param, param) << e.message;
        }
    };
    refused(R"({"messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": "max"})",
            "reasoning_effort");
    refused(R"({"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": [1]})",
            "chat_template_kwargs");
    refused(R"({"messages": [{"role": "assistant", "content": "A", "reasoning_content": 5}]})",
            "messages[0].reasoning_content");
}

std::vector<json> sse_events(const std::string& body) {
    std::vector<json> events;
    size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const size_t end = body.find("\n\n", at);
        const std::string data = body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") break;
        events.push_back(json::parse(data));
    }
    return events;
}

TEST(ServerHarmony, GptOssTinyWithThePublishedTemplate) {
    const std::string tmpl = mw::test::read_text(std::string(MEMWALL_TESTS_DIR) +
                                                 "/data/chat-templates/templates/"
                                                 "openai-gpt-oss-120b.jinja");
    mw_server_params sp = mw_server_default_params();
    sp.chat_template = tmpl.c_str();
    mw::test::Server s(sp, 2, 1024, "reference/models/gpt-oss-tiny-F16.gguf");
    const char* body = R"({"messages": [{"role": "developer", "content": "Be brief."},
                                        {"role": "user", "content": "Tell a story."}],
                           "max_tokens": 12, "temperature": 0})";
    int status = 0;
    const json r = mw::test::post(s, "/v1/chat/completions", body, &status);
    ASSERT_EQ(status, 200) << r.dump();
    const json& m = r["choices"][0]["message"];
    ASSERT_TRUE(m["content"].is_string()) << r.dump();
    EXPECT_FALSE(m["content"].get<std::string>().empty());
    EXPECT_FALSE(m.contains("reasoning_content")) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    // The harmony prompt: system, developer and user messages, then "<|start|>assistant".
    EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 100);

    json streamed = json::parse(body);
    streamed["stream"] = true;
    auto c = s.client();
    auto res = c.Post("/v1/chat/completions", streamed.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    std::string text;
    for (const json& e : sse_events(res->body)) {
        if (e["choices"].empty()) continue;
        const json& delta = e["choices"][0]["delta"];
        EXPECT_FALSE(delta.contains("reasoning_content")) << e.dump();
        if (delta.contains("content")) text += delta["content"].get<std::string>();
    }
    EXPECT_EQ(text, m["content"].get<std::string>());

    // chat_template_kwargs reach the template: a model_identity of 120 bytes, a longer prompt; one
    // that names a variable the server sets is a 400 naming it.
    json identity = json::parse(body);
    identity["chat_template_kwargs"] = {{"model_identity", std::string(120, 'x')}};
    const json r2 = mw::test::post(s, "/v1/chat/completions", identity.dump(), &status);
    ASSERT_EQ(status, 200) << r2.dump();
    EXPECT_GT(r2["usage"]["prompt_tokens"].get<int>(), r["usage"]["prompt_tokens"].get<int>());
    identity["chat_template_kwargs"] = {{"messages", json::array()}};
    const json r3 = mw::test::post(s, "/v1/chat/completions", identity.dump(), &status);
    EXPECT_EQ(status, 400) << r3.dump();
    EXPECT_NE(r3.dump().find("messages"), std::string::npos) << r3.dump();
}

// `memwall chat`'s session on the same model and template: the answer streamed is the reply's
// text, the second turn reuses the first turn's prompt from the cache.
TEST(ServerHarmony, ChatSessionWithThePublishedTemplate) {
    mw::test::ChatSession chat("reference/models/gpt-oss-tiny-F16.gguf",
                               "openai-gpt-oss-120b.jinja", 2048,
                               [](mw_chat_params& p) { p.system_prompt = "Be brief."; });
    ASSERT_EQ(chat.status(), MW_OK) << mw_last_error();
    const auto r1 = chat.send("Tell a story.");
    const auto r2 = chat.send("Another one.");
    EXPECT_FALSE(r1.text.empty());
    EXPECT_FALSE(r2.text.empty());
    EXPECT_GT(r1.reply.n_prompt_tokens, 100);
    EXPECT_GE(r2.reply.n_reused_tokens, r1.reply.n_prompt_tokens);
}

}  // namespace
