#include "server/http_transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/error.h"

namespace mw::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLargeBody = 1u << 20;
constexpr size_t kStreamBuffer = 256u << 10;  // streamed bytes MHD has not taken yet
// A large body's share of the budget: itself, its parsed JSON and the prompt rendered from it.
constexpr size_t kLargeBodyCopies = 3;
// A request refused on its header alone still has its body read and dropped, up to this many
// bytes, before the reply: a client still writing it would otherwise get EPIPE (or SIGPIPE)
// instead of the reply. Larger ones are answered at once and the connection closed.
constexpr uint64_t kDrainMax = 16u << 20;

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// Whether the peer has closed or reset the connection: read-hangup, or readable with nothing
// to read (bytes waiting are a pipelined request, not a hang-up).
bool socket_gone(int fd) {
    pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
    if (p.revents & POLLIN) {
        char c;
        return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }
    return false;
}

std::string address_text(const sockaddr* a) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (!a) return "";
    if (a->sa_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, buf, sizeof buf);
    } else if (a->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, buf, sizeof buf);
    }
    return buf;
}

// Threads for the routes that block, each request once; at most `max_pending` waiting.
class WorkerPool {
  public:
    WorkerPool(unsigned threads, size_t max_pending) : max_pending_(max_pending) {
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
    }
    ~WorkerPool() { stop(); }
    bool submit(std::function<void()> task) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || queue_.size() >= max_pending_) return false;
        queue_.push_back(std::move(task));
        cv_.notify_one();
        return true;
    }
    // Waits up to `wait` for every task to end.
    void wait_idle(Clock::duration wait) {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_cv_.wait_for(lock, wait, [&] { return queue_.empty() && busy_ == 0; });
    }
    // Takes no more tasks; joins the threads once they have run every task taken.
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        cv_.notify_all();
        for (std::thread& t : threads_) {
            if (t.joinable()) t.join();
        }
        threads_.clear();
    }

  private:
    void loop() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) return;
                task = std::move(queue_.front());
                queue_.pop_front();
                ++busy_;
            }
            task();
            std::lock_guard<std::mutex> lock(mutex_);
            --busy_;
            idle_cv_.notify_all();
        }
    }

    size_t max_pending_;
    std::mutex mutex_;
    std::condition_variable cv_, idle_cv_;
    std::deque<std::function<void()>> queue_;
    std::vector<std::thread> threads_;
    unsigned busy_ = 0;
    bool stopping_ = false;
};

// One request and its reply, shared by the event thread that reads and writes its connection
// and the worker that serves it. The connection may be touched (resumed) only while `closed` is
// false, under `mutex`.
struct Exchange {
    MHD_Connection* conn = nullptr;
    HttpRequest req;
    HttpResponse res;
    enum class Stage { reading, serving, reply_ready, replying } stage = Stage::reading;
    bool refused = false;   // answered before the body was read: what is left of it is dropped
    bool draining = false;  // refused, the reply queued once the body has been read
    size_t reserved = 0;    // bytes of the large-body budget
    uint64_t content_length = 0;

    std::mutex mutex;
    std::condition_variable drained;
    bool suspended = false;
    bool closed = false;
    bool aborted = false;  // the server is stopping: the client counts as gone
    std::string out;       // streamed bytes not yet taken
    bool stream_end = false;
};

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (same_name(k, name)) return v;
    }
    return "";
}

struct HttpTransport::Impl {
    std::string host;
    int port;
    HttpLimits limits;
    HttpHandlers handlers;
    int listen_fd = -1;
    int bound_port = -1;
    MHD_Daemon* daemon = nullptr;
    std::unique_ptr<WorkerPool> workers;
    std::atomic<size_t> large_bytes{0};

    // The deadline each connection is under: its header (from the connection or the end of
    // the previous reply), or its body; none while it is served.
    struct Watch {
        int fd = -1;
        std::string peer;  // address and port, to tell a reused descriptor from this one
        enum class Kind { none, header, body } kind = Kind::header;
        Clock::time_point deadline;
    };
    std::mutex watch_mutex;
    std::map<MHD_Connection*, Watch> watches;
    std::mutex live_mutex;
    std::map<Exchange*, std::shared_ptr<Exchange>> live;  // exchanges not completed yet
    // Memory was freed since the last trim (a request served, a connection closed).
    std::atomic<bool> trim_pending{false};
    std::thread sweeper;
    std::mutex sweeper_mutex;
    std::condition_variable sweeper_cv;
    bool sweeper_stop = false;

