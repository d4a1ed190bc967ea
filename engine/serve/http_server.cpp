#include "engine/serve/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

namespace xft::engine::serve {

namespace detail {

// One request's answer, shared by the handler's thread, which writes it, and
// the library's thread, which sends it.
struct Exchange {
  std::mutex mutex;
  MHD_Connection* connection = nullptr;
  int fd = -1;
  bool responded = false;
  int status = 0;
  std::string content_type;
  std::map<std::string, std::string> headers;
  bool streaming = false;
  std::string data;        // the whole body, or streamed bytes the library has not taken yet
  bool ended = false;      // a whole body, or a stream's last write
  bool suspended = false;  // the library waits for the next write
  bool gone = false;       // the request is over (answered, failed, abandoned or stopping)

  // With mutex held: lets the library go on with what was written.
  void wake() {
    if (suspended && !gone) {
      suspended = false;
      MHD_resume_connection(connection);
    }
  }
};

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
using detail::Exchange;

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// RFC 9110 token characters: a name with a space, a colon or a control character is malformed.
bool header_name_ok(std::string_view name) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || kSpecials.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string error_json(std::string_view message, std::string_view type, std::string_view code) {
  nlohmann::json body = {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
  return body.dump();
}

constexpr std::string_view kJson = "application/json";

struct Refusal {
  int status;
  std::string message;
  std::string code;
};

Refusal body_too_large(const HttpLimits& limits) {
  return {413, "request body larger than " + std::to_string(limits.max_body_bytes) + " bytes", "body_too_large"};
}

Refusal server_busy() { return {503, "the server is receiving too much at once; retry later", "server_busy"}; }

}  // namespace

std::string HttpRequest::header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? std::string() : it->second;
}

// ---- HttpResponder --------------------------------------------------------

bool HttpResponder::send(int status, std::string_view content_type, std::string_view body,
                         const std::map<std::string, std::string>& headers) {
  Exchange& e = *exchange_;
  std::lock_guard lock(e.mutex);
  if (e.responded) return false;
  e.responded = true;
  e.status = status;
  e.content_type = content_type;
  for (const auto& [name, value] : headers) e.headers[name] = value;
  e.data = body;
  e.ended = true;
  e.wake();
  return !e.gone;
}

bool HttpResponder::start_stream(int status, std::string_view content_type) {
  Exchange& e = *exchange_;
  std::lock_guard lock(e.mutex);
  if (e.responded) return false;
  e.responded = true;
  e.streaming = true;
  e.status = status;
  e.content_type = content_type;
  e.headers["Cache-Control"] = "no-cache";
  e.wake();
  return !e.gone;
}

bool HttpResponder::write(std::string_view data) {
  Exchange& e = *exchange_;
  std::lock_guard lock(e.mutex);
  if (e.gone || !e.streaming || e.ended) return false;
  e.data += data;
  e.wake();
  return true;
}

bool HttpResponder::end_stream() {
  Exchange& e = *exchange_;
  std::lock_guard lock(e.mutex);
  if (e.gone || !e.streaming || e.ended) return false;
  e.ended = true;
  e.wake();
  return true;
}

bool HttpResponder::client_gone() const {
  Exchange& e = *exchange_;
  // Under the lock the request is not over, so the library has not closed the socket.
  std::lock_guard lock(e.mutex);
  if (e.gone) return true;
  pollfd p{e.fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char c;
  return (p.revents & POLLIN) && ::recv(e.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

bool HttpResponder::responded() const {
  std::lock_guard lock(exchange_->mutex);
  return exchange_->responded;
}

int HttpResponder::status() const {
  std::lock_guard lock(exchange_->mutex);
  return exchange_->status;
}

// ---- the server -------------------------------------------------------------

struct HttpServer::Impl {
  enum class Phase { waiting, receiving, answering, closing };
  struct Request;
  // One TCP connection; lives from the library's "started" to its "closed" notice.
  struct Connection {
    MHD_Connection* mhd = nullptr;
    int fd = -1;
    Clock::time_point waiting_since;  // the request deadline counts from here
    Phase phase = Phase::waiting;
    std::unique_ptr<Request> request;  // the one being received or answered
  };
  struct Request {
    Connection* connection = nullptr;
    HttpRequest http;
    std::shared_ptr<Exchange> exchange;
    std::string target;   // as sent: path and query
    std::string version;  // "HTTP/1.1"
    bool head_seen = false;
    bool refused = false;  // answered while the body came; the rest of it is dropped
    bool dispatched = false;
    bool queued = false;
    size_t reserved = 0;  // body bytes counted in buffered_bytes
  };

  int listen_fd = -1;
  int port = 0;
  MHD_Daemon* daemon = nullptr;
  HttpHandler handler;
  HttpOptions options;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> buffered_bytes{0};

  std::mutex mutex;  // connections and workers; taken before any Exchange's mutex
  std::condition_variable changed;
  std::map<MHD_Connection*, Connection*> connections;
  int workers = 0;
  std::thread sweeper;

  MHD_Result on_head(Request& request);
  MHD_Result on_body(Request& request, const char* data, size_t* size);
  MHD_Result on_complete(Request& request);
  MHD_Result refuse(Request& request, const Refusal& refusal);
  void refuse_later(Request& request, const Refusal& refusal);
  MHD_Result queue_answer(Request& request);
  void run_handler(std::shared_ptr<Exchange> exchange, HttpRequest http);
  void release(Request& request);
  void sweep();
  void stop();
};

namespace {

using Impl = HttpServer::Impl;

Impl::Connection* connection_of(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<Impl::Connection*>(info->socket_context) : nullptr;
}

void on_connection(void* cls, MHD_Connection* connection, void** context, MHD_ConnectionNotificationCode what) {
  auto* server = static_cast<Impl*>(cls);
  if (what == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* c = new Impl::Connection();
    c->mhd = connection;
    c->fd = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD)->connect_fd;
    c->waiting_since = Clock::now();
    *context = c;
    std::lock_guard lock(server->mutex);
    server->connections[connection] = c;
    return;
  }
  auto* c = static_cast<Impl::Connection*>(*context);
  if (!c) return;
  std::unique_ptr<Impl::Request> request;
  {
    // The library closes the socket only after this returns, so the sweeper never sees a reused fd.
    std::lock_guard lock(server->mutex);
    server->connections.erase(connection);
    request = std::move(c->request);
  }
  if (request) server->release(*request);
  delete c;
  *context = nullptr;
}

// Called once the request line has arrived: the request object, with the raw
// target (the library would percent-decode the path and split the query).
void* on_uri(void* cls, const char* uri, MHD_Connection* connection) {
  auto* server = static_cast<Impl*>(cls);
  Impl::Connection* c = connection_of(connection);
  if (!c) return nullptr;
  auto request = std::make_unique<Impl::Request>();
  request->connection = c;
  request->target = uri;
  std::string_view target(uri);
  const size_t q = target.find('?');
  request->http.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request->http.query = std::string(target.substr(q + 1));
  Impl::Request* raw = request.get();
  std::unique_ptr<Impl::Request> previous;
  {
    std::lock_guard lock(server->mutex);
    previous = std::move(c->request);
    c->request = std::move(request);
    c->phase = Impl::Phase::receiving;
  }
  if (previous) server->release(*previous);
  return raw;
}

void on_completed(void* cls, MHD_Connection* connection, void** context, MHD_RequestTerminationCode) {
  auto* server = static_cast<Impl*>(cls);
  auto* request = static_cast<Impl::Request*>(*context);
  *context = nullptr;
  if (!request) return;
  server->release(*request);
  Impl::Connection* c = request->connection;
  std::unique_ptr<Impl::Request> done;
  std::lock_guard lock(server->mutex);
  if (c->request.get() == request) done = std::move(c->request);
  c->phase = Impl::Phase::waiting;
  c->waiting_since = Clock::now();
}

MHD_Result on_access(void* cls, MHD_Connection*, const char*, const char* method, const char* version,
                     const char* upload, size_t* upload_size, void** context) {
  auto* server = static_cast<Impl*>(cls);
  auto* request = static_cast<Impl::Request*>(*context);
  if (!request || server->stopping) return MHD_NO;
  if (!request->head_seen) {
    request->http.method = method;
    request->version = version;
    return server->on_head(*request);
  }
  if (request->queued) {
    *upload_size = 0;  // an early answer went out; the rest of the body is dropped
    return MHD_YES;
  }
  if (*upload_size) return server->on_body(*request, upload, upload_size);
  // The library takes an answer only before or after the body: a refusal made while it came goes out now.
  if (!request->dispatched && !request->refused) return server->on_complete(*request);
  return server->queue_answer(*request);  // or resumed: the handler answered (or the request is over)
}

ssize_t read_stream(void* cls, uint64_t, char* buffer, size_t max) {
  Exchange& e = **static_cast<std::shared_ptr<Exchange>*>(cls);
  std::lock_guard lock(e.mutex);
  if (e.gone) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (!e.data.empty()) {
    const size_t n = std::min(max, e.data.size());
    std::memcpy(buffer, e.data.data(), n);
    e.data.erase(0, n);
    return static_cast<ssize_t>(n);
  }
  if (e.ended) return MHD_CONTENT_READER_END_OF_STREAM;
  // Nothing to send yet: the connection leaves the event loop until the next write.
  e.suspended = true;
  MHD_suspend_connection(e.connection);
  return 0;
}

void free_stream(void* cls) { delete static_cast<std::shared_ptr<Exchange>*>(cls); }

struct HeaderScan {
  std::map<std::string, std::string>* headers;
  std::map<std::string, int> counts;
  bool malformed = false;
};

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, size_t key_size, const char* value,
                          size_t value_size) {
  auto* scan = static_cast<HeaderScan*>(cls);
  std::string_view name(key, key_size);
  if (!header_name_ok(name)) scan->malformed = true;
  std::string lower = lowercase(name);
  std::string text = value ? std::string(value, value_size) : std::string();
  auto [it, inserted] = scan->headers->emplace(lower, text);
  if (!inserted) it->second += ", " + text;  // RFC 9110 5.3: repeated fields join as a list
  ++scan->counts[lower];
  return MHD_YES;
}

// A Content-Length that is exactly digits; -1 otherwise.
long long parse_length(const std::string& text) {
  if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), ::isdigit)) return -1;
  return std::stoll(text);
}

