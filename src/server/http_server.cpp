#include "server/http_server.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/error.h"
#include "runtime/loaded_model.h"
#include "server/http_guard.h"
#include "server/http_transport.h"
#include "server/openai.h"

namespace mw::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Compares in time that depends only on the lengths, not on where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned char>(x ^ y);
    }
    return diff == 0;
}

void send_error(HttpResponse& res, const ApiError& e) {
    res.status = e.status;
    res.content_type = "application/json";
    res.body = error_json(e).dump();
}

ApiError api_error(int status, std::string message, std::string type = "invalid_request_error",
                   std::string code = {}) {
    ApiError e;
    e.status = status;
    e.message = std::move(message);
    e.type = std::move(type);
    e.code = std::move(code);
    return e;
}

std::string random_id(const char* prefix) {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard<std::mutex> lock(m);
    return fmt::format("{}{:016x}", prefix, rng());
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string sse(const json& j) {
    return "data: " + j.dump() + "\n\n";
}

// The routes and the method each takes: another method on them is a 405 naming it.
const char* allowed_method(const std::string& path) {
    if (path == "/v1/chat/completions" || path == "/v1/completions") return "POST";
    if (path == "/health" || path == "/v1/models" || path == "/metrics" || path == "/" ||
        path == "/index.html")
        return "GET";
    return nullptr;
}

// A client's path in a log line: at most 200 bytes, control and non-ASCII bytes as \xNN, so
// that a request cannot forge or break lines of the log.
std::string printable(std::string_view s) {
    std::string out;
    for (const char c : s.substr(0, 200)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
            out += fmt::format("\\x{:02x}", u);
        } else {
            out += c;
        }
    }
    if (s.size() > 200) out += "...";
    return out;
}

std::string utc_now() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void set_counts(TokenCounts& c, const Usage& u) {
    c.prompt = u.prompt_tokens;
    c.completion = u.completion_tokens;
    c.draft_n = u.draft_n;
    c.draft_accepted = u.draft_accepted;
}

std::string log_line(ServerOptions::LogFormat format, const HttpRequest& req, int status,
                     const TokenCounts* counts) {
    const int32_t prompt_tokens = counts ? counts->prompt.load() : -1;
    const int32_t completion_tokens = counts ? counts->completion.load() : -1;
    const int32_t draft_n = counts ? counts->draft_n.load() : -1;
    const int32_t draft_accepted = counts ? counts->draft_accepted.load() : 0;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - req.arrived).count();
    if (format == ServerOptions::LogFormat::json) {
        json j = {{"time", utc_now()},
                  {"client", req.remote_addr},
                  {"method", printable(req.method)},
                  {"path", printable(req.path)},
                  {"status", status},
                  {"ms", std::round(ms * 10) / 10}};
        if (prompt_tokens >= 0) j["prompt_tokens"] = prompt_tokens;
        if (completion_tokens >= 0) j["completion_tokens"] = completion_tokens;
        if (draft_n >= 0) {
            j["draft_n"] = draft_n;
            j["draft_n_accepted"] = draft_accepted;
        }
        return j.dump();
    }
    std::string tokens;
    if (prompt_tokens >= 0 || completion_tokens >= 0) {
        tokens = fmt::format(" prompt={} completion={}", std::max(prompt_tokens, 0),
                             std::max(completion_tokens, 0));
    }
    if (draft_n >= 0) tokens += fmt::format(" drafted={} accepted={}", draft_n, draft_accepted);
    return fmt::format("{} {} {} {} {}{} {:.1f} ms", utc_now(), req.remote_addr,
                       printable(req.method), printable(req.path), status, tokens, ms);
}

}  // namespace

struct HttpServer::Impl {
    const LoadedModel& model;
    Context& ctx;
    ServerOptions opt;
    Scheduler scheduler;
    OriginPolicy origins;
    std::unique_ptr<HttpTransport> http;
    std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
    // The most bytes one token of the vocabulary spells (at least 4: an unknown character
    // becomes one token); 0 when tokens do not cover the text byte for byte (WordPiece drops
    // spaces), so no prompt is refused by its bytes.
    size_t max_token_bytes = 0;

    // stop() before run() starts the transport makes run() return at once; run() returns when
    // stop() has closed everything.
    std::mutex run_mutex;
    std::condition_variable run_cv;
    std::atomic<bool> stopping{false};
    bool stopped = false;