    Impl(std::string h, int p, HttpLimits l, HttpHandlers hs)
        : host(std::move(h)), port(p), limits(l), handlers(std::move(hs)) {}

    void watch(MHD_Connection* c, Watch::Kind kind, double timeout_s) {
        std::lock_guard<std::mutex> lock(watch_mutex);
        auto it = watches.find(c);
        if (it == watches.end()) return;
        it->second.kind = kind;
        it->second.deadline = Clock::now() + seconds(timeout_s);
    }

    static std::string peer_of(int fd) {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
        const int p = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port)
                                              : ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port);
        return address_text(reinterpret_cast<sockaddr*>(&a)) + ":" + std::to_string(p);
    }

    // Connections past their deadline are shut down; libmicrohttpd then sees the end of the
    // stream and closes them on its own thread.
    void sweep() {
        std::unique_lock<std::mutex> lock(sweeper_mutex);
        while (!sweeper_cv.wait_for(lock, std::chrono::milliseconds(100),
                                    [&] { return sweeper_stop; })) {
            trim_when_idle();
            const auto now = Clock::now();
            std::lock_guard<std::mutex> w(watch_mutex);
            for (auto& [conn, wt] : watches) {
                if (wt.kind == Watch::Kind::none || now < wt.deadline) continue;
                wt.kind = Watch::Kind::none;
                if (peer_of(wt.fd) == wt.peer) ::shutdown(wt.fd, SHUT_RDWR);
            }
        }
    }

    // Requests and connections leave their buffers in the allocator's arenas (one per worker
    // that ran): once nothing is in flight they are given back, so that idle RSS does not keep
    // the high-water mark of the last burst, refused requests included.
    void trim_when_idle() {
        if (!trim_pending.load()) return;
        {
            std::lock_guard<std::mutex> lock(live_mutex);
            if (!live.empty()) return;
        }
        trim_pending = false;
#ifdef __GLIBC__
        malloc_trim(0);
#endif
    }

    bool reserve_large(size_t n) {
        size_t used = large_bytes.load();
        do {
            if (used + n > limits.large_body_budget) return false;
        } while (!large_bytes.compare_exchange_weak(used, used + n));
        return true;
    }
    void release_large(Exchange& ex) {
        if (ex.reserved) large_bytes -= std::exchange(ex.reserved, 0);
    }

    // Queues `res` as the whole reply (not streamed).
    void queue_reply(Exchange& ex) {
        MHD_Response* r = MHD_create_response_from_buffer(ex.res.body.size(), ex.res.body.data(),
                                                          MHD_RESPMEM_MUST_COPY);
        add_headers(r, ex.res);
        MHD_queue_response(ex.conn, unsigned(ex.res.status), r);
        MHD_destroy_response(r);
    }
    static void add_headers(MHD_Response* r, const HttpResponse& res) {
        MHD_add_response_header(r, "Content-Type", res.content_type.c_str());
        for (const auto& [k, v] : res.headers) MHD_add_response_header(r, k.c_str(), v.c_str());
        // An overloaded server sheds the connection too: each one kept alive holds its buffers.
        if (res.status == 503) MHD_add_response_header(r, "Connection", "close");
    }
    // A refusal of the transport's own, before or while the body is read (the connection is
    // closed after it: the rest of the body is not read).
    void set_refusal(Exchange& ex, int status, const std::string& message, bool retry) {
        ex.refused = true;
        ex.res = HttpResponse{};
        ex.res.status = status;
        ex.res.body = handlers.error_body(status, message);
        if (retry) ex.res.set_header("Retry-After", "1");
        release_large(ex);
        ex.req.body = std::string();
    }
    // A refusal on the header alone: replied to now, or once a small body has been dropped.
    void refuse_early(Exchange& ex) {
        ex.refused = true;
        if (ex.content_length > 0 && ex.content_length <= kDrainMax) {
            ex.draining = true;
        } else {
            queue_reply(ex);
        }
    }
    void refuse(Exchange& ex, int status, const std::string& message, bool retry = false) {
        set_refusal(ex, status, message, retry);
        refuse_early(ex);
    }

    // The same, once part of the body was read: libmicrohttpd would read the rest before
    // replying, so the reply is written here and the connection closed (returns MHD_NO).
    MHD_Result refuse_mid_body(Exchange& ex, int status, const std::string& message,
                               bool retry = false) {
        ex.refused = true;
        ex.res = HttpResponse{};
        ex.res.status = status;
        ex.res.body = handlers.error_body(status, message);
        release_large(ex);
        ex.req.body = std::string();
        const MHD_ConnectionInfo* info =
            MHD_get_connection_info(ex.conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info) {
            const std::string reply = fmt::format(
                "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}"
                "Connection: close\r\n\r\n{}",
                status, status == 413 ? "Content Too Large" : "Service Unavailable",
                ex.res.body.size(), retry ? "Retry-After: 1\r\n" : "", ex.res.body);
            (void)!::send(info->connect_fd, reply.data(), reply.size(),
                          MSG_NOSIGNAL | MSG_DONTWAIT);
            ::shutdown(info->connect_fd, SHUT_WR);
        }
        return MHD_NO;
    }

    MHD_Result on_request(MHD_Connection* c, const char* url, const char* method,
                          const char* upload, size_t* upload_size, void** con_cls);
    void begin(MHD_Connection* c, const char* url, const char* method, void** con_cls);
    void serve_on_worker(const std::shared_ptr<Exchange>& ex);
    static ssize_t read_stream(void* cls, uint64_t, char* buf, size_t max);
    void on_completed(MHD_Connection* c, void** con_cls);
    void on_connection(MHD_Connection* c, MHD_ConnectionNotificationCode code);
};

