// The HTTP server in-process, on loopback (stories260K, 4 slots): OpenAI's shapes, streaming,
// usage, seeds, stop strings; every bad request a 4xx with OpenAI's error JSON naming the
// problem, after which the server still answers; the API key; a full queue; a prompt longer
// than a slot; cancellation freeing the slot; and the greedy text of 4 concurrent requests equal
// to the text each gets alone.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "memwall.h"
#include "support/test_server.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;

using mw::test::post;
using mw::test::Server;

std::string completion_text(const Server& s, const json& body) {
    int status = 0;
    const json r = post(s, "/v1/completions", body.dump(), &status);
    EXPECT_EQ(status, 200) << r.dump();
    return r.is_object() && r.contains("choices") ? r["choices"][0]["text"].get<std::string>() : "";
}

TEST(Server, CompletionAndChatHaveOpenAIsShape) {
    Server s;
    int status = 0;
    json r = post(s, "/v1/completions",
                  R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})", &status);
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["object"], "text_completion");
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["completion_tokens"], 12);
    EXPECT_EQ(r["usage"]["prompt_tokens"], 5);  // BOS + 4 (the reference case's tokens)
    EXPECT_FALSE(r["choices"][0]["text"].get<std::string>().empty());

    r = post(s, "/v1/chat/completions",
             R"({"messages": [{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "Tell a story."}],
                 "max_completion_tokens": 8, "temperature": 0})",
             &status);
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["object"], "chat.completion");
    EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
    EXPECT_EQ(r["usage"]["total_tokens"].get<int>(),
              r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());

    auto c = s.client();
    auto models = c.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 200);
    EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "memwall");
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto metrics = c.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("memwall_generated_tokens_total"), std::string::npos);
    EXPECT_NE(metrics->body.find("memwall_kv_cache_used_positions"), std::string::npos);
    auto page = c.Get("/");
    ASSERT_TRUE(page);
    EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
}

TEST(Server, GreedyTextIsTheSameAloneAndFourAtOnce) {
    Server s;
    const std::vector<std::string> prompts = {"Once upon a time", "The little dog",
                                              "Lily wanted to", "One day, a big"};
    std::vector<std::string> alone;
    for (const std::string& p : prompts) {
        alone.push_back(
            completion_text(s, {{"prompt", p}, {"max_tokens", 24}, {"temperature", 0}}));
    }
    std::vector<std::future<std::string>> together;
    for (const std::string& p : prompts) {
        together.push_back(std::async(std::launch::async, [&, p] {
            return completion_text(s, {{"prompt", p}, {"max_tokens", 24}, {"temperature", 0}});
        }));
    }
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(together[i].get(), alone[i]) << i;
}

TEST(Server, PacingSpacesTheStepsOfEverySlot) {
    mw_pacer_params pp = mw_pacer_default_params();
    pp.max_tps = 40;  // steps 25 ms apart; unpaced the tiny model takes well under 1 ms a step
    mw_pacer* pacer = nullptr;
    ASSERT_EQ(mw_pacer_create(&pp, &pacer), MW_OK) << mw_last_error();
    {
        mw_server_params sp = mw_server_default_params();
        sp.pacer = pacer;
        Server s(sp);
        const auto start = std::chrono::steady_clock::now();
        int status = 0;
        const json r =
            post(s, "/v1/completions",
                 R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})", &status);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        ASSERT_EQ(status, 200) << r.dump();
        ASSERT_EQ(r["usage"]["completion_tokens"], 12);
        // A prompt step and 11 decode steps after it, each at least 25 ms after the one before.
        EXPECT_GE(ms, 11 * 25.0 * 0.9);
    }
    EXPECT_NE(std::string(mw_pacer_summary(pacer)).find("tok/s"), std::string::npos)
        << mw_pacer_summary(pacer);
    mw_pacer_free(pacer);
}

