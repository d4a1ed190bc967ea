// A small HTTP/1.1 server for the OpenAI-compatible API: one thread per
// connection (a few hundred clients at most; the model, not the socket, is the
// bottleneck), keep-alive, Content-Length request bodies, and responses either
// whole or streamed with chunked transfer encoding (server-sent events).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "common/expected.h"

namespace xft::engine::serve {

struct HttpRequest {
  std::string method;
  std::string path;   // without the query
  std::string query;  // after '?', undecoded
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  std::string header(const std::string& lowercase_name) const;
};

// Answers one request on its connection. Either send() once, or
// start_stream(), write() any number of times and end_stream().
// Writes return false once the client has gone away.
class HttpResponder {
 public:
  HttpResponder(int fd, bool keep_alive) : fd_(fd), keep_alive_(keep_alive) {}
  bool send(int status, std::string_view content_type, std::string_view body,
            const std::map<std::string, std::string>& headers = {});
  bool start_stream(int status, std::string_view content_type);
  bool write(std::string_view data);
  bool end_stream();
  // Whether the peer closed its end (checked without blocking).
  bool client_gone() const;
  bool responded() const { return responded_; }
  bool keep_alive() const { return keep_alive_ && !broken_; }
  int status() const { return status_; }

 private:
  bool write_all(std::string_view data);
  std::string head(int status, std::string_view content_type, const std::map<std::string, std::string>& headers,
                   std::string_view framing) const;
  int fd_;
  bool keep_alive_;
  bool responded_ = false;
  bool broken_ = false;
  int status_ = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;

struct HttpLimits {
  size_t max_header_bytes = 64 * 1024;
  size_t max_body_bytes = 8 * 1024 * 1024;
  int max_connections = 512;
  int idle_timeout_s = 60;  // a keep-alive connection with no next request is closed
};

const char* http_status_text(int status);

class HttpServer {
 public:
  // host: a dotted IPv4 address ("0.0.0.0" for all); port 0 picks a free one.
  static Expected<std::unique_ptr<HttpServer>> listen(const std::string& host, int port, HttpHandler handler,
                                                      HttpLimits limits = {});
  ~HttpServer();
  int port() const { return port_; }
  // Stops accepting, shuts every open connection down and waits for their threads.
  void stop();

 private:
  HttpServer() = default;
  void accept_loop();
  void serve_connection(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  HttpHandler handler_;
  HttpLimits limits_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::set<int> open_fds_;
  int threads_ = 0;
};

}  // namespace xft::engine::serve