// The header is complete: the request is built from it and checked before any body is read.
void HttpTransport::Impl::begin(MHD_Connection* c, const char* url, const char* method,
                                void** con_cls) {
    auto ex = std::make_shared<Exchange>();
    *con_cls = new std::shared_ptr<Exchange>(ex);
    ex->conn = c;
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        live[ex.get()] = ex;
    }
    ex->req.method = method;
    ex->req.path = url;
    ex->req.arrived = Clock::now();
    MHD_get_connection_values(
        c, MHD_HEADER_KIND,
        [](void* cls, MHD_ValueKind, const char* k, const char* v) {
            static_cast<HttpRequest*>(cls)->headers.emplace_back(k, v ? v : "");
            return MHD_YES;
        },
        &ex->req);
    const MHD_ConnectionInfo* addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    ex->req.remote_addr = addr ? address_text(addr->client_addr) : "";
    const MHD_ConnectionInfo* fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const int sock = fd ? fd->connect_fd : -1;
    std::weak_ptr<Exchange> weak = ex;
    ex->req.client_gone = [weak, sock] {
        auto e = weak.lock();
        if (!e) return true;
        {
            std::lock_guard<std::mutex> lock(e->mutex);
            if (e->closed || e->aborted) return true;
        }
        return sock >= 0 && socket_gone(sock);
    };

    const std::string length = ex->req.header("Content-Length");
    if (!length.empty()) ex->content_length = std::strtoull(length.c_str(), nullptr, 10);
    watch(c, Watch::Kind::body, limits.body_timeout_s);
    if (ex->content_length > limits.max_body_bytes) {
        refuse(*ex, 413,
               fmt::format("the request body is larger than the server's limit of {} bytes",
                           limits.max_body_bytes));
        return;
    }
    if (handlers.check(ex->req, ex->res)) {
        refuse_early(*ex);
        return;
    }
    if (ex->content_length > kLargeBody) {
        const size_t share = kLargeBodyCopies * size_t(ex->content_length);
        if (!reserve_large(share)) {
            refuse(*ex, 503, "the server is reading other large requests; retry later", true);
            return;
        }
        ex->reserved = share;
    }
    // One allocation of the announced size (checked against the limit above) rather than the
    // string's doublings: less to copy, and under ASan less held in its quarantine.
    ex->req.body.reserve(size_t(ex->content_length));
}