struct Head {
  const std::string& target;
  const std::string& version;
  size_t size;  // request line and headers, bytes
  HeaderScan& scan;
};

// What the library let through that this server does not: heads too large,
// malformed names and targets, repeated framing headers, bodies too large.
std::optional<Refusal> framing_refusal(const Head& head, const HttpRequest& http, const HttpLimits& limits,
                                       size_t buffered) {
  auto malformed = [](std::string message) { return Refusal{400, std::move(message), "malformed_request"}; };
  if (head.size > limits.max_header_bytes) return Refusal{431, "request headers too large", "headers_too_large"};
  if (head.scan.malformed) return malformed("malformed header name");
  if (head.target.empty() || head.target.front() != '/' ||
      std::any_of(head.target.begin(), head.target.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; })) {
    return malformed("malformed request target");
  }
  if (head.version == MHD_HTTP_VERSION_1_1 && head.scan.counts["host"] == 0) {
    return malformed("an HTTP/1.1 request needs a Host header");
  }
  for (const char* single : {"content-length", "host", "transfer-encoding", "authorization", "origin"}) {
    if (head.scan.counts[single] > 1) return malformed(std::string("more than one ") + single + " header");
  }
  const std::string content_length = http.header("content-length");
  const std::string transfer_encoding = lowercase(http.header("transfer-encoding"));
  if (!transfer_encoding.empty() && (transfer_encoding != "chunked" || !content_length.empty())) {
    return malformed("Transfer-Encoding must be 'chunked' alone, without Content-Length");
  }
  if (content_length.empty()) return std::nullopt;
  const long long length = parse_length(content_length);
  if (length < 0) return malformed("bad Content-Length");
  if (static_cast<size_t>(length) > limits.max_body_bytes) return body_too_large(limits);
  if (buffered + static_cast<size_t>(length) > limits.max_buffered_body_bytes) return server_busy();
  return std::nullopt;
}