TEST(Server, SameSeedSameTextAndStopStrings) {
    Server s;
    const json body = {
        {"prompt", "Once upon a time"}, {"max_tokens", 30}, {"seed", 1234}, {"temperature", 1.0}};
    EXPECT_EQ(completion_text(s, body), completion_text(s, body));
    // A stop string cut from the greedy text ends the reply before it.
    const std::string full = completion_text(
        s, {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}});
    ASSERT_GT(full.size(), 12u);
    const std::string stop = full.substr(8, 4);
    int status = 0;
    const json r = post(s, "/v1/completions",
                        json{{"prompt", "Once upon a time"},
                             {"max_tokens", 30},
                             {"temperature", 0},
                             {"stop", {stop}}}
                            .dump(),
                        &status);
    ASSERT_EQ(status, 200);
    EXPECT_EQ(r["choices"][0]["text"], full.substr(0, full.find(stop)));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST(Server, StreamsServerSentEventsWithUsage) {
    Server s;
    auto c = s.client();
    std::string body;
    auto res = c.Post("/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true,
                          "max_tokens": 10, "temperature": 0,
                          "stream_options": {"include_usage": true}})",
                      "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    std::vector<json> events;
    size_t at = 0;
    bool done = false;
    while ((at = res->body.find("data: ", at)) != std::string::npos) {
        const size_t end = res->body.find("\n\n", at);
        const std::string data = res->body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") {
            done = true;
            break;
        }
        events.push_back(json::parse(data));
    }
    ASSERT_TRUE(done);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
    std::string text;
    std::string finish;
    for (const json& e : events) {
        if (e["choices"].empty()) continue;
        const json& ch = e["choices"][0];
        if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
        if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    }
    EXPECT_EQ(finish, "length");
    EXPECT_TRUE(events.back()["choices"].empty());
    EXPECT_EQ(events.back()["usage"]["completion_tokens"], 10);
    // The same request without streaming gives the same text.
    int status = 0;
    const json r = post(s, "/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 10,
                            "temperature": 0})",
                        &status);
    EXPECT_EQ(r["choices"][0]["message"]["content"], text);
}

