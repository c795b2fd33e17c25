#include "server/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/error.h"
#include "runtime/loaded_model.h"
#include "server/http_guard.h"
#include "server/openai.h"

namespace mw::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The socket of a request's connection, to notice a client that has gone away while its reply
// is being generated. cpp-httplib hands handlers neither the socket nor a way to ask, but the
// request carries both ends' addresses and ports, which name one connection: the socket whose
// local and peer ends match is found once per request.
class ConnectionProbe {
  public:
    explicit ConnectionProbe(const httplib::Request& req) {
        for (int fd = 3; fd < 65536 && fd_ < 0; ++fd) {
            sockaddr_storage peer{}, local{};
            socklen_t pl = sizeof peer, ll = sizeof local;
            if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) {
                if (errno == EBADF) ++misses_;
                if (misses_ > 4096) break;  // far past the highest open descriptor
                continue;
            }
            misses_ = 0;
            if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
            if (port_of(peer) == req.remote_port && port_of(local) == req.local_port &&
                host_of(peer) == req.remote_addr) {
                fd_ = fd;
            }
        }
    }
    // Whether the client has closed or reset the connection.
    bool gone() const {
        if (fd_ < 0) return false;
        pollfd p{fd_, short(POLLIN | POLLRDHUP), 0};
        if (poll(&p, 1, 0) <= 0) return false;
        if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
        if (p.revents & POLLIN) {
            char c;
            return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // > 0: a pipelined request
        }
        return false;
    }

  private:
    static int port_of(const sockaddr_storage& a) {
        if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
        if (a.ss_family == AF_INET6) {
            return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
        }
        return -1;
    }
    static std::string host_of(const sockaddr_storage& a) {
        char buf[INET6_ADDRSTRLEN] = {};
        if (a.ss_family == AF_INET) {
            inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
        } else if (a.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf,
                      sizeof buf);
        }
        return buf;
    }

    int fd_ = -1;
    int misses_ = 0;
};

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

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_json(e).dump(), "application/json");
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

}  // namespace

struct HttpServer::Impl {
    const LoadedModel& model;
    Context& ctx;
    ServerOptions opt;
    Scheduler scheduler;
    httplib::Server http;
    int bound_port = -1;
    std::atomic<bool> stopping{false};
    // run() was entered / has returned: a stop() racing with run()'s start must wait until
    // httplib listens, since httplib's own stop() does nothing before that and the later
    // listen would then block in accept() for good.
    std::atomic<bool> run_entered{false};
    std::atomic<bool> run_returned{false};
    std::chrono::system_clock::time_point started = std::chrono::system_clock::now();

    OriginPolicy origins;
    int listen_fd = -1;

    std::mutex counts_mutex;
    std::map<std::pair<std::string, int>, uint64_t> counts;  // (route, status) -> requests

    Impl(const LoadedModel& m, Context& c, ServerOptions o)
        : model(m),
          ctx(c),
          opt(std::move(o)),
          scheduler(c, *m.vocab, SchedulerParams{0, opt.queue_max, 512, opt.after_step}) {
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
        routes();
    }

    // The most bytes one token of the vocabulary spells (at least 4: an unknown character
    // becomes one token); 0 when tokens do not cover the text byte for byte (WordPiece drops
    // spaces), so no prompt is refused by its bytes.
    size_t max_token_bytes = 0;

    void routes();
    void check_prompt_bytes(size_t bytes, bool chat) const;
    bool authorized(const httplib::Request& req, httplib::Response& res) const;
    void completion(const httplib::Request& req, httplib::Response& res, bool chat);
    std::string metrics_text();
};