    std::mutex counts_mutex;
    std::map<std::pair<std::string, int>, uint64_t> counts;  // (route, status) -> requests

    Impl(const LoadedModel& m, Context& c, ServerOptions o)
        : model(m),
          ctx(c),
          opt(std::move(o)),
          scheduler(c, *m.vocab,
                    SchedulerParams{0, opt.queue_max, 512, opt.after_step, opt.make_drafter,
                                    opt.spec, opt.batch_drafter}) {
        if (opt.model_name.empty()) opt.model_name = "memwall";
        origins.allowed_origins = opt.cors_origins;
        origins.loopback_bind = is_loopback_host(opt.host);
        if (m.vocab->type() != VocabType::wpm) {
            max_token_bytes = 4;
            for (int32_t id = 0; id < m.vocab->n_tokens(); ++id) {
                max_token_bytes =
                    std::max(max_token_bytes, m.vocab->token_to_piece(id, true).size());
            }
        }
        HttpLimits limits;
        limits.max_body_bytes = opt.max_body_bytes;
        limits.header_timeout_s = opt.header_timeout_s;
        limits.max_connections = opt.max_connections;
        limits.max_connections_per_address = opt.max_connections_per_address;
        limits.max_header_bytes = opt.max_header_bytes;
        // A worker per request being generated or waiting for a slot, and a few to spare.
        limits.workers = opt.http_threads > 0 ? unsigned(opt.http_threads)
                                              : unsigned(ctx.n_seq_max() + opt.queue_max + 4);
        HttpHandlers h;
        h.check = [this](const HttpRequest& req, HttpResponse& res) { return check(req, res); };
        h.blocking = [](const HttpRequest& req) {
            return req.method == "POST" &&
                   (req.path == "/v1/chat/completions" || req.path == "/v1/completions");
        };
        h.serve = [this](const HttpRequest& req, HttpResponse& res) { serve(req, res); };
        h.answered = [this](const HttpRequest& req, const HttpResponse& res) {
            answered(req, res);
        };
        h.error_body = [](int status, const std::string& message) {
            return error_json(api_error(status, message,
                                        status >= 500 ? "server_error" : "invalid_request_error"))
                .dump();
        };
        http = std::make_unique<HttpTransport>(opt.host, opt.port, limits, std::move(h));
    }

    bool authorized(const HttpRequest& req, HttpResponse& res) const;
    bool check(const HttpRequest& req, HttpResponse& res) const;
    void serve(const HttpRequest& req, HttpResponse& res);
    void answered(const HttpRequest& req, const HttpResponse& res);
    void check_prompt_bytes(size_t bytes, bool chat) const;
    void completion(const HttpRequest& req, HttpResponse& res, bool chat);
    std::string metrics_text();
};

bool HttpServer::Impl::authorized(const HttpRequest& req, HttpResponse& res) const {
    if (opt.api_key.empty()) return true;
    std::string given = bearer_token(req.header("Authorization"));
    if (given.empty()) given = req.header("X-Api-Key");
    if (!given.empty() && same_secret(given, opt.api_key)) return true;
    send_error(res, api_error(401,
                              given.empty() ? "no API key: send 'Authorization: Bearer KEY'"
                                            : "the API key is not valid",
                              "authentication_error", "invalid_api_key"));
    return false;
}

// With the header only, before the body is read. Browsers first: a page from another origin (or
// reached through DNS rebinding) is refused on every route; an allowed one gets CORS headers,
// and its preflight an answer without the key (browsers send none). Then every route but
// /health and the page needs the key, and a body must be JSON: a web page can send a form or
// text/plain body anywhere without asking first.
bool HttpServer::Impl::check(const HttpRequest& req, HttpResponse& res) const {
    const std::string origin = req.header("Origin");
    if (auto refusal = origin_refusal(origin, req.header("Host"), origins)) {
        send_error(res, api_error(403, *refusal, "invalid_request_error", "origin_not_allowed"));
        return true;
    }
    if (!origin.empty()) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
        res.set_header("Access-Control-Max-Age", "600");
        return true;
    }
    if (req.path == "/health" || req.path == "/" || req.path == "/index.html") return false;
    if (!authorized(req, res)) return true;
    const std::string type = req.header("Content-Type");
    if (req.method == "POST" && !is_json_content_type(type)) {
        send_error(res, api_error(415, fmt::format("the body must be JSON sent as "
                                                   "'Content-Type: application/json' (got '{}')",
                                                   type.substr(0, 100))));
        return true;
    }
    return false;
}