TEST(Server, BadRequestsGetA4xxNamingTheProblem) {
    mw_server_params sp = mw_server_default_params();
    sp.max_body_bytes = 1 << 20;
    Server s(sp);
    struct Bad {
        const char* path;
        std::string body;
        int status;
        const char* says;
    };
    const std::string huge_prompt(20000, 'a');
    // 60 k levels of nesting (120 KB) overflowed the stack in a recursive copy (issue 39).
    const std::string deep = std::string(60000, '[') + std::string(60000, ']');
    const std::string deep_calls =
        R"({"messages": [{"role": "assistant", "content": null, "tool_calls": )" + deep + "}]}";
    const std::string deep_arguments =
        R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": )"
        R"("function", "function": {"name": "f", "arguments": )" +
        json(deep).dump() + "}}]}]}";
    const std::vector<Bad> cases = {
        {"/v1/completions", "{\"prompt\": \"hi\"", 400, "not valid JSON (at byte"},
        {"/v1/completions", "[1, 2]", 400, "must be a JSON object"},
        {"/v1/completions", "{}", 400, "'prompt' is required"},
        {"/v1/completions", R"({"prompt": 5})", 400, "'prompt' must be a string"},
        {"/v1/completions", R"({"prompt": "a", "max_tokens": -5})", 400, "'max_tokens' is -5"},
        {"/v1/completions", R"({"prompt": "a", "max_tokens": 1e300})", 400, "max_tokens"},
        {"/v1/completions", R"({"prompt": "a", "max_tokens": "10"})", 400, "must be an integer"},
        {"/v1/completions", R"({"prompt": "a", "temperature": -1})", 400, "'temperature' is -1"},
        {"/v1/completions", R"({"prompt": "a", "temperature": "hot"})", 400, "must be a number"},
        {"/v1/completions", R"({"prompt": "a", "top_p": 7})", 400, "'top_p' is 7"},
        {"/v1/completions", R"({"prompt": "a", "stream": "yes"})", 400, "must be a boolean"},
        {"/v1/completions", R"({"prompt": "a", "stop": [1]})", 400, "stop[0] must be a string"},
        {"/v1/completions", R"({"prompt": "a", "best_of": 3, "suffix": "x"})", 400,
         "unsupported fields for /v1/completions: 'best_of', 'suffix'"},
        {"/v1/completions", R"({"prompt": "a", "n": 2})", 400, "n"},
        {"/v1/completions", json{{"prompt", huge_prompt}}.dump(), 400, "more than the"},
        {"/v1/chat/completions", R"({"messages": []})", 400, "at least one message"},
        {"/v1/chat/completions", R"({"messages": "hi"})", 400, "must be an array"},
        {"/v1/chat/completions", R"({"messages": [{"content": "hi"}]})", 400, "has no 'role'"},
        {"/v1/chat/completions", R"({"messages": [{"role": "", "content": "hi"}]})", 400,
         "role is empty"},
        {"/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "hi"}]})", 400,
         "'wizard' is not one of"},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 3}]})", 400,
         "content must be a string"},
        {"/v1/chat/completions",
         R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", 400,
         "not supported (text only)"},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})",
         400, "'tools' must be an array"},
        {"/v1/chat/completions",
         R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", 400,
         "cannot force a call"},
        {"/v1/chat/completions", deep_calls, 400, "nests deeper than 128 levels"},
        {"/v1/chat/completions", deep_arguments, 400, "nests deeper than 128 levels"},
        {"/v1/completions", std::string(2 << 20, ' '), 413, "larger than the server's limit"},
        {"/v1/nothing", "{}", 404, "no route"},
    };
    for (const Bad& b : cases) {
        int status = 0;
        const json r = post(s, b.path, b.body, &status);
        EXPECT_EQ(status, b.status) << b.body.substr(0, 200);
        ASSERT_TRUE(r.is_object() && r.contains("error"))
            << b.body.substr(0, 200) << " -> " << r.dump();
        const std::string message = r["error"]["message"];
        EXPECT_NE(message.find(b.says), std::string::npos)
            << b.body.substr(0, 200) << " -> " << message;
        EXPECT_TRUE(r["error"]["type"].is_string());
        auto c = s.client();
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering after " << b.body.substr(0, 100);
        EXPECT_EQ(health->status, 200);
    }
}

// fuzz_openai_request's findings: a byte that is not UTF-8 in a key came back in the error's
// message, which then could not be written as JSON; a number beyond a double escaped as
// nlohmann's out_of_range instead of a 400.
TEST(Server, ABodyThatIsNotUtf8GetsA400ThatIsJson) {
    Server s;
    for (const std::string& body :
         {std::string("{\"messages\": [{\"role\": \"user\", \"conten\x96\": \"Hi\"}]}"),
          std::string("{\"prompt\": \"a\xff\xfe\", \"max_tokens\": 4}"),
          // and its second: a number beyond a double is not a parse_error to nlohmann
          std::string("{\"prompt\": \"a\", \"max_tokens\": 11e308}")}) {
        for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
            int status = 0;
            const json r = post(s, path, body, &status);
            EXPECT_EQ(status, 400)
                << path << " " << r.dump(-1, ' ', false, json::error_handler_t::replace);
            ASSERT_TRUE(r.is_object() && r.contains("error")) << path;
            EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
        }
    }
    int status = 0;
    post(s, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})", &status);
    EXPECT_EQ(status, 200);
}

