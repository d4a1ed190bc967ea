// HTTP/1.1 for the OpenAI-compatible API on libmicrohttpd. One epoll thread
// owns every socket, so an idle or slow connection costs no thread; the
// library frames requests (keep-alive only where HTTP/1.x allows it, no body
// on HEAD, chunked responses) and enforces the connection caps and the send
// timeout. This layer adds what the library leaves to its user: a deadline
// for a whole request head and body, header checks (one Content-Length, well
// formed names), body limits before buffering, and the browser rules of
// access_policy.h. A request whose head has arrived is first shown to the
// screen callback (which may answer it without its body ever being read);
// otherwise, once its body is in, it runs on a thread of its own and is
// answered whole or streamed, each write sent as soon as it is made.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/expected.h"
#include "engine/serve/access_policy.h"

namespace xft::engine::serve {

struct HttpRequest {
  std::string method;
  std::string path;   // without the query, not percent-decoded
  std::string query;  // after '?', undecoded
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  std::string header(const std::string& lowercase_name) const;
};

namespace detail {
struct Exchange;
}

// Answers one request. Either send() once, or start_stream(), write() any
// number of times and end_stream(). Writes return false once the client has
// gone away (or the server is stopping).
class HttpResponder {
 public:
  explicit HttpResponder(std::shared_ptr<detail::Exchange> exchange) : exchange_(std::move(exchange)) {}
  bool send(int status, std::string_view content_type, std::string_view body,
            const std::map<std::string, std::string>& headers = {});
  bool start_stream(int status, std::string_view content_type);
  bool write(std::string_view data);
  bool end_stream();
  // Whether the peer closed its end (checked without blocking).
  bool client_gone() const;
  bool responded() const;
  int status() const;

 private:
  std::shared_ptr<detail::Exchange> exchange_;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;
// Sees a request with its head only (empty body), on the library's thread, so
// it must not block and may only send(). Answering here means the body is
// never buffered; not answering hands the full request to the handler.
using HttpScreen = std::function<void(const HttpRequest& head, HttpResponder&)>;

struct HttpLimits {
  size_t max_header_bytes = 64 * 1024;  // request line and headers; past it 431
  size_t max_body_bytes = 8 * 1024 * 1024;  // Content-Length or what arrived; past it 413
  size_t max_buffered_body_bytes = 128 * 1024 * 1024;  // every request's body together; past it 503
  int max_connections = 512;
  int max_connections_per_ip = 64;
  // From the moment a connection waits for a request (accepted, or its last
  // answer sent) until that request's head and body have all arrived; an idle
  // kept-alive connection is closed at it too. However slowly bytes trickle in.
  std::chrono::milliseconds request_timeout{30000};
  int send_timeout_s = 30;  // no byte of an answer taken by the client for this long: closed
};

// A request this layer answered itself (refusals: 400, 403, 413, 431, 503; CORS preflights), for the access log.
using HttpAnswered = std::function<void(const HttpRequest& head, int status)>;

struct HttpOptions {
  HttpLimits limits;
  AccessPolicy access;
  HttpScreen screen;      // empty: every request goes to the handler
  HttpAnswered answered;  // empty: not told
};

// The address a listening socket binds: a host name (resolved with
// getaddrinfo, the first address taken), a dotted IPv4 or an IPv6 address
// (without brackets). Errors name the host and say how to fix it.
Expected<std::string> resolve_listen_host(const std::string& host);

class HttpServer {
 public:
  // host: a name or address as resolve_listen_host takes it ("0.0.0.0" or "::" for all); port 0 picks a free one.
  static Expected<std::unique_ptr<HttpServer>> listen(const std::string& host, int port, HttpHandler handler,
                                                      HttpOptions options = {});
  ~HttpServer();
  int port() const;
  // Stops accepting, ends every open request (its writes fail), waits for
  // the handlers' threads and closes every connection.
  void stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xft::engine::serve