std::optional<Refusal> access_refusal(const AccessPolicy& policy, const HttpRequest& http) {
  const std::string host = http.header("host");
  if (!host_allowed(policy, host)) {
    return Refusal{403,
                   "Host '" + host + "' is not served: without an API key only localhost, 127.0.0.1 and [::1] are "
                   "(name it with --allowed-hosts, or require a key)",
                   "forbidden_host"};
  }
  const std::string origin = http.header("origin");
  if (check_origin(policy, origin, host) == OriginCheck::refused) {
    return Refusal{403, "Origin '" + origin + "' may not use this server (allow it with --cors-origin " + origin + ")",
                   "forbidden_origin"};
  }
  return std::nullopt;
}

}  // namespace

void Impl::release(Request& request) {
  if (request.exchange) {
    std::lock_guard lock(request.exchange->mutex);
    request.exchange->gone = true;
  }
  buffered_bytes -= request.reserved;
  request.reserved = 0;
}

MHD_Result Impl::on_head(Request& request) {
  request.head_seen = true;
  MHD_Connection* mhd = request.connection->mhd;
  request.exchange = std::make_shared<Exchange>();
  request.exchange->connection = mhd;
  request.exchange->fd = request.connection->fd;
  HttpRequest& http = request.http;
  HeaderScan scan{&http.headers, {}, false};
  MHD_get_connection_values_n(mhd, MHD_HEADER_KIND, collect_header, &scan);
  const MHD_ConnectionInfo* size = MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
  const Head head{request.target, request.version, size ? size->header_size : 0, scan};
  if (auto refusal = framing_refusal(head, http, options.limits, buffered_bytes)) return refuse(request, *refusal);
  if (auto refusal = access_refusal(options.access, http)) return refuse(request, *refusal);
  const std::string origin = http.header("origin");
  if (check_origin(options.access, origin, http.header("host")) == OriginCheck::allowed) {
    request.exchange->headers = cors_headers(origin);
    if (http.method == "OPTIONS") {
      HttpResponder(request.exchange).send(204, "text/plain", "", preflight_headers(origin));
      if (options.answered) options.answered(http, 204);
      return queue_answer(request);
    }
  }
  if (options.screen) {
    HttpResponder responder(request.exchange);
    options.screen(http, responder);
    if (responder.responded()) return queue_answer(request);
  }
  return MHD_YES;
}