MHD_Result HttpTransport::Impl::on_request(MHD_Connection* c, const char* url, const char* method,
                                           const char* upload, size_t* upload_size,
                                           void** con_cls) {
    if (!*con_cls) {
        begin(c, url, method, con_cls);
        return MHD_YES;
    }
    const std::shared_ptr<Exchange> ex = *static_cast<std::shared_ptr<Exchange>*>(*con_cls);
    if (ex->refused) {
        if (*upload_size == 0 && ex->draining) {
            ex->draining = false;
            queue_reply(*ex);
        }
        *upload_size = 0;  // dropped
        return MHD_YES;
    }
    if (*upload_size > 0) {
        const size_t n = *upload_size;
        *upload_size = 0;
        if (ex->req.body.size() + n > limits.max_body_bytes) {
            return refuse_mid_body(
                *ex, 413,
                fmt::format("the request body is larger than the server's limit of {} bytes",
                            limits.max_body_bytes));
        }
        // A chunked body (no length) past 1 MiB takes its share of the budget now: the most it
        // may grow to, in one allocation (no copies as it grows).
        if (!ex->reserved && ex->req.body.size() + n > kLargeBody) {
            const size_t share = kLargeBodyCopies * limits.max_body_bytes;
            if (!reserve_large(share)) {
                return refuse_mid_body(
                    *ex, 503, "the server is reading other large requests; retry later", true);
            }
            ex->reserved = share;
            ex->req.body.reserve(limits.max_body_bytes);
        }
        ex->req.body.append(upload, n);
        return MHD_YES;
    }
    std::unique_lock<std::mutex> lock(ex->mutex);
    switch (ex->stage) {
        case Exchange::Stage::reading:
            watch(c, Watch::Kind::none, 0);
            if (!handlers.blocking(ex->req)) {
                handlers.serve(ex->req, ex->res);
                release_large(*ex);
                ex->stage = Exchange::Stage::replying;
                queue_reply(*ex);
                return MHD_YES;
            }
            ex->stage = Exchange::Stage::serving;
            if (!workers->submit([this, ex] { serve_on_worker(ex); })) {
                lock.unlock();
                set_refusal(*ex, 503, "every worker of the server is busy; retry later", true);
                queue_reply(*ex);
                return MHD_YES;
            }
            // Under the lock the worker needs to resume it: suspended before it can be.
            MHD_suspend_connection(c);
            ex->suspended = true;
            return MHD_YES;
        case Exchange::Stage::reply_ready:
            ex->stage = Exchange::Stage::replying;
            if (!ex->res.stream) {
                queue_reply(*ex);
            } else {
                MHD_Response* r = MHD_create_response_from_callback(
                    MHD_SIZE_UNKNOWN, 16u << 10, read_stream, new std::shared_ptr<Exchange>(ex),
                    [](void* cls) { delete static_cast<std::shared_ptr<Exchange>*>(cls); });
                add_headers(r, ex->res);
                MHD_queue_response(c, unsigned(ex->res.status), r);
                MHD_destroy_response(r);
            }
            return MHD_YES;
        default:
            return MHD_YES;
    }
}

void HttpTransport::Impl::serve_on_worker(const std::shared_ptr<Exchange>& ex) {
    try {
        handlers.serve(ex->req, ex->res);
    } catch (const std::exception& e) {
        ex->res = HttpResponse{};
        ex->res.status = 500;
        ex->res.body = handlers.error_body(500, std::string("internal error: ") + e.what());
    }
    release_large(*ex);
    ex->req.body = std::string();
    auto resume = [&] {  // under ex->mutex
        if (ex->suspended && !ex->closed) {
            ex->suspended = false;
            MHD_resume_connection(ex->conn);
        }
    };
    {
        std::lock_guard<std::mutex> lock(ex->mutex);
        ex->stage = Exchange::Stage::reply_ready;
        resume();
    }
    if (!ex->res.stream) return;
    const auto write = [&](std::string_view s) {
        std::unique_lock<std::mutex> lock(ex->mutex);
        const bool drained = ex->drained.wait_for(lock, seconds(limits.write_timeout_s), [&] {
            return ex->closed || ex->aborted || ex->out.size() < kStreamBuffer;
        });
        if (!drained || ex->closed || ex->aborted) return false;
        ex->out.append(s);
        resume();
        return true;
    };
    try {
        ex->res.stream(write);
    } catch (const std::exception&) {
        // The reply is cut short (its status went out already); the connection stays usable.
    }
    std::lock_guard<std::mutex> lock(ex->mutex);
    ex->stream_end = true;
    resume();
}

