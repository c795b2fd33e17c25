// memwall's OpenAI-compatible HTTP server over a scheduler (server/scheduler.h), on
// libmicrohttpd (server/http_transport.h: what a hostile client can hold is bounded): POST
// /v1/chat/completions and /v1/completions (streamed as server-sent events or not), GET /v1/models,
// /health, /metrics (Prometheus text) and / (a chat page built into the binary). Every error is
// OpenAI's error JSON with a 4xx when the client is at fault (malformed JSON, wrong types,
// unsupported fields, a prompt longer than a slot's context, a bad API key, a body over the size
// limit) and a 5xx only when the server is.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chat/reply.h"
#include "model/sampler.h"
#include "runtime/context.h"
#include "runtime/loaded_model.h"
#include "server/scheduler.h"

namespace mw::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;           // 0: any free port (see HttpServer::port())
    std::string api_key;       // empty: no key required
    std::string model_name;    // the id /v1/models lists (default: the file's name)
    uint32_t queue_max = 64;   // requests waiting for a slot before 503
    double timeout_s = 600.0;  // per request, from its arrival
    size_t max_body_bytes = 8u << 20;
    int32_t max_tokens = -1;         // per request (-1: the slot's context)
    SamplerParams sampling;          // defaults for fields a request does not give
    int http_threads = 0;            // workers for generations (0: slots + queue + 4)
    double header_timeout_s = 10.0;  // a request's header must be complete within this
    unsigned max_connections = 1024;
    unsigned max_connections_per_address = 256;
    size_t max_header_bytes = 8u << 10;
    // Browser origins allowed besides loopback ones ("scheme://host[:port]", or "*").
    std::vector<std::string> cors_origins;
    // Renders a checked conversation (OpenAI messages) to the prompt text.
    // `variables`: more template variables (chat_template_kwargs, reasoning_effort), an object;
    // `tools`: the request's tools, or null.
    std::function<std::string(const nlohmann::ordered_json& messages,
                              const nlohmann::json& variables, const nlohmann::ordered_json& tools)>
        render_chat;
    // The markers of the chat template's replies (chat/reply.h): unless plain, chat replies are
    // generated with the special tokens as text and split into reasoning_content, content and
    // tool_calls.
    chat::ReplyFormat reply_format = chat::ReplyFormat::plain;
    // The template renders a request's tools; a request with tools is refused otherwise.
    bool takes_tools = false;
    // After each forward step of the slots (pacing); may be empty.
    std::function<void(Context&)> after_step;
    // Speculative decoding per slot (SchedulerParams::make_drafter; empty: off).
    std::function<std::unique_ptr<Drafter>(uint32_t slot)> make_drafter;
    SpecParams spec;
    std::shared_ptr<BatchDrafter> batch_drafter;  // SchedulerParams::batch_drafter
    // One line per answered request: time, client, method, path, status, tokens, duration.
    enum class LogFormat { off, text, json } log_format = LogFormat::off;
    // Takes each line (without its newline), from any thread; empty: written to stderr.
    std::function<void(const std::string&)> log;
};

class HttpServer {
  public:
    // The context's sequences are the slots; it must outlive the server.
    HttpServer(const LoadedModel& model, Context& ctx, ServerOptions options);
    ~HttpServer();

    // Binds the socket (throws ErrorKind::io naming the address when it cannot).
    void bind();
    int port() const;
    SchedulerStats stats() const;
    // Serves until stop(); returns when every connection is closed.
    void run();
    // Thread-safe: stops taking requests, lets running ones finish for up to `grace_s`, then
    // cancels the rest and makes run() return.
    void stop(double grace_s);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The chat page served at / (HTML, CSS and JavaScript in one document, no external resources).
const std::string& chat_page_html();

}  // namespace mw::server