bool HttpServer::Impl::authorized(const httplib::Request& req, httplib::Response& res) const {
    if (opt.api_key.empty()) return true;
    std::string given = bearer_token(req.get_header_value("Authorization"));
    if (given.empty()) given = req.get_header_value("X-Api-Key");
    if (!given.empty() && same_secret(given, opt.api_key)) return true;
    send_error(res, api_error(401,
                              given.empty() ? "no API key: send 'Authorization: Bearer KEY'"
                                            : "the API key is not valid",
                              "authentication_error", "invalid_api_key"));
    return false;
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

void HttpServer::Impl::routes() {
    // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, with which a second
    // server on the same port would silently share its connections instead of failing.
    // TCP_NODELAY on the listening socket is inherited by every accepted one: without it a
    // keep-alive reply written in two parts waited ~40 ms for the client's delayed ACK.
    http.set_socket_options([this](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        listen_fd = sock;
    });
    http.set_payload_max_length(opt.max_body_bytes);
    const int threads =
        opt.http_threads > 0 ? opt.http_threads : int(ctx.n_seq_max() + opt.queue_max + 4);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };

    // Browsers first: a page from another origin (or reached through DNS rebinding) is refused
    // on every route; an allowed one gets CORS headers, and its preflight an answer without the
    // key (browsers send none). Then every route but /health and the page needs the key.
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        using R = httplib::Server::HandlerResponse;
        const std::string origin = req.get_header_value("Origin");
        if (auto refusal = origin_refusal(origin, req.get_header_value("Host"), origins)) {
            send_error(res,
                       api_error(403, *refusal, "invalid_request_error", "origin_not_allowed"));
            return R::Handled;
        }
        if (!origin.empty()) {
            res.set_header("Access-Control-Allow-Origin", origin);
            res.set_header("Vary", "Origin");
        }
        if (req.method == "OPTIONS") {
            res.status = 204;
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers",
                           "Authorization, Content-Type, X-Api-Key");
            res.set_header("Access-Control-Max-Age", "600");
            return R::Handled;
        }
        if (req.path == "/health" || req.path == "/" || req.path == "/index.html") {
            return R::Unhandled;
        }
        if (!authorized(req, res)) return R::Handled;
        // JSON only, checked before the body is read: a web page can send a form or text/plain
        // body anywhere without asking first.
        const std::string type = req.get_header_value("Content-Type");
        if (req.method == "POST" && !is_json_content_type(type)) {
            send_error(res,
                       api_error(415, fmt::format("the body must be JSON sent as "
                                                  "'Content-Type: application/json' (got '{}')",
                                                  type.substr(0, 100))));
            return R::Handled;
        }
        return R::Unhandled;
    });
    // Errors cpp-httplib answers itself (404, 413, 400 for a malformed request line...) carry
    // OpenAI's JSON too.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        std::string message;
        switch (res.status) {
            case 404:
                message = fmt::format("no route {} {}", req.method, req.path);
                break;
            case 405:
                message = fmt::format("{} is not allowed on {}", req.method, req.path);
                break;
            case 413:
                message = fmt::format(
                    "the request body is larger than the server's limit of "
                    "{} bytes",
                    opt.max_body_bytes);
                break;
            default:
                message = fmt::format("the request could not be served (HTTP {})", res.status);
        }
        res.set_content(
            error_json(api_error(res.status, message,
                                 res.status >= 500 ? "server_error" : "invalid_request_error"))
                .dump(),
            "application/json");
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, api_error(500, "internal error: " + what, "server_error"));
        });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        {
            std::lock_guard<std::mutex> lock(counts_mutex);
            ++counts[{route_label(req.path), res.status}];
        }
#ifdef __GLIBC__
        // A refused large request never reaches the scheduler, whose idle trim would give its
        // parse and render buffers back: they stayed resident (1.8 GB after 8 of 7 MB).
        if (res.status >= 400 && req.body.size() >= (1u << 20)) malloc_trim(0);
#endif
    });

    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        const SchedulerStats s = scheduler.stats();
        const json j = {{"status", stopping ? "stopping" : "ok"},
                        {"slots_idle", s.slots - s.slots_busy},
                        {"slots_processing", s.slots_busy},
                        {"queued", s.queued}};
        res.status = stopping ? 503 : 200;
        res.set_content(j.dump(), "application/json");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        const HParams& hp = model.model.hp;
        const json m = {
            {"id", opt.model_name},
            {"object", "model"},
            {"created",
             std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count()},
            {"owned_by", "memwall"},
            {"meta",
             {{"architecture", hp.arch},
              {"n_params", model.model.n_params},
              {"size", model.model.weight_bytes},
              {"n_ctx_train", hp.n_ctx_train},
              {"n_ctx_slot", scheduler.n_ctx_slot()},
              {"slots", ctx.n_seq_max()}}}};
        res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(),
                        "application/json");
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_text(), "text/plain; version=0.0.4");
    });
    auto page = [](const httplib::Request&, httplib::Response& res) {
        res.set_content(chat_page_html(), "text/html; charset=utf-8");
    };
    http.Get("/", page);
    http.Get("/index.html", page);
    http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        completion(req, res, true);
    });
    http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
        completion(req, res, false);
    });
}