void HttpServer::Impl::serve(const HttpRequest& req, HttpResponse& res) {
    try {
        const std::string& path = req.path;
        if (req.method == "POST" && path == "/v1/chat/completions")
            return completion(req, res, true);
        if (req.method == "POST" && path == "/v1/completions") return completion(req, res, false);
        if (req.method == "GET" && path == "/health") {
            const SchedulerStats s = scheduler.stats();
            const json j = {{"status", stopping ? "stopping" : "ok"},
                            {"slots_idle", s.slots - s.slots_busy},
                            {"slots_processing", s.slots_busy},
                            {"queued", s.queued}};
            res.status = stopping ? 503 : 200;
            res.body = j.dump();
            return;
        }
        if (req.method == "GET" && path == "/v1/models") {
            const HParams& hp = model.model.hp;
            const json m = {{"id", opt.model_name},
                            {"object", "model"},
                            {"created", std::chrono::duration_cast<std::chrono::seconds>(
                                            started.time_since_epoch())
                                            .count()},
                            {"owned_by", "memwall"},
                            {"meta",
                             {{"architecture", hp.arch},
                              {"n_params", model.model.n_params},
                              {"size", model.model.weight_bytes},
                              {"n_ctx_train", hp.n_ctx_train},
                              {"n_ctx_slot", scheduler.n_ctx_slot()},
                              {"slots", ctx.n_seq_max()}}}};
            res.body = json{{"object", "list"}, {"data", json::array({m})}}.dump();
            return;
        }
        if (req.method == "GET" && path == "/metrics") {
            res.content_type = "text/plain; version=0.0.4";
            res.body = metrics_text();
            return;
        }
        if (req.method == "GET" && (path == "/" || path == "/index.html")) {
            res.content_type = "text/html; charset=utf-8";
            res.body = chat_page_html();
            return;
        }
        if (const char* allowed = allowed_method(path)) {
            res.set_header("Allow", allowed);
            send_error(res, api_error(405,
                                      fmt::format("{} is not allowed on {}: use {}", req.method,
                                                  path, allowed),
                                      "invalid_request_error", "method_not_allowed"));
            return;
        }
        send_error(res, api_error(404, fmt::format("no route {} {}", req.method, path)));
    } catch (const std::exception& e) {
        send_error(res, api_error(500, std::string("internal error: ") + e.what(), "server_error"));
    }
}

void HttpServer::Impl::answered(const HttpRequest& req, const HttpResponse& res) {
    const int status = res.status;
    if (opt.log_format != ServerOptions::LogFormat::off) {
        const std::string line = log_line(opt.log_format, req, status, res.tokens.get());
        if (opt.log) {
            opt.log(line);
        } else {
            std::fputs((line + "\n").c_str(), stderr);  // one write: lines do not interleave
        }
    }
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        ++counts[{route_label(req.path), status}];
    }
#ifdef __GLIBC__
    // A refused large request never reaches the scheduler, whose idle trim would give its
    // parse and render buffers back: they stayed resident (1.8 GB after 8 of 7 MB).
    if (status >= 400 &&
        std::strtoull(req.header("Content-Length").c_str(), nullptr, 10) >= (1u << 20)) {
        malloc_trim(0);
    }
#endif
}

// A prompt of more bytes than the slot's tokens can spell cannot fit: refused before tokenizing
// it, which took ~50 bytes of memory per byte of text (8 prompts of 7 MB: 3 GB).
void HttpServer::Impl::check_prompt_bytes(size_t bytes, bool chat) const {
    const uint32_t limit = scheduler.n_ctx_slot();
    if (max_token_bytes == 0 || bytes <= size_t(limit - 1) * max_token_bytes) return;
    ApiError err = api_error(400,
                             fmt::format("the prompt has {} bytes, more than the {} tokens a "
                                         "slot's context leaves for it can hold (a token of this "
                                         "vocabulary spells at most {} bytes)",
                                         bytes, limit - 1, max_token_bytes),
                             "invalid_request_error", "context_length_exceeded");
    err.param = chat ? "messages" : "prompt";
    throw err;
}