// A chunked body has no declared length, so its limits are checked as it
// comes; past one, the rest is read and dropped (never buffered) and the
// refusal goes out after it, all within the request deadline.
MHD_Result Impl::on_body(Request& request, const char* data, size_t* size) {
  const size_t n = *size;
  *size = 0;
  if (request.refused) return MHD_YES;
  const HttpLimits& limits = options.limits;
  if (request.http.body.size() + n > limits.max_body_bytes) {
    refuse_later(request, body_too_large(limits));
    return MHD_YES;
  }
  if (buffered_bytes.fetch_add(n) + n > limits.max_buffered_body_bytes) {
    buffered_bytes -= n;
    refuse_later(request, server_busy());
    return MHD_YES;
  }
  request.reserved += n;
  request.http.body.append(data, n);
  return MHD_YES;
}

MHD_Result Impl::on_complete(Request& request) {
  request.dispatched = true;
  std::shared_ptr<Exchange> exchange = request.exchange;
  {
    std::lock_guard lock(mutex);
    std::lock_guard exchange_lock(exchange->mutex);
    // stop() sets stopping before it takes the mutex to end every request it can see.
    if (exchange->gone || stopping) return MHD_NO;
    request.connection->phase = Phase::answering;
    // Until the handler answers, the connection is out of the event loop.
    exchange->suspended = true;
    MHD_suspend_connection(request.connection->mhd);
    ++workers;
  }
  try {
    std::thread(&Impl::run_handler, this, exchange, std::move(request.http)).detach();
  } catch (const std::system_error&) {
    HttpResponder(exchange).send(503, kJson, error_json("cannot start a thread for the request", "server_error",
                                                        "server_busy"));
    std::lock_guard lock(mutex);
    --workers;
    changed.notify_all();
  }
  return MHD_YES;
}