TEST(Server, ApiKeyIsRequiredOnEveryRouteButHealthAndThePage) {
    mw_server_params sp = mw_server_default_params();
    sp.api_key = "sesame";
    Server s(sp);
    auto c = s.client();
    auto none = c.Get("/v1/models");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(json::parse(none->body)["error"]["code"], "invalid_api_key");
    auto wrong = c.Get("/metrics", {{"Authorization", "Bearer sesamf"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);
    int status = 0;
    post(s, "/v1/completions", R"({"prompt": "a", "max_tokens": 1})", &status);
    EXPECT_EQ(status, 401);
    auto right = c.Get("/v1/models", {{"Authorization", "Bearer sesame"}});
    ASSERT_TRUE(right);
    EXPECT_EQ(right->status, 200);
    EXPECT_EQ(c.Get("/health")->status, 200);
    EXPECT_EQ(c.Get("/")->status, 200);
}

TEST(Server, FullQueueAnswers503WithRetryAfter) {
    mw_server_params sp = mw_server_default_params();
    sp.queue_max = 0;  // no waiting: a request beyond the slots is refused
    Server s(sp, 1, 4096);
    // One long request holds the only slot (thousands of tokens: the tiny model decodes fast).
    auto long_one = std::async(std::launch::async, [&] {
        int status = 0;
        post(s, "/v1/completions",
             R"({"prompt": "Once", "max_tokens": 2000, "temperature": 0, "ignore_eos": true})",
             &status);
        return status;
    });
    auto c = s.client();
    // Until the scheduler has given it the slot.
    for (int i = 0; i < 500; ++i) {
        auto h = c.Get("/health");
        if (h && nlohmann::json::parse(h->body).value("slots_processing", 0) == 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    auto res = c.Post("/v1/completions", R"({"prompt": "a", "max_tokens": 1})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 503);
    EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    EXPECT_EQ(long_one.get(), 200);
}

TEST(Server, ADisconnectedClientFreesItsSlot) {
    Server s(mw_server_default_params(), 1);
    {
        // Start a long stream, read its first event, then hang up.
        httplib::Client c("127.0.0.1", s.port);
        std::atomic<int> events{0};
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.headers = {{"Content-Type", "application/json"}};
        req.body = R"({"prompt": "Once", "max_tokens": 1000, "stream": true, "ignore_eos": true})";
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            return ++events < 2;
        };
        httplib::Response res;
        httplib::Error err = httplib::Error::Success;
        c.send(req, res, err);
        EXPECT_GE(events.load(), 1);
    }
    // The only slot is free again well before 1000 tokens could have been generated.
    int status = 0;
    const auto start = std::chrono::steady_clock::now();
    post(s, "/v1/completions", R"({"prompt": "a", "max_tokens": 2})", &status);
    EXPECT_EQ(status, 200);
    auto c = s.client();
    const json health = json::parse(c.Get("/health")->body);
    EXPECT_EQ(health["slots_processing"], 0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Server, SecondTurnReusesTheCachedPrefix) {
    Server s;
    const json first = {{"messages",
                         {{{"role", "system"}, {"content", "You tell stories."}},
                          {{"role", "user"}, {"content", "A story about a cat."}}}},
                        {"max_tokens", 16},
                        {"temperature", 0}};
    int status = 0;
    const json r1 = post(s, "/v1/chat/completions", first.dump(), &status);
    ASSERT_EQ(status, 200);
    EXPECT_EQ(r1["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    json second = first;
    second["messages"].push_back(
        {{"role", "assistant"}, {"content", r1["choices"][0]["message"]["content"]}});
    second["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
    const json r2 = post(s, "/v1/chat/completions", second.dump(), &status);
    ASSERT_EQ(status, 200);
    const int cached = r2["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, r1["usage"]["prompt_tokens"].get<int>());  // the whole first turn
}

// A stop right after the start, before the serving thread listens, still stops it (httplib's own
// stop does nothing before listening, and the serve then blocked in accept() for good).
TEST(Server, StopBeforeTheServingThreadListensStopsIt) {
    for (int i = 0; i < 20; ++i) {
        Server s;
        EXPECT_GT(s.port, 0);
    }  // ~Server stops and joins the serving thread
}

TEST(Server, TakenPortIsAClearError) {
    Server s;
    mw_context_params cp = mw_context_default_params();
    cp.n_ctx = 64;
    mw_server_params sp = mw_server_default_params();
    sp.port = s.port;
    mw_server* other = nullptr;
    EXPECT_EQ(mw_server_create(s.model, &cp, &sp, &other), MW_ERR_IO);
    EXPECT_NE(std::string(mw_last_error()).find(std::to_string(s.port)), std::string::npos)
        << mw_last_error();
    EXPECT_EQ(other, nullptr);
}

}  // namespace