void HttpServer::Impl::completion(const HttpRequest& req, HttpResponse& res, bool chat) {
    const auto arrived = Clock::now();
    if (stopping) {
        send_error(res, api_error(503, "the server is shutting down", "server_error"));
        return;
    }
    CompletionRequest r;
    std::vector<int32_t> prompt;
    std::string text;  // the rendered prompt (a reply parser reads how it ends)
    try {
        r = parse_completion_request(
            req.body, chat, opt.sampling,
            RequestLimits{opt.max_tokens, model.model.hp.n_vocab,
                          opt.make_drafter ? int32_t(opt.spec.draft_max) : 0});
        if (!r.model.empty() && r.model != opt.model_name) {
            // As OpenAI answers a model it does not have (clients tell it from a bad request).
            ApiError err = api_error(404,
                                     fmt::format("the model '{}' does not exist: this server "
                                                 "serves '{}' (GET /v1/models)",
                                                 r.model.substr(0, 200), opt.model_name),
                                     "invalid_request_error", "model_not_found");
            err.param = "model";
            throw err;
        }
        if (chat && !r.tools.is_null() && !opt.takes_tools) {
            ApiError err = api_error(400,
                                     "this model's chat template does not render tools; send the "
                                     "request without 'tools' or give the server a template that "
                                     "does (--chat-template-file)");
            err.param = "tools";
            throw err;
        }
        if (chat) {
            try {
                text = opt.render_chat(r.messages, r.template_variables, r.tools);
            } catch (const std::exception& e) {
                // A template that raises on this conversation (e.g. roles out of order).
                ApiError err = api_error(400, std::string("the chat template cannot render these "
                                                          "messages: ") +
                                                  e.what());
                err.param = "messages";
                throw err;
            }
        } else {
            text = std::move(r.prompt);
        }
        check_prompt_bytes(text.size(), chat);
        prompt = model.vocab->tokenize(text, true, true);
        // A template that writes the BOS text, tokenized with the BOS added: one is enough.
        const int32_t bos = model.vocab->bos();
        if (prompt.size() >= 2 && bos >= 0 && prompt[0] == bos && prompt[1] == bos) {
            prompt.erase(prompt.begin());
        }
        if (prompt.empty()) throw api_error(400, "the prompt has no tokens");
        const uint32_t limit = scheduler.n_ctx_slot();
        if (prompt.size() >= limit) {
            ApiError err =
                api_error(400,
                          fmt::format("the prompt has {} tokens, {} more than the {} a slot's "
                                      "context leaves for it ({} tokens, at least 1 to generate)",
                                      prompt.size(), prompt.size() - (limit - 1), limit - 1, limit),
                          "invalid_request_error", "context_length_exceeded");
            err.param = chat ? "messages" : "prompt";
            throw err;
        }
    } catch (const ApiError& e) {
        send_error(res, e);
        return;
    }
    if (!r.seed_given)
        r.sampling.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);

    auto channel = std::make_shared<Channel>();
    auto tokens = std::make_shared<TokenCounts>();
    res.tokens = tokens;
    Job job;
    job.prompt = std::move(prompt);
    job.max_tokens = r.max_tokens;
    job.sampling = r.sampling;
    job.stop = r.stop;
    job.ignore_eos = r.ignore_eos;
    const chat::ReplyFormat format = chat ? opt.reply_format : chat::ReplyFormat::plain;
    chat::StringParams string_params = chat::string_params_of(r.tools);
    job.special_text = format != chat::ReplyFormat::plain;
    job.draft_max = r.draft_max;
    job.draft_min = r.draft_min;
    job.draft_p_min = r.draft_p_min;
    job.deadline = arrived + std::chrono::milliseconds(int64_t(opt.timeout_s * 1000.0));
    job.channel = channel;
    switch (scheduler.submit(std::move(job))) {
        case Scheduler::Admit::queued:
            break;
        case Scheduler::Admit::queue_full:
            res.set_header("Retry-After", "1");
            send_error(res, api_error(503,
                                      fmt::format("every slot is busy and {} requests are "
                                                  "waiting; retry later",
                                                  opt.queue_max),
                                      "server_error", "queue_full"));
            return;
        case Scheduler::Admit::stopping:
            send_error(res, api_error(503, "the server is shutting down", "server_error"));
            return;
    }

    const std::string id = random_id(chat ? "chatcmpl-" : "cmpl-");
    const int64_t created = unix_now();
    const std::string model_name = r.model.empty() ? opt.model_name : r.model;
    const double timeout_s = opt.timeout_s;
    const std::function<bool()> gone = req.client_gone;
    if (!r.stream) {
        const std::string prompt_text = std::move(text);
        text.clear();
        for (;;) {
            Channel::Update u = channel->take(std::chrono::milliseconds(50));
            text += u.text;
            if (u.done) {
                set_counts(*tokens, u.usage);
                if (u.finish == Finish::error) {
                    send_error(res,
                               api_error(500, "generation failed: " + u.error, "server_error"));
                } else if (u.finish == Finish::timeout) {
                    send_error(res, api_error(504,
                                              fmt::format("the request took longer than the "
                                                          "server's limit of {} s",
                                                          timeout_s),
                                              "timeout_error", "timeout"));
                } else if (u.finish == Finish::cancelled) {
                    send_error(res, api_error(503, "the request was cancelled: " + u.error,
                                              "server_error"));
                } else if (format != chat::ReplyFormat::plain) {
                    const chat::ReplyDelta reply =
                        chat::parse_reply(format, prompt_text, text, string_params);
                    res.body =
                        chat_response_split(id, created, model_name, reply, u.finish, u.usage)
                            .dump();
                } else {
                    res.body =
                        (chat ? chat_response(id, created, model_name, text, u.finish, u.usage)
                              : completion_response(id, created, model_name, text, u.finish,
                                                    u.usage))
                            .dump();
                }
                return;
            }
            if (gone()) {
                channel->cancel();  // the slot is freed at the scheduler's next step
                res.status = 499;
                return;
            }
        }
    }

    const bool include_usage = r.include_usage;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.content_type = "text/event-stream";
    // A marked-up reply is split as it streams; the parser holds back a marker's first bytes.
    std::shared_ptr<chat::ReplyParser> parser =
        chat::make_reply_parser(format, text, std::move(string_params));
    res.stream = [channel, tokens, gone, chat, id, created, model_name, include_usage, timeout_s,
                  parser](const std::function<bool(std::string_view)>& sink) {
        auto write = [&](const std::string& s) {
            if (!sink(s)) {
                channel->cancel();  // the client is gone: the slot is freed
                return false;
            }
            return true;
        };
        if (chat && !write(sse(chat_chunk(id, created, model_name, nullptr, true, Finish::none)))) {
            return;
        }
        size_t n_calls = 0;
        // Writes what the parser completed; false when the client is gone.
        auto write_split = [&](const chat::ReplyDelta& d) {
            if (d.empty()) return true;
            const bool ok = write(sse(chat_chunk_split(id, created, model_name, d, n_calls)));
            n_calls += d.tool_calls.size();
            return ok;
        };
        for (;;) {
            Channel::Update u = channel->take(std::chrono::milliseconds(100));
            if (parser) {
                if (!write_split(parser->push(u.text))) return;
                if (u.done && !write_split(parser->finish())) return;
            } else if (!u.text.empty()) {
                const json chunk =
                    chat ? chat_chunk(id, created, model_name, &u.text, false, Finish::none)
                         : completion_chunk(id, created, model_name, u.text, Finish::none);
                if (!write(sse(chunk))) return;
            }
            if (u.done) {
                set_counts(*tokens, u.usage);
                if (u.finish == Finish::error || u.finish == Finish::timeout ||
                    u.finish == Finish::cancelled) {
                    const ApiError e =
                        u.finish == Finish::timeout
                            ? api_error(504,
                                        fmt::format("the request took longer than the "
                                                    "server's limit of {} s",
                                                    timeout_s),
                                        "timeout_error", "timeout")
                            : api_error(500, u.error.empty() ? "cancelled" : u.error,
                                        "server_error");
                    write(sse(error_json(e)));
                } else {
                    const std::string empty;
                    json last = chat ? chat_chunk(id, created, model_name, nullptr, false, u.finish)
                                     : completion_chunk(id, created, model_name, empty, u.finish);
                    last["timings"] = timings_json(u.usage);
                    if (n_calls > 0 && u.finish == Finish::stop)
                        last["choices"][0]["finish_reason"] = "tool_calls";
                    if (!write(sse(last))) return;
                    if (include_usage &&
                        !write(sse(usage_chunk(id, created, model_name, chat, u.usage))))
                        return;
                }
                write("data: [DONE]\n\n");
                return;
            }
            if (u.text.empty() && gone()) {
                channel->cancel();
                return;
            }
        }
    };
}