void Impl::run_handler(std::shared_ptr<Exchange> exchange, HttpRequest http) {
  HttpResponder responder(exchange);
  try {
    handler(http, responder);
  } catch (const std::exception& e) {
    responder.send(500, kJson, error_json(e.what(), "server_error", ""));
  }
  if (!responder.responded()) responder.send(500, kJson, error_json("no answer", "server_error", ""));
  responder.end_stream();  // a stream the handler left open; false (harmless) otherwise
  std::lock_guard lock(mutex);
  --workers;
  changed.notify_all();
}

// A refused client is not trusted to frame its next request: the connection closes after the answer.
void Impl::refuse_later(Request& request, const Refusal& refusal) {
  const char* type = refusal.status >= 500 ? "server_error" : "invalid_request_error";
  HttpResponder(request.exchange)
      .send(refusal.status, kJson, error_json(refusal.message, type, refusal.code), {{"Connection", "close"}});
  request.refused = true;
  if (options.answered) options.answered(request.http, refusal.status);
  request.http.body.clear();
  request.http.body.shrink_to_fit();
  buffered_bytes -= request.reserved;
  request.reserved = 0;
}

MHD_Result Impl::refuse(Request& request, const Refusal& refusal) {
  refuse_later(request, refusal);
  return queue_answer(request);
}

MHD_Result Impl::queue_answer(Request& request) {
  Exchange& e = *request.exchange;
  MHD_Response* response = nullptr;
  int status = 0;
  {
    std::lock_guard lock(e.mutex);
    if (e.gone || !e.responded) return MHD_NO;
    if (e.streaming) {
      response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_stream,
                                                   new std::shared_ptr<Exchange>(request.exchange), free_stream);
    } else {
      response = MHD_create_response_from_buffer(e.data.size(), e.data.data(), MHD_RESPMEM_MUST_COPY);
      e.data.clear();
    }
    if (!response) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", e.content_type.c_str());
    for (const auto& [name, value] : e.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
    status = e.status;
  }
  request.queued = true;
  {
    std::lock_guard lock(mutex);
    request.connection->phase = Phase::answering;
  }
  const MHD_Result queued = MHD_queue_response(request.connection->mhd, static_cast<unsigned>(status), response);
  MHD_destroy_response(response);
  return queued;
}

// Closes connections whose request has not fully arrived by its deadline. The
// library's own timeout restarts with every byte, so a client trickling one
// byte at a time would hold its connection for ever without this.
namespace {
// What the access log shows of a request cut before its head was complete:
// the path from the request line, the method only once the head was read.
HttpRequest head_of(const HttpRequest& partial) {
  HttpRequest head;
  head.method = partial.method.empty() ? "-" : partial.method;
  head.path = partial.path;
  return head;
}
}  // namespace