// libmicrohttpd asks for more of a streamed body: what the worker wrote, or (none yet) the
// connection is suspended until it writes.
ssize_t HttpTransport::Impl::read_stream(void* cls, uint64_t, char* buf, size_t max) {
    Exchange& ex = **static_cast<std::shared_ptr<Exchange>*>(cls);
    std::lock_guard<std::mutex> lock(ex.mutex);
    if (!ex.out.empty()) {
        const size_t n = std::min(max, ex.out.size());
        std::memcpy(buf, ex.out.data(), n);
        ex.out.erase(0, n);
        ex.drained.notify_all();
        return ssize_t(n);
    }
    if (ex.stream_end) return MHD_CONTENT_READER_END_OF_STREAM;
    if (ex.aborted) return MHD_CONTENT_READER_END_WITH_ERROR;
    MHD_suspend_connection(ex.conn);
    ex.suspended = true;
    return 0;
}

void HttpTransport::Impl::on_completed(MHD_Connection* c, void** con_cls) {
    auto* holder = static_cast<std::shared_ptr<Exchange>*>(*con_cls);
    *con_cls = nullptr;
    // A kept-alive connection waits for its next header under the header deadline.
    watch(c, Watch::Kind::header, limits.header_timeout_s);
    if (!holder) return;
    const std::shared_ptr<Exchange> ex = *holder;
    delete holder;
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(ex.get());
    }
    bool served = false;
    {
        std::lock_guard<std::mutex> lock(ex->mutex);
        ex->closed = true;
        ex->drained.notify_all();
        served = ex->stage != Exchange::Stage::reading;
    }
    release_large(*ex);
    if (handlers.answered) handlers.answered(ex->req, ex->res);
    if (served || ex->content_length > kLargeBody) trim_pending = true;
}

void HttpTransport::Impl::on_connection(MHD_Connection* c, MHD_ConnectionNotificationCode code) {
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        trim_pending = true;
        std::lock_guard<std::mutex> lock(watch_mutex);
        watches.erase(c);
        return;
    }
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) return;
    const int fd = info->connect_fd;
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    Watch w;
    w.fd = fd;
    w.peer = peer_of(fd);
    w.deadline = Clock::now() + seconds(limits.header_timeout_s);
    std::lock_guard<std::mutex> lock(watch_mutex);
    watches[c] = std::move(w);
}

HttpTransport::HttpTransport(std::string host, int port, HttpLimits limits, HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(host), port, limits, std::move(handlers))) {}

HttpTransport::~HttpTransport() {
    stop(0.0);
}

void HttpTransport::bind() {
    Impl& t = *impl_;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(t.port);
    const int gai = getaddrinfo(t.host.c_str(), service.c_str(), &hints, &found);
    if (gai != 0) {
        fail(ErrorKind::io, "cannot listen on {}:{} ({})", t.host, t.port, gai_strerror(gai));
    }
    int err = 0;
    for (addrinfo* a = found; a && t.listen_fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        // SO_REUSEADDR only: with SO_REUSEPORT a second server on the port would silently
        // share its connections instead of failing. TCP_NODELAY is inherited by every accepted
        // socket: replies written in parts do not wait for a delayed ACK (~40 ms).
        int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
            ::listen(fd, t.limits.listen_backlog) == 0) {
            t.listen_fd = fd;
        } else {
            err = errno;
            ::close(fd);
        }
    }
    freeaddrinfo(found);
    if (t.listen_fd < 0) {
        fail(ErrorKind::io,
             "cannot listen on {}:{} ({}: in use, or not an address of this machine)", t.host,
             t.port, std::strerror(err));
    }
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    getsockname(t.listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    t.bound_port = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port);
}