std::string HttpServer::Impl::metrics_text() {
    const SchedulerStats s = scheduler.stats();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
        out +=
            fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
    };
    out += "# HELP memwall_requests_total HTTP requests answered, by route and status.\n";
    out += "# TYPE memwall_requests_total counter\n";
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        for (const auto& [key, n] : counts) {  // routes: no label value needs escaping
            out += fmt::format("memwall_requests_total{{route=\"{}\",status=\"{}\"}} {}\n",
                               key.first, key.second, n);
        }
    }
    metric("memwall_completions_total", "counter", "Generations finished.",
           double(s.requests_done));
    metric("memwall_prompt_tokens_total", "counter", "Prompt tokens decoded.",
           double(s.prompt_tokens));
    metric("memwall_prompt_tokens_cached_total", "counter",
           "Prompt tokens reused from the KV cache instead of decoded.", double(s.cached_tokens));
    metric("memwall_generated_tokens_total", "counter", "Tokens generated.",
           double(s.generated_tokens));
    metric("memwall_prompt_seconds_total", "counter",
           "Time in forward steps that read prompt tokens.", s.prompt_seconds);
    metric("memwall_decode_seconds_total", "counter",
           "Time in forward steps of generated tokens only.", s.decode_seconds);
    metric("memwall_decode_tokens_per_second", "gauge",
           "Generated tokens per second of decode-only steps, over the server's life.",
           s.decode_seconds > 0 ? double(s.generated_tokens) / (s.decode_seconds + s.prompt_seconds)
                                : 0.0);
    if (s.speculative) {
        metric("memwall_spec_verification_passes_total", "counter",
               "Speculative decoding: slot steps that checked drafts in the batch.",
               double(s.spec.passes));
        metric("memwall_spec_plain_steps_total", "counter",
               "Speculative decoding: slot steps without drafts (none proposed, or no room).",
               double(s.spec.plain_steps));
        metric("memwall_spec_draft_tokens_total", "counter",
               "Speculative decoding: tokens drafted and checked.", double(s.spec.drafted));
        metric("memwall_spec_draft_tokens_accepted_total", "counter",
               "Speculative decoding: drafted tokens accepted.", double(s.spec.accepted));
        metric("memwall_spec_draft_seconds_total", "counter",
               "Speculative decoding: time the slots' drafters took.", s.spec.draft_ms / 1000.0);
    }
    metric("memwall_queue_length", "gauge", "Requests waiting for a slot.", double(s.queued));
    metric("memwall_slots", "gauge", "Slots (sequences of the KV cache).", double(s.slots));
    metric("memwall_slots_busy", "gauge", "Slots serving a request.", double(s.slots_busy));
    metric("memwall_kv_cache_used_positions", "gauge",
           "KV cache positions in use (shared prefixes once).", double(s.kv_used));
    metric("memwall_kv_cache_positions", "gauge", "KV cache positions in all.", double(s.kv_size));
    const ProcessMemory pm = process_memory();
    metric("memwall_rss_bytes", "gauge", "Resident memory of the process.", double(pm.rss_bytes));
    return out;
}

