// Reasoning and tool calls through the server for the template families that mark them up
// (chat/reply.h): requests with `tools` checked and rendered, replies split into
// reasoning_content and content, streamed and not. On qwen35-tiny with Qwen3.5's published
// template, whose generation prompt opens "<think>": the tiny model's reply is random text
// without a closing tag, so all of it is reasoning, and with enable_thinking false all of it
// is the answer.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>

#include "server/openai.h"
#include "support/chat_session.h"
#include "support/test_server.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

const char* kWeatherTool = R"({"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city.", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

TEST(ServerReply, ToolsInRequestsChecked) {
    const auto parse = [](const std::string& body) {
        return mw::server::parse_completion_request(body, true, {}, {});
    };
    const std::string msgs = R"("messages": [{"role": "user", "content": "Hi"}])";
    auto r = parse("{" + msgs + ", \"tools\": [" + kWeatherTool + "]}");
    ASSERT_TRUE(r.tools.is_array());
    EXPECT_EQ(r.tools[0]["function"]["name"], "get_weather");
    // The client's key order, not sorted: the template prints the schema as given.
    EXPECT_EQ(r.tools[0].begin().key(), "type");
    EXPECT_EQ(r.tools[0]["function"].begin().key(), "name");
    // An earlier call's arguments too: the template prints them with tojson.
    r = parse(R"({"messages": [{"role": "user", "content": "Hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "f", "arguments": "{\"unit\": \"C\", \"city\": \"Paris\"}"}}]}]})");
    EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"].dump(),
              R"({"unit":"C","city":"Paris"})");
    r = parse("{" + msgs + ", \"tools\": [" + kWeatherTool +
              "], \"tool_choice\": \"none\", \"parallel_tool_calls\": false}");
    EXPECT_TRUE(r.tools.is_null());  // "none": the template is not told of them
    r = parse("{" + msgs + ", \"tools\": []}");
    EXPECT_TRUE(r.tools.is_null());
    const auto refused = [&](const std::string& extra, const std::string& param) {
        const std::string body = "{" + msgs + ", " + extra + "}";
        try {
            parse(body);
            ADD_FAILURE() << "accepted " << body;
        } catch (const mw::server::ApiError& e) {
            EXPECT_EQ(e.status, 400);
            EXPECT_EQ(e.param, param) << e.message;
        }
    };
    refused(R"("tools": [1])", "tools[0]");
    refused(R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])", "tools[0].type");
    refused(R"("tools": [{"type": "function"}])", "tools[0].function");
    refused(R"("tools": [{"type": "function", "function": {"name": ""}}])",
            "tools[0].function.name");
    refused(R"("tools": [{"function": {"name": "f", "parameters": [1]}}])",
            "tools[0].function.parameters");
    refused(R"("tool_choice": {"type": "function", "function": {"name": "f"}})", "tool_choice");
    refused(R"("tool_choice": 3)", "tool_choice");
    refused(R"("parallel_tool_calls": "yes")", "parallel_tool_calls");
}

std::string sse_field(const std::string& body, const char* field) {
    std::string text;
    size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const size_t end = body.find("\n\n", at);
        const std::string data = body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") break;
        const json e = json::parse(data);
        if (e.contains("choices") && !e["choices"].empty() &&
            e["choices"][0]["delta"].contains(field))
            text += e["choices"][0]["delta"][field].get<std::string>();
    }
    return text;
}

TEST(ServerReply, Qwen35TinyReasoningAndTools) {
    const std::string tmpl = mw::test::read_text(std::string(MEMWALL_TESTS_DIR) +
                                                 "/data/chat-templates/templates/Qwen3.5-4B.jinja");
    mw_server_params sp = mw_server_default_params();
    sp.chat_template = tmpl.c_str();
    mw::test::Server s(sp, 2, 2048, "reference/models/qwen35-tiny-F16.gguf");
    json body = json::parse(R"({"messages": [{"role": "user", "content": "Tell a story."}],
                                "max_tokens": 12, "temperature": 0})");
    int status = 0;
    const json r = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
    ASSERT_EQ(status, 200) << r.dump();
    const json& m = r["choices"][0]["message"];
    ASSERT_TRUE(m.contains("reasoning_content")) << r.dump();
    const std::string reasoning = m["reasoning_content"];
    EXPECT_FALSE(reasoning.empty());
    EXPECT_EQ(m["content"], "") << r.dump();

    body["stream"] = true;
    auto c = s.client();
    auto res = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_EQ(sse_field(res->body, "reasoning_content"), reasoning);
    EXPECT_EQ(sse_field(res->body, "content"), "");

    // Thinking off: the same model's reply is all answer.
    body["stream"] = false;
    body["chat_template_kwargs"] = {{"enable_thinking", false}};
    const json off = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
    ASSERT_EQ(status, 200) << off.dump();
    EXPECT_FALSE(off["choices"][0]["message"].contains("reasoning_content")) << off.dump();
    EXPECT_FALSE(off["choices"][0]["message"]["content"].get<std::string>().empty());

    // Tools reach the template (the system block lists them: a longer prompt); "none" leaves
    // them out.
    body.erase("chat_template_kwargs");
    const int plain_tokens = r["usage"]["prompt_tokens"];
    body["tools"] = json::array({json::parse(kWeatherTool)});
    const json with = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
    ASSERT_EQ(status, 200) << with.dump();
    EXPECT_GT(with["usage"]["prompt_tokens"].get<int>(), plain_tokens + 20);
    body["tool_choice"] = "none";
    const json none = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
    ASSERT_EQ(status, 200) << none.dump();
    EXPECT_EQ(none["usage"]["prompt_tokens"].get<int>(), plain_tokens);

    // An earlier call and its result render (the conversation a client sends back).
    json turn = json::parse(R"({"max_tokens": 4, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "reasoning_content": "Need it.",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C"}]})");
    turn["tools"] = json::array({json::parse(kWeatherTool)});
    const json again = mw::test::post(s, "/v1/chat/completions", turn.dump(), &status);
    EXPECT_EQ(status, 200) << again.dump();
}