int HttpTransport::port() const {
    return impl_->bound_port;
}

void HttpTransport::start() {
    Impl& t = *impl_;
    if (t.daemon || t.listen_fd < 0) return;
    HttpLimits& l = t.limits;
    l.large_body_budget = std::max(l.large_body_budget, kLargeBodyCopies * l.max_body_bytes);
    // Below the descriptor limit, leaving room for the model file, the workers and the rest.
    rlimit nofile{};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
        l.max_connections = unsigned(std::min<uint64_t>(
            l.max_connections, nofile.rlim_cur > 128 ? nofile.rlim_cur - 64 : 64));
    }
    t.workers = std::make_unique<WorkerPool>(std::max(1u, l.workers), size_t(l.workers) * 2);
    t.sweeper_stop = false;
    t.sweeper = std::thread([&t] { t.sweep(); });
    const auto access = [](void* cls, MHD_Connection* c, const char* url, const char* method,
                           const char*, const char* upload, size_t* upload_size, void** con_cls) {
        return static_cast<Impl*>(cls)->on_request(c, url, method, upload, upload_size, con_cls);
    };
    const auto completed = [](void* cls, MHD_Connection* c, void** con_cls,
                              MHD_RequestTerminationCode) {
        static_cast<Impl*>(cls)->on_completed(c, con_cls);
    };
    const auto connection = [](void* cls, MHD_Connection* c, void**,
                               MHD_ConnectionNotificationCode code) {
        static_cast<Impl*>(cls)->on_connection(c, code);
    };
    t.daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, nullptr,
        nullptr, +access, &t, MHD_OPTION_LISTEN_SOCKET, t.listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
        unsigned(std::max(1u, l.event_threads)), MHD_OPTION_CONNECTION_LIMIT, l.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, l.max_connections_per_address,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, l.max_header_bytes, MHD_OPTION_CONNECTION_TIMEOUT,
        unsigned(std::max({l.header_timeout_s, l.body_timeout_s, l.write_timeout_s}) + 30),
        MHD_OPTION_NOTIFY_COMPLETED, +completed, &t, MHD_OPTION_NOTIFY_CONNECTION, +connection, &t,
        MHD_OPTION_END);
    if (!t.daemon)
        fail(ErrorKind::io, "cannot start the HTTP server on {}:{}", t.host, t.bound_port);
}

void HttpTransport::stop_accepting() {
    Impl& t = *impl_;
    if (t.daemon) {
        const MHD_socket fd = MHD_quiesce_daemon(t.daemon);
        if (fd == t.listen_fd) t.listen_fd = -1;
        if (fd >= 0) ::close(fd);
    }
}

void HttpTransport::stop(double wait_s) {
    Impl& t = *impl_;
    if (t.workers) {
        t.workers->wait_idle(seconds(wait_s));
        // What still runs is told its client is gone (and a suspended connection is resumed):
        // libmicrohttpd cannot stop with a connection suspended, and a reply to a client that
        // does not read must not hold the stop for its write timeout.
        std::lock_guard<std::mutex> lock(t.live_mutex);
        for (auto& [p, ex] : t.live) {
            std::lock_guard<std::mutex> l(ex->mutex);
            ex->aborted = true;
            ex->drained.notify_all();
            if (ex->suspended && !ex->closed && ex->stage != Exchange::Stage::serving) {
                ex->suspended = false;
                MHD_resume_connection(ex->conn);
            }
        }
    }
    if (t.workers) t.workers->stop();
    if (t.daemon) {
        MHD_stop_daemon(t.daemon);  // closes every connection, suspended ones too
        t.daemon = nullptr;
        t.listen_fd = -1;  // closed by the daemon unless quiesced before
    }
    if (t.listen_fd >= 0) {
        ::close(t.listen_fd);
        t.listen_fd = -1;
    }
    if (t.sweeper.joinable()) {
        {
            std::lock_guard<std::mutex> lock(t.sweeper_mutex);
            t.sweeper_stop = true;
        }
        t.sweeper_cv.notify_all();
        t.sweeper.join();
    }
    t.workers.reset();
}

}  // namespace mw::server