void HttpServer::Impl::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
    const auto arrived = Clock::now();
    if (stopping) {
        send_error(res, api_error(503, "the server is shutting down", "server_error"));
        return;
    }
    CompletionRequest r;
    std::vector<int32_t> prompt;
    try {
        r = parse_completion_request(req.body, chat, opt.sampling,
                                     RequestLimits{opt.max_tokens, model.model.hp.n_vocab});
        std::string text;
        if (chat) {
            try {
                text = opt.render_chat(r.messages);
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
    Job job;
    job.prompt = std::move(prompt);
    job.max_tokens = r.max_tokens;
    job.sampling = r.sampling;
    job.stop = r.stop;
    job.ignore_eos = r.ignore_eos;
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
    auto probe = std::make_shared<ConnectionProbe>(req);
    if (!r.stream) {
        std::string text;
        for (;;) {
            Channel::Update u = channel->take(std::chrono::milliseconds(50));
            text += u.text;
            if (u.done) {
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
                } else {
                    res.set_content(
                        (chat ? chat_response(id, created, model_name, text, u.finish, u.usage)
                              : completion_response(id, created, model_name, text, u.finish,
                                                    u.usage))
                            .dump(),
                        "application/json");
                }
                return;
            }
            if (probe->gone()) {
                channel->cancel();  // the slot is freed at the scheduler's next step
                res.status = 499;
                return;
            }
        }
    }

    const bool include_usage = r.include_usage;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream", [channel, probe, chat, id, created, model_name, include_usage,
                              timeout_s, first = true](size_t, httplib::DataSink& sink) mutable {
            auto write = [&](const std::string& s) {
                if (!sink.write(s.data(), s.size())) {
                    channel->cancel();
                    return false;
                }
                return true;
            };
            if (first && chat) {
                first = false;
                if (!write(sse(chat_chunk(id, created, model_name, nullptr, true, Finish::none))))
                    return false;
            }
            for (;;) {
                Channel::Update u = channel->take(std::chrono::milliseconds(100));
                if (!u.text.empty()) {
                    const json chunk =
                        chat ? chat_chunk(id, created, model_name, &u.text, false, Finish::none)
                             : completion_chunk(id, created, model_name, u.text, Finish::none);
                    if (!write(sse(chunk))) return false;
                }
                if (u.done) {
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
                        const json last =
                            chat ? chat_chunk(id, created, model_name, nullptr, false, u.finish)
                                 : completion_chunk(id, created, model_name, empty, u.finish);
                        if (!write(sse(last))) return false;
                        if (include_usage &&
                            !write(sse(usage_chunk(id, created, model_name, chat, u.usage))))
                            return false;
                    }
                    write("data: [DONE]\n\n");
                    sink.done();
                    return true;
                }
                if (u.text.empty() && probe->gone()) {
                    channel->cancel();
                    return false;
                }
            }
        });
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
    const ServerOptions& o = impl_->opt;
    if (o.port == 0) {
        impl_->bound_port = impl_->http.bind_to_any_port(o.host.c_str());
    } else if (impl_->http.bind_to_port(o.host.c_str(), o.port)) {
        impl_->bound_port = o.port;
    }
    if (impl_->bound_port <= 0) {
        fail(ErrorKind::io, "cannot listen on {}:{} (in use, or not an address of this machine)",
             o.host, o.port);
    }
    // cpp-httplib listens with a backlog of 5: a burst of 32 clients saw SYNs dropped and
    // retried a second later. listen() again on the bound socket only raises it.
    if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, 1024);
}

int HttpServer::port() const {
    return impl_->bound_port;
}

void HttpServer::run() {
    impl_->run_entered = true;
    if (!impl_->stopping) impl_->http.listen_after_bind();
    impl_->run_returned = true;
}

void HttpServer::stop(double grace_s) {
    if (impl_->stopping.exchange(true)) {
        impl_->scheduler.shutdown(std::chrono::milliseconds(int64_t(grace_s * 1000)));
        return;
    }
    impl_->scheduler.shutdown(std::chrono::milliseconds(int64_t(grace_s * 1000)));
    while (impl_->run_entered && !impl_->run_returned && !impl_->http.is_running())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    impl_->http.stop();
}

}  // namespace mw::server