// A template that does not render tools: a request with tools is refused, naming the field.
TEST(ServerReply, ToolsRefusedWhereTheTemplateHasNone) {
    mw_server_params sp = mw_server_default_params();
    sp.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    mw::test::Server s(sp, 1, 512);
    json body =
        json::parse(R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})");
    body["tools"] = json::array({json::parse(kWeatherTool)});
    int status = 0;
    const json r = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
    EXPECT_EQ(status, 400) << r.dump();
    EXPECT_EQ(r["error"]["param"], "tools") << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find("does not render tools"),
              std::string::npos);
}

}  // namespace

// `memwall chat`'s session (the C API): the answer to on_text, the reasoning to on_reasoning;
// template_kwargs reach the template.
TEST(ServerReply, ChatSessionStreamsReasoningApart) {
    const auto session = [](const char* template_kwargs) {
        return [template_kwargs](mw_chat_params& p) { p.template_kwargs = template_kwargs; };
    };
    const char* model = "reference/models/qwen35-tiny-F16.gguf";
    mw::test::ChatSession thinking(model, "Qwen3.5-4B.jinja", 1024, session(nullptr));
    const auto t = thinking.send("Tell a story.");
    EXPECT_FALSE(t.reasoning.empty());
    EXPECT_EQ(t.text, "");
    mw::test::ChatSession plain(model, "Qwen3.5-4B.jinja", 1024,
                                session(R"({"enable_thinking": false})"));
    const auto a = plain.send("Tell a story.");
    EXPECT_EQ(a.reasoning, "");
    EXPECT_FALSE(a.text.empty());
    mw::test::ChatSession bad(model, "Qwen3.5-4B.jinja", 1024, session("[1]"));
    EXPECT_EQ(bad.status(), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("mw_chat_params.template_kwargs"),
              std::string::npos)
        << mw_last_error();
}

// The server's defaults for the template (a request's chat_template_kwargs win) and
// --reasoning-format none (the whole reply in content).
TEST(ServerReply, ServerTemplateKwargsAndReasoningFormatNone) {
    const std::string tmpl = mw::test::read_text(std::string(MEMWALL_TESTS_DIR) +
                                                 "/data/chat-templates/templates/Qwen3.5-4B.jinja");
    json body = json::parse(R"({"messages": [{"role": "user", "content": "Tell a story."}],
                                "max_tokens": 8, "temperature": 0})");
    int status = 0;
    {
        mw_server_params sp = mw_server_default_params();
        sp.chat_template = tmpl.c_str();
        sp.template_kwargs = R"({"enable_thinking": false})";
        mw::test::Server s(sp, 1, 1024, "reference/models/qwen35-tiny-F16.gguf");
        const json off = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
        ASSERT_EQ(status, 200) << off.dump();
        EXPECT_FALSE(off["choices"][0]["message"].contains("reasoning_content")) << off.dump();
        body["chat_template_kwargs"] = {{"enable_thinking", true}};
        const json on = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
        ASSERT_EQ(status, 200) << on.dump();
        EXPECT_TRUE(on["choices"][0]["message"].contains("reasoning_content")) << on.dump();
        body.erase("chat_template_kwargs");
    }
    {
        mw_server_params sp = mw_server_default_params();
        sp.chat_template = tmpl.c_str();
        sp.reasoning_format = MW_REASONING_NONE;
        mw::test::Server s(sp, 1, 1024, "reference/models/qwen35-tiny-F16.gguf");
        const json raw = mw::test::post(s, "/v1/chat/completions", body.dump(), &status);
        ASSERT_EQ(status, 200) << raw.dump();
        EXPECT_FALSE(raw["choices"][0]["message"].contains("reasoning_content")) << raw.dump();
        EXPECT_FALSE(raw["choices"][0]["message"]["content"].get<std::string>().empty());
    }
    mw_server_params sp = mw_server_default_params();
    sp.template_kwargs = "nope";
    mw_model* model = nullptr;
    const std::string path = mw::test::shared_path("models/stories260K.gguf");
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK);
    mw_server* server = nullptr;
    EXPECT_EQ(mw_server_create(model, nullptr, &sp, &server), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("mw_server_params.template_kwargs"),
              std::string::npos)
        << mw_last_error();
    mw_model_free(model);
}
