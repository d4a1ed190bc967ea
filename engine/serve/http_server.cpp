#include "engine/serve/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace xft::engine::serve {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trim(std::string_view text) {
  size_t b = text.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = text.find_last_not_of(" \t\r");
  return std::string(text.substr(b, e - b + 1));
}

enum class ReadResult { ok, closed, too_large, bad };

// Reads from fd into buffer until it holds `terminator` (returns its end) or `want` bytes.
ReadResult read_until(int fd, std::string& buffer, std::string_view terminator, size_t limit, size_t* end) {
  while (true) {
    if (!terminator.empty()) {
      size_t at = buffer.find(terminator);
      if (at != std::string::npos) {
        *end = at + terminator.size();
        return ReadResult::ok;
      }
    } else if (buffer.size() >= *end) {
      return ReadResult::ok;
    }
    if (buffer.size() > limit) return ReadResult::too_large;
    char chunk[16384];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadResult::closed;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

bool parse_head(std::string_view head, HttpRequest& request) {
  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  size_t s1 = line.find(' ');
  size_t s2 = line.rfind(' ');
  if (s1 == std::string_view::npos || s2 == s1) return false;
  request.method = std::string(line.substr(0, s1));
  std::string target(line.substr(s1 + 1, s2 - s1 - 1));
  if (line.substr(s2 + 1).rfind("HTTP/1.", 0) != 0 || target.empty() || target[0] != '/') return false;
  size_t q = target.find('?');
  request.path = target.substr(0, q);
  request.query = q == std::string::npos ? "" : target.substr(q + 1);
  size_t pos = line_end + 2;
  while (pos < head.size()) {
    size_t next = head.find("\r\n", pos);
    if (next == std::string_view::npos) next = head.size();
    std::string_view header = head.substr(pos, next - pos);
    pos = next + 2;
    if (header.empty()) break;
    size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    request.headers[lowercase(std::string(header.substr(0, colon)))] = trim(header.substr(colon + 1));
  }
  return true;
}

}  // namespace

std::string HttpRequest::header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? std::string() : it->second;
}

const char* http_status_text(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

bool HttpResponder::write_all(std::string_view data) {
  if (broken_) return false;
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string HttpResponder::head(int status, std::string_view content_type,
                                const std::map<std::string, std::string>& headers, std::string_view framing) const {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + http_status_text(status) + "\r\n";
  out += "Content-Type: ";
  out += content_type;
  out += "\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += framing;
  out += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

bool HttpResponder::send(int status, std::string_view content_type, std::string_view body,
                         const std::map<std::string, std::string>& headers) {
  responded_ = true;
  status_ = status;
  std::string out = head(status, content_type, headers, "Content-Length: " + std::to_string(body.size()) + "\r\n");
  out += body;
  return write_all(out);
}

bool HttpResponder::start_stream(int status, std::string_view content_type) {
  responded_ = true;
  status_ = status;
  return write_all(head(status, content_type, {{"Cache-Control", "no-cache"}}, "Transfer-Encoding: chunked\r\n"));
}

bool HttpResponder::write(std::string_view data) {
  if (data.empty()) return !broken_;
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out += data;
  out += "\r\n";
  return write_all(out);
}

bool HttpResponder::end_stream() { return write_all("0\r\n\r\n"); }

bool HttpResponder::client_gone() const {
  if (broken_) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  if (p.revents & POLLIN) {
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  return false;
}

Expected<std::unique_ptr<HttpServer>> HttpServer::listen(const std::string& host, int port, HttpHandler handler,
                                                         HttpLimits limits) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return make_error("--serve " + host + ":" + std::to_string(port) + ": '" + host +
                      "' is not an IPv4 address (use e.g. 127.0.0.1 or 0.0.0.0)");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 256) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return make_error("cannot listen on " + host + ":" + std::to_string(port) + ": " + why +
                      " (pick another port with --serve [ADDR:]PORT)");
  }
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->listen_fd_ = fd;
  server->port_ = ntohs(address.sin_port);
  server->handler_ = std::move(handler);
  server->limits_ = limits;
  server->acceptor_ = std::thread([s = server.get()] { s->accept_loop(); });
  return server;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::unique_lock lock(mutex_);
  for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lock, [this] { return threads_ == 0; });
}

void HttpServer::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (stopping_) return;
      if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    if (threads_ >= limits_.max_connections || stopping_) {
      HttpResponder(fd, false).send(503, "application/json",
                                    R"({"error":{"message":"too many connections","type":"server_error","param":null,"code":null}})");
      ::close(fd);
      continue;
    }
    ++threads_;
    open_fds_.insert(fd);
    std::thread([this, fd] { serve_connection(fd); }).detach();
  }
}

void HttpServer::serve_connection(int fd) {
  timeval timeout{limits_.idle_timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string buffer;
  while (!stopping_) {
    size_t head_end = 0;
    ReadResult r = read_until(fd, buffer, "\r\n\r\n", limits_.max_header_bytes, &head_end);
    if (r == ReadResult::closed) break;
    if (r == ReadResult::ok && head_end > limits_.max_header_bytes) r = ReadResult::too_large;
    HttpRequest request;
    if (r == ReadResult::too_large) {
      HttpResponder(fd, false).send(431, "text/plain", "request headers too large\n");
      break;
    }
    if (!parse_head(std::string_view(buffer).substr(0, head_end), request)) {
      HttpResponder(fd, false).send(400, "text/plain", "malformed HTTP request\n");
      break;
    }
    buffer.erase(0, head_end);
    if (!request.header("transfer-encoding").empty()) {
      HttpResponder(fd, false).send(400, "text/plain", "chunked request bodies are not supported; send Content-Length\n");
      break;
    }
    size_t length = 0;
    if (std::string cl = request.header("content-length"); !cl.empty()) {
      char* end = nullptr;
      unsigned long long value = std::strtoull(cl.c_str(), &end, 10);
      if (*end != '\0' || cl[0] == '-') {
        HttpResponder(fd, false).send(400, "text/plain", "bad Content-Length\n");
        break;
      }
      if (value > limits_.max_body_bytes) {
        HttpResponder(fd, false).send(413, "text/plain", "request body too large\n");
        break;
      }
      length = static_cast<size_t>(value);
    }
    if (length > buffer.size() && lowercase(request.header("expect")) == "100-continue") {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      ::send(fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL);
    }
    size_t want = length;
    if (read_until(fd, buffer, "", limits_.max_body_bytes, &want) != ReadResult::ok) break;
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);

    const bool keep_alive = lowercase(request.header("connection")) != "close" && !stopping_;
    HttpResponder responder(fd, keep_alive);
    handler_(request, responder);
    if (!responder.responded()) responder.send(500, "text/plain", "no response\n");
    if (!responder.keep_alive()) break;
  }
  std::lock_guard lock(mutex_);
  open_fds_.erase(fd);
  ::close(fd);
  if (--threads_ == 0) idle_.notify_all();
}

}  // namespace xft::engine::serve
