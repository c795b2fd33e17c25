// The server's answers a newcomer's client meets first (issue 40): a model name the server does
// not serve is OpenAI's 404 (model_not_found), a temperature outside OpenAI's [0, 2] a 400, a
// route asked with the wrong method a 405 with Allow; and one log line per request (text or
// JSON) with its status, tokens and time.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "memwall.h"
#include "support/test_server.h"
#include "support/test_support.h"

namespace {

using mw::test::post;
using mw::test::Server;
using nlohmann::json;

TEST(Server, UnknownModelIs404AsOpenAIAnswers) {
    Server s;
    int status = 0;
    json r =
        post(s, "/v1/chat/completions",
             R"({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})", &status);
    EXPECT_EQ(status, 404) << r.dump();
    ASSERT_TRUE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["error"]["code"], "model_not_found");
    EXPECT_EQ(r["error"]["param"], "model");
    EXPECT_EQ(r["error"]["type"], "invalid_request_error");
    const std::string message = r["error"]["message"];
    EXPECT_NE(message.find("'gpt-4o' does not exist"), std::string::npos) << message;
    EXPECT_NE(message.find("'memwall'"), std::string::npos) << message;

    // The id /v1/models lists, or no model at all, is served.
    r = post(s, "/v1/completions", R"({"model": "memwall", "prompt": "Once", "max_tokens": 2})",
             &status);
    EXPECT_EQ(status, 200) << r.dump();
    r = post(s, "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})", &status);
    EXPECT_EQ(status, 200) << r.dump();
}

TEST(Server, TemperatureOutsideOpenAIsRangeIs400) {
    Server s;
    for (const char* t : {"2.5", "-0.1", "100"}) {
        int status = 0;
        const json r = post(
            s, "/v1/completions",
            std::string(R"({"prompt": "a", "max_tokens": 1, "temperature": )") + t + "}", &status);
        EXPECT_EQ(status, 400) << t << " -> " << r.dump();
        ASSERT_TRUE(r.contains("error")) << r.dump();
        EXPECT_EQ(r["error"]["param"], "temperature") << r.dump();
        EXPECT_NE(r["error"]["message"].get<std::string>().find("temperature"), std::string::npos);
    }
    for (const char* t : {"0", "2"}) {
        int status = 0;
        const json r = post(
            s, "/v1/completions",
            std::string(R"({"prompt": "a", "max_tokens": 1, "temperature": )") + t + "}", &status);
        EXPECT_EQ(status, 200) << t << " -> " << r.dump();
    }
}

TEST(Server, WrongMethodOnARouteIs405WithAllow) {
    Server s;
    auto c = s.client();
    for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
        auto r = c.Get(path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 405) << path;
        EXPECT_EQ(r->get_header_value("Allow"), "POST") << path;
        const json j = json::parse(r->body, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
        EXPECT_EQ(j["error"]["code"], "method_not_allowed");
        EXPECT_NE(j["error"]["message"].get<std::string>().find("use POST"), std::string::npos);
    }
    for (const char* path : {"/v1/models", "/health", "/metrics"}) {
        auto r = c.Post(path, "{}", "application/json");
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 405) << path;
        EXPECT_EQ(r->get_header_value("Allow"), "GET") << path;
    }
    auto none = c.Get("/v1/nothing");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 404);
}

// Collects the server's log lines (they are written once the reply is complete, so a test
// waits for them).
struct LogLines {
    std::mutex m;
    std::vector<std::string> lines;
    static void add(const char* line, void* user) {
        auto* self = static_cast<LogLines*>(user);
        std::lock_guard<std::mutex> lock(self->m);
        self->lines.emplace_back(line);
    }
    std::vector<std::string> wait_for(size_t n) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            {
                std::lock_guard<std::mutex> lock(m);
                if (lines.size() >= n || std::chrono::steady_clock::now() > end) return lines;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
};

TEST(Server, EachRequestIsOneJsonLogLineWithStatusTokensAndTime) {
    LogLines log;
    mw_server_params sp = mw_server_default_params();
    sp.log_format = MW_SERVER_LOG_JSON;
    sp.log = LogLines::add;
    sp.log_user = &log;
    Server s(sp);
    int status = 0;
    const json r =
        post(s, "/v1/completions",
             R"({"prompt": "Once upon a time", "max_tokens": 7, "temperature": 0})", &status);
    ASSERT_EQ(status, 200) << r.dump();
    const std::vector<std::string> first = log.wait_for(1);
    ASSERT_EQ(first.size(), 1u);
    auto c = s.client();
    ASSERT_TRUE(c.Get("/v1/chat/completions"));  // 405
    // A path that tries to forge a second line stays on one.
    ASSERT_TRUE(c.Get("/x%0a{\"status\":200}"));
    const std::vector<std::string> lines = log.wait_for(3);
    ASSERT_EQ(lines.size(), 3u);

    const json gen = json::parse(lines[0]);
    EXPECT_EQ(gen["method"], "POST");
    EXPECT_EQ(gen["path"], "/v1/completions");
    EXPECT_EQ(gen["status"], 200);
    EXPECT_EQ(gen["prompt_tokens"], r["usage"]["prompt_tokens"]);
    EXPECT_EQ(gen["completion_tokens"], 7);
    EXPECT_GE(gen["ms"].get<double>(), 0.0);
    EXPECT_EQ(gen["client"], "127.0.0.1");
    EXPECT_TRUE(gen["time"].get<std::string>().ends_with("Z"));

    const json wrong = json::parse(lines[1]);
    EXPECT_EQ(wrong["status"], 405);
    EXPECT_FALSE(wrong.contains("prompt_tokens"));  // not a generation
    const json forged = json::parse(lines[2]);
    EXPECT_EQ(forged["status"], 404);
    EXPECT_EQ(lines[2].find('\n'), std::string::npos);
}

TEST(Server, TextLogLineNamesMethodPathStatusTokensAndMilliseconds) {
    LogLines log;
    mw_server_params sp = mw_server_default_params();
    sp.log_format = MW_SERVER_LOG_TEXT;
    sp.log = LogLines::add;
    sp.log_user = &log;
    Server s(sp);
    int status = 0;
    post(s, "/v1/chat/completions",
         R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true})",
         &status);
    ASSERT_EQ(status, 200);
    const std::vector<std::string> lines = log.wait_for(1);
    ASSERT_EQ(lines.size(), 1u);
    // 2026-12-06T04:30:12.345Z 127.0.0.1 POST /v1/chat/completions 200 prompt=9 completion=3 4.2 ms
    const std::regex line(
        R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1 POST /v1/chat/completions 200 )"
        R"(prompt=[1-9]\d* completion=3 \d+\.\d ms)");
    EXPECT_TRUE(std::regex_match(lines[0], line)) << lines[0];
}

TEST(Server, UnknownLogFormatIsRefusedNamingTheField) {
    mw_model* model = nullptr;
    const std::string path = mw::test::shared_path("models/stories260K.gguf");
    ASSERT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
    mw_server_params sp = mw_server_default_params();
    sp.port = 0;
    sp.log_format = 7;
    mw_server* server = nullptr;
    EXPECT_EQ(mw_server_create(model, nullptr, &sp, &server), MW_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mw_last_error()).find("log_format is 7"), std::string::npos)
        << mw_last_error();
    EXPECT_EQ(server, nullptr);
    mw_model_free(model);
}

}  // namespace