HttpServer::HttpServer(const LoadedModel& model, Context& ctx, ServerOptions options)
    : impl_(std::make_unique<Impl>(model, ctx, std::move(options))) {}

HttpServer::~HttpServer() {
    stop(0.0);
}

void HttpServer::bind() {
    impl_->http->bind();
}

int HttpServer::port() const {
    return impl_->http->port();
}

SchedulerStats HttpServer::stats() const {
    return impl_->scheduler.stats();
}

void HttpServer::run() {
    std::unique_lock<std::mutex> lock(impl_->run_mutex);
    if (impl_->stopping) return;
    impl_->http->start();
    impl_->run_cv.wait(lock, [&] { return impl_->stopped; });
}

void HttpServer::stop(double grace_s) {
    const auto grace = std::chrono::milliseconds(int64_t(grace_s * 1000));
    {
        std::lock_guard<std::mutex> lock(impl_->run_mutex);
        if (impl_->stopping.exchange(true)) {
            // A second stop (a second SIGTERM) can only shorten the grace.
            if (!impl_->stopped) impl_->scheduler.shutdown(grace);
            return;
        }
    }
    impl_->http->stop_accepting();
    impl_->scheduler.shutdown(grace);  // running requests finish or are cancelled
    impl_->http->stop(1.0);            // their replies go out; then every connection closes
    std::lock_guard<std::mutex> lock(impl_->run_mutex);
    impl_->stopped = true;
    impl_->run_cv.notify_all();
}

}  // namespace mw::server