void Impl::sweep() {
  const auto deadline = options.limits.request_timeout;
  const auto period = std::clamp<Clock::duration>(deadline / 4, std::chrono::milliseconds(10), std::chrono::seconds(1));
  static const std::string kTimeout = [] {
    const std::string body = error_json("the request did not arrive in time", "invalid_request_error", "timeout");
    return "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  }();
  std::unique_lock lock(mutex);
  std::vector<HttpRequest> timed_out;  // for the access log, told outside the lock
  while (!stopping) {
    changed.wait_for(lock, period);
    const auto now = Clock::now();
    for (auto& [mhd, c] : connections) {
      if ((c->phase != Phase::waiting && c->phase != Phase::receiving) || now - c->waiting_since < deadline) continue;
      // A kept-alive connection with no request started just closes; a started one learns why.
      if (c->phase == Phase::receiving) {
        ::send(c->fd, kTimeout.data(), kTimeout.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (c->request) timed_out.push_back(head_of(c->request->http));
      }
      ::shutdown(c->fd, SHUT_RDWR);
      c->phase = Phase::closing;
    }
    if (timed_out.empty() || !options.answered) continue;
    lock.unlock();
    for (const HttpRequest& head : timed_out) options.answered(head, 408);
    timed_out.clear();
    lock.lock();
  }
}

void Impl::stop() {
  if (stopping.exchange(true)) return;
  if (!daemon) return;
  MHD_quiesce_daemon(daemon);
  {
    std::unique_lock lock(mutex);
    for (auto& [mhd, c] : connections) {
      if (!c->request || !c->request->exchange) continue;
      Exchange& e = *c->request->exchange;
      std::lock_guard exchange_lock(e.mutex);
      // Resumed before gone: the library must get every suspended connection back before it stops.
      if (e.suspended) {
        e.suspended = false;
        MHD_resume_connection(e.connection);
      }
      e.gone = true;
    }
    changed.notify_all();
    changed.wait(lock, [this] { return workers == 0; });
  }
  if (sweeper.joinable()) sweeper.join();
  MHD_stop_daemon(daemon);
  daemon = nullptr;
  ::close(listen_fd);
}

namespace {

struct ListenAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string numeric;  // as inet_ntop writes it
};

Expected<ListenAddress> resolve(const std::string& host) {
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || !found) {
    return make_error("cannot listen on '" + shown + "': " + (rc != 0 ? ::gai_strerror(rc) : "no address") +
                      " (give an address such as 127.0.0.1, 0.0.0.0 or [::1], or a name this machine resolves)");
  }
  ListenAddress address;
  std::memcpy(&address.storage, found->ai_addr, found->ai_addrlen);
  address.length = found->ai_addrlen;
  ::freeaddrinfo(found);
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = address.storage.ss_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&address.storage)->sin_addr);
  ::inet_ntop(address.storage.ss_family, raw, text, sizeof text);
  address.numeric = text;
  return address;
}

void set_port(ListenAddress& address, int port) {
  const auto net_port = htons(static_cast<uint16_t>(port));
  if (address.storage.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_port = net_port;
  else reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = net_port;
}

int port_of(const sockaddr_storage& storage) {
  return ntohs(storage.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port
                                             : reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

}  // namespace

Expected<std::string> resolve_listen_host(const std::string& host) {
  auto address = resolve(host);
  if (!address) return address.error();
  return address->numeric;
}

Expected<std::unique_ptr<HttpServer>> HttpServer::listen(const std::string& host, int port, HttpHandler handler,
                                                         HttpOptions options) {
  auto resolved = resolve(host);
  if (!resolved) return resolved.error();
  ListenAddress& address = *resolved;
  set_port(address, port);
  const std::string shown = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address.storage), address.length) != 0 || ::listen(fd, 256) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return make_error("cannot listen on " + shown + ": " + why + " (pick another address or port with --serve HOST:PORT)");
  }
  socklen_t length = sizeof address.storage;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &length);

  auto impl = std::make_unique<Impl>();
  impl->listen_fd = fd;
  impl->port = port_of(address.storage);
  impl->handler = std::move(handler);
  impl->options = std::move(options);
  const HttpLimits& limits = impl->options.limits;
  Impl* self = impl.get();
  // The pool holds the request head and the answer's buffers; the head's own limit is checked exactly in on_head.
  const size_t pool_bytes = limits.max_header_bytes + 16 * 1024;
  self->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, nullptr, nullptr, on_access,
      self, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(limits.max_connections),
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(limits.max_connections_per_ip),
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(limits.send_timeout_s),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool_bytes, MHD_OPTION_NOTIFY_COMPLETED, on_completed, self,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, self, MHD_OPTION_URI_LOG_CALLBACK, on_uri, self,
      MHD_OPTION_END);
  if (!self->daemon) {
    ::close(fd);
    return make_error("cannot start the HTTP server on " + shown);
  }
  self->sweeper = std::thread([self] { self->sweep(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { stop(); }
int HttpServer::port() const { return impl_->port; }
void HttpServer::stop() { impl_->stop(); }

}  // namespace xft::engine::serve
