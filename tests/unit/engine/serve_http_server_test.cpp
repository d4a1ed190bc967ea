// The HTTP layer against raw sockets: framing (keep-alive, pipelining,
// 100-continue, chunked streams sent as written, HEAD, HTTP/1.0), refusals of
// malformed heads, limits that hold however a client behaves (request
// deadline, per-address connection cap, body limits before buffering, a
// client that never reads), and the browser rules (Host, Origin, CORS).
#include <gtest/gtest.h>

#include <cmath>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/serve/http_server.h"
#include "engine/serve/server.h"
#include "tests/unit/engine/serve_test_support.h"
#include "tests/unit/engine/tokenizer_test_support.h"

namespace xft::engine::serve {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(0, ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a));
    timeval t{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  }
  ~Client() { ::close(fd_); }
  int fd() const { return fd_; }
  void send(const std::string& data) {
    ASSERT_EQ(static_cast<ssize_t>(data.size()), ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL));
  }
  // Everything until the server closes the connection (or 10 s pass).
  std::string read_all() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  // Reads until `text` has arrived.
  std::string read_until(const std::string& text) {
    while (buffer_.find(text) == std::string::npos) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      buffer_.append(buf, static_cast<size_t>(n));
    }
    const size_t end = buffer_.find(text);
    std::string out = end == std::string::npos ? buffer_ : buffer_.substr(0, end + text.size());
    buffer_.erase(0, out.size());
    return out;
  }
  // True when the server closed (or reset) the connection with nothing more to read.
  bool closed() {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// Responses without their Date line (the only header that changes from run to run).
std::string undated(const std::string& response) {
  return std::regex_replace(response, std::regex("Date: [^\r]*\r\n"), "");
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }

std::string body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

HttpHandler echo() {
  return [](const HttpRequest& r, HttpResponder& out) {
    out.send(200, "text/plain", r.method + " " + r.path + "?" + r.query + " [" + r.body + "] " + r.header("x-a"));
  };
}

std::unique_ptr<HttpServer> start(HttpHandler handler, HttpOptions options = {}) {
  auto server = HttpServer::listen("127.0.0.1", 0, std::move(handler), std::move(options));
  EXPECT_TRUE(server.ok()) << server.error().message;
  return std::move(*server);
}

// ---- framing --------------------------------------------------------------

TEST(ServeHttpServer, PipelinedKeepAliveRequestsAreAnsweredInOrder) {
  auto server = start(echo());
  Client c(server->port());
  c.send("POST /one?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nX-A: h\r\n\r\nabc"
         "GET /two%2F HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(undated(c.read_all()),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n\r\n"
            "POST /one?x=1 [abc] h"
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n\r\n"
            "GET /two%2F? [] ");
}

TEST(ServeHttpServer, ExpectContinueGetsA100BeforeTheBodyIsSent) {
  auto server = start(echo());
  Client c(server->port());
  c.send("POST /b HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("hi");
  EXPECT_EQ(body_of(c.read_all()), "POST /b? [hi] ");
}

TEST(ServeHttpServer, ChunkedRequestBodiesAreDecoded) {
  auto server = start(echo());
  Client c(server->port());
  c.send("POST /c HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
         "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_EQ(body_of(c.read_all()), "POST /c? [abcde] ");
}

TEST(ServeHttpServer, EachStreamWriteIsSentBeforeTheNextIsMade) {
  std::promise<void> first_seen;
  auto seen = first_seen.get_future().share();
  auto server = start([seen](const HttpRequest&, HttpResponder& out) {
    out.start_stream(200, "text/event-stream");
    out.write("data: a\n\n");
    seen.wait();  // the client must see the first event while the stream is still open
    out.write("data: b\n\n");
    out.end_stream();
  });
  Client c(server->port());
  c.send("GET /stream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(undated(c.read_until("data: a\n\n\r\n")),
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n\r\n9\r\ndata: a\n\n\r\n");
  first_seen.set_value();
  EXPECT_EQ(c.read_all(), "9\r\ndata: b\n\n\r\n0\r\n\r\n");
}

TEST(ServeHttpServer, HeadAnswersCarryNoBody) {
  auto server = start(echo());
  Client c(server->port());
  c.send("HEAD /h HTTP/1.1\r\nHost: localhost\r\n\r\nGET /g HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(undated(c.read_all()),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n"  // "HEAD /h? [] " not sent
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nGET /g? [] ");
}

TEST(ServeHttpServer, Http10IsClosedAfterOneAnswerUnlessItAsksForKeepAlive) {
  auto server = start(echo());
  {
    Client c(server->port());
    c.send("GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
    const std::string out = c.read_all();  // ends because the server closed
    EXPECT_EQ(status_line(out), "HTTP/1.1 200 OK");
    EXPECT_EQ(body_of(out), "GET /a? [] ");
  }
  Client c(server->port());
  c.send("GET /a HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(body_of(c.read_all()), "GET /a? [] ");
}

// ---- malformed heads --------------------------------------------------------

std::string answer_to(int port, const std::string& request) {
  Client c(port);
  c.send(request);
  return c.read_all();
}

TEST(ServeHttpServer, MalformedHeadsAreRefusedWith400AndTheServerGoesOn) {
  std::atomic<int> handled{0};
  auto server = start([&handled](const HttpRequest& r, HttpResponder& out) {
    ++handled;
    out.send(200, "text/plain", "ok");
  });
  const int port = server->port();
  // A request line the library cannot split is closed unanswered; the rest get 400.
  EXPECT_EQ(answer_to(port, "NONSENSE\r\n\r\n"), "");
  EXPECT_EQ(status_line(answer_to(port, "GET /\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(answer_to(port, "GET /a b HTTP/1.1\r\nHost: localhost\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(answer_to(port, "GET / HTTP/9.9\r\nHost: localhost\r\n\r\n")),
            "HTTP/1.1 505 HTTP Version Not Supported");
  const std::string twice = answer_to(
      port, "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhihi!");
  EXPECT_EQ(status_line(twice), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(body_of(twice),
            R"({"error":{"code":"malformed_request","message":"more than one content-length header","param":null,"type":"invalid_request_error"}})");
  const std::string spaced = answer_to(port, "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length : 2\r\n\r\nhi");
  EXPECT_EQ(status_line(spaced), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(body_of(spaced),
            R"({"error":{"code":"malformed_request","message":"malformed header name","param":null,"type":"invalid_request_error"}})");
  EXPECT_EQ(status_line(answer_to(port, "GET /x HTTP/1.1\r\nHost: localhost\r\n X-Folded-Into-Nothing: a\r\n\r\n")),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(answer_to(port, "GET /x HTTP/1.1\r\nHost: localhost\r\nno colon here\r\n\r\n")),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(answer_to(port, "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
                                        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
            "HTTP/1.1 400 Bad Request");
  for (const std::string length : {"-1", "+2", "2,2", "0x2"}) {
    EXPECT_EQ(status_line(answer_to(port, "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + length + "\r\n\r\nhi")),
              "HTTP/1.1 400 Bad Request") << length;
  }
  EXPECT_EQ(status_line(answer_to(port, "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(body_of(answer_to(port, "GET /x HTTP/1.1\r\n\r\n")),
            R"({"error":{"code":"malformed_request","message":"an HTTP/1.1 request needs a Host header","param":null,"type":"invalid_request_error"}})");
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(body_of(answer_to(port, "GET /ok HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")), "ok");
}

TEST(ServeHttpServer, BareLineFeedsAreParsedNotLeftWaiting) {
  auto server = start(echo());
  Client c(server->port());
  const auto begin = Clock::now();
  c.send("GET /lf HTTP/1.1\nHost: localhost\nX-A: v\nConnection: close\n\n");
  EXPECT_EQ(body_of(c.read_all()), "GET /lf? [] v");
  EXPECT_LT(Clock::now() - begin, 5s);  // answered, not held until a timeout
}

TEST(ServeHttpServer, HeadsOverTheLimitGet431) {
  HttpOptions options;
  options.limits.max_header_bytes = 2048;
  auto server = start(echo(), options);
  EXPECT_EQ(status_line(answer_to(server->port(), "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
                                                      std::string(4000, 'a') + "\r\n\r\n")),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(status_line(answer_to(server->port(), "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
                                                      std::string(1500, 'a') + "\r\nConnection: close\r\n\r\n")),
            "HTTP/1.1 200 OK");
}

// ---- bodies -----------------------------------------------------------------

TEST(ServeHttpServer, ADeclaredBodyOverTheLimitGets413BeforeItIsSent) {
  HttpOptions options;
  options.limits.max_body_bytes = 10;
  auto server = start(echo(), options);
  Client c(server->port());
  c.send("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\n");  // and nothing more
  const std::string out = c.read_all();
  EXPECT_EQ(status_line(out), "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(body_of(out),
            R"({"error":{"code":"body_too_large","message":"request body larger than 10 bytes","param":null,"type":"invalid_request_error"}})");
}

TEST(ServeHttpServer, AChunkedBodyOverTheLimitGets413) {
  HttpOptions options;
  options.limits.max_body_bytes = 10;
  auto server = start(echo(), options);
  EXPECT_EQ(status_line(answer_to(server->port(), "POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                  "8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")),
            "HTTP/1.1 413 Content Too Large");
}

TEST(ServeHttpServer, BodiesPastTheBufferedTotalGet503) {
  HttpOptions options;
  options.limits.max_body_bytes = 1000;
  options.limits.max_buffered_body_bytes = 100;
  auto server = start(echo(), options);
  EXPECT_EQ(status_line(answer_to(server->port(), "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 101\r\n\r\n")),
            "HTTP/1.1 503 Service Unavailable");
}

TEST(ServeHttpServer, TheScreenAnswersFromTheHeadAloneAndTheBodyIsNeverRead) {
  std::atomic<int> handled{0};
  HttpOptions options;
  options.screen = [](const HttpRequest& head, HttpResponder& out) {
    if (head.header("authorization") != "Bearer k") out.send(401, "text/plain", "key?");
  };
  auto server = start(
      [&handled](const HttpRequest& r, HttpResponder& out) {
        ++handled;
        out.send(200, "text/plain", std::to_string(r.body.size()));
      },
      options);
  Client c(server->port());
  // A body within the limit that never comes: the answer must not wait for it.
  c.send("POST /v1/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n");
  const std::string out = c.read_all();
  EXPECT_EQ(undated(out), "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nkey?");
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(body_of(answer_to(server->port(), "POST /v1/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer k\r\n"
                                              "Content-Length: 3\r\nConnection: close\r\n\r\nabc")),
            "3");
}

// ---- limits that hold against slow or greedy clients ---------------------------

TEST(ServeHttpServer, AHeadTrickledByteByByteIsCutAtTheRequestDeadline) {
  HttpOptions options;
  options.limits.request_timeout = 1s;
  std::mutex told_mutex;
  std::vector<std::string> told;  // what the access log is given
  options.answered = [&](const HttpRequest& head, int status) {
    std::lock_guard lock(told_mutex);
    told.push_back(head.method + " " + head.path + " " + std::to_string(status));
  };
  auto server = start(echo(), options);
  Client c(server->port());
  const auto begin = Clock::now();
  c.send("GET / HTTP/1.1\r\nHost: localhost\r\n");
  // Each byte restarts an idle timeout; only a deadline for the whole head ends this.
  while (Clock::now() - begin < 5s) {
    if (::send(c.fd(), "X", 1, MSG_NOSIGNAL) != 1) break;
    std::this_thread::sleep_for(100ms);
    char peek;
    if (::recv(c.fd(), &peek, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) break;  // an answer or the close arrived
  }
  const std::string out = c.read_all();
  EXPECT_LT(Clock::now() - begin, 3s);
  EXPECT_EQ(status_line(out), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(body_of(out),
            R"({"error":{"code":"timeout","message":"the request did not arrive in time","param":null,"type":"invalid_request_error"}})");
  server->stop();
  std::lock_guard lock(told_mutex);
  EXPECT_EQ(told, std::vector<std::string>{"- / 408"});  // the head never completed: no method yet
}

TEST(ServeHttpServer, AConnectionThatSendsNothingIsClosedAtTheRequestDeadline) {
  HttpOptions options;
  options.limits.request_timeout = 1s;
  auto server = start(echo(), options);
  Client idle(server->port());
  Client kept(server->port());
  kept.send("GET /k HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(body_of(kept.read_until("GET /k? [] ")), "GET /k? [] ");
  const auto begin = Clock::now();
  EXPECT_TRUE(idle.closed());
  EXPECT_TRUE(kept.closed());  // kept alive, then idle past the deadline
  EXPECT_LT(Clock::now() - begin, 3s);
}

TEST(ServeHttpServer, OneAddressGetsNoMoreThanItsConnections) {
  HttpOptions options;
  options.limits.max_connections_per_ip = 3;
  auto server = start(echo(), options);
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<Client>(server->port()));
    open.back()->send("GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    EXPECT_EQ(body_of(open.back()->read_until("[] ")), "GET /" + std::to_string(i) + "? [] ");
  }
  {
    Client fourth(server->port());
    ::send(fourth.fd(), "GET /4 HTTP/1.1\r\nHost: localhost\r\n\r\n", 35, MSG_NOSIGNAL);
    EXPECT_TRUE(fourth.closed());  // closed unanswered
  }
  open.pop_back();
  std::string out;
  for (int attempt = 0; attempt < 50 && out.empty(); ++attempt) {  // the server sees the close asynchronously
    out = answer_to(server->port(), "GET /again HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    if (out.empty()) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(body_of(out), "GET /again? [] ");
}

TEST(ServeHttpServer, AClientThatNeverReadsIsCutAtTheSendTimeoutWithoutBlockingItsHandler) {
  HttpOptions options;
  options.limits.send_timeout_s = 1;
  std::promise<bool> write_failed;
  auto result = write_failed.get_future();
  auto server = start(
      [&write_failed](const HttpRequest&, HttpResponder& out) {
        out.start_stream(200, "application/octet-stream");
        const std::string block(64 * 1024, 'x');
        const auto begin = Clock::now();
        bool ok = true;
        while (ok && Clock::now() - begin < 20s) {
          ok = out.write(block);  // never blocks: the library sends what the client takes
          std::this_thread::sleep_for(5ms);
        }
        write_failed.set_value(!ok);
      },
      options);
  Client c(server->port());
  int small = 4096;
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  c.send("GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n");  // and never read
  ASSERT_EQ(result.wait_for(15s), std::future_status::ready);
  EXPECT_TRUE(result.get());
}

TEST(ServeHttpServer, StopEndsOpenStreamsAndWaitsForTheirHandlers) {
  std::atomic<bool> handler_done{false};
  auto server = start([&handler_done](const HttpRequest&, HttpResponder& out) {
    out.start_stream(200, "text/event-stream");
    while (out.write("data: x\n\n")) std::this_thread::sleep_for(10ms);
    handler_done = true;
  });
  Client c(server->port());
  c.send("GET /s HTTP/1.1\r\nHost: localhost\r\n\r\n");
  c.read_until("data: x");
  server->stop();
  EXPECT_TRUE(handler_done);
}

// ---- browsers ------------------------------------------------------------------

std::string get_with(int port, const std::string& headers, const std::string& method = "GET") {
  return answer_to(port, method + " /p HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n");
}

TEST(ServeHttpServer, WithoutAKeyOnlyLoopbackOrListedHostNamesAreServed) {
  HttpOptions options;
  options.access.allowed_hosts = {"my.box"};
  auto server = start(echo(), options);
  const int port = server->port();
  for (const std::string host : {"localhost:8000", "127.0.0.1", "[::1]:1", "LOCALHOST", "my.box:9"}) {
    EXPECT_EQ(status_line(get_with(port, "Host: " + host + "\r\n")), "HTTP/1.1 200 OK") << host;
  }
  const std::string rebound = get_with(port, "Host: evil.example:8000\r\n");
  EXPECT_EQ(status_line(rebound), "HTTP/1.1 403 Forbidden");
  EXPECT_NE(body_of(rebound).find(R"("code":"forbidden_host")"), std::string::npos) << rebound;
  EXPECT_EQ(status_line(get_with(port, "Host: 10.0.0.5\r\n")), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(status_line(get_with(port, "Host: localhost.evil.example\r\n")), "HTTP/1.1 403 Forbidden");
}

TEST(ServeHttpServer, WithAKeyAnyHostIsServed) {
  HttpOptions options;
  options.access.any_host = true;
  auto server = start(echo(), options);
  EXPECT_EQ(status_line(get_with(server->port(), "Host: evil.example:8000\r\n")), "HTTP/1.1 200 OK");
}

TEST(ServeHttpServer, CrossOriginRequestsAreRefusedAndNeverHandled) {
  std::atomic<int> handled{0};
  auto server = start([&handled](const HttpRequest&, HttpResponder& out) {
    ++handled;
    out.send(200, "text/plain", "ok");
  });
  const int port = server->port();
  const std::string self = "127.0.0.1:" + std::to_string(port);
  // What a hostile page's form or fetch(no-cors) sends: a "simple" request that needs no preflight.
  const std::string cross = answer_to(port, "POST /v1/completions HTTP/1.1\r\nHost: " + self +
                                                "\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\n"
                                                "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
  EXPECT_EQ(status_line(cross), "HTTP/1.1 403 Forbidden");
  EXPECT_NE(body_of(cross).find(R"("code":"forbidden_origin")"), std::string::npos) << cross;
  EXPECT_EQ(status_line(get_with(port, "Host: " + self + "\r\nOrigin: null\r\n")), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(status_line(get_with(port, "Host: " + self + "\r\nOrigin: http://" + self + "\r\n")), "HTTP/1.1 200 OK");
  EXPECT_EQ(handled, 1);
}

TEST(ServeHttpServer, AllowedOriginsGetCorsHeadersAndPreflights) {
  HttpOptions options;
  options.access.cors_origins = {"https://app.example"};
  auto server = start(echo(), options);
  const int port = server->port();
  EXPECT_EQ(undated(get_with(port, "Host: localhost\r\nOrigin: https://app.example\r\n"
                                   "Access-Control-Request-Method: POST\r\n", "OPTIONS")),
            "HTTP/1.1 204 No Content\r\nConnection: close\r\nContent-Type: text/plain\r\n"
            "Access-Control-Allow-Headers: Authorization, Content-Type\r\n"
            "Access-Control-Allow-Methods: GET, POST, OPTIONS\r\nAccess-Control-Allow-Origin: https://app.example\r\n"
            "Access-Control-Max-Age: 600\r\nVary: Origin\r\n\r\n");
  EXPECT_EQ(undated(get_with(port, "Host: localhost\r\nOrigin: https://app.example\r\n")),
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n"
            "Access-Control-Allow-Origin: https://app.example\r\nVary: Origin\r\nContent-Length: 11\r\n\r\nGET /p? [] ");
  EXPECT_EQ(status_line(get_with(port, "Host: localhost\r\nOrigin: https://other.example\r\n", "OPTIONS")),
            "HTTP/1.1 403 Forbidden");
}

TEST(ServeHttpServer, AnsweredRequestsOfThisLayerAreReported) {
  std::mutex mutex;
  std::vector<std::string> seen;
  HttpOptions options;
  options.limits.max_body_bytes = 4;
  options.access.cors_origins = {"https://app.example"};
  options.answered = [&](const HttpRequest& head, int status) {
    std::lock_guard lock(mutex);
    seen.push_back(head.method + " " + head.path + " " + std::to_string(status));
  };
  auto server = start(echo(), options);
  const int port = server->port();
  EXPECT_EQ(status_line(answer_to(port, "POST /big HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nabcde")),
            "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(status_line(get_with(port, "Host: localhost\r\nOrigin: https://app.example\r\n", "OPTIONS")),
            "HTTP/1.1 204 No Content");
  EXPECT_EQ(status_line(get_with(port, "Host: evil.example\r\n")), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(status_line(get_with(port, "Host: localhost\r\n")), "HTTP/1.1 200 OK");  // the handler's: not reported here
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen, (std::vector<std::string>{"POST /big 413", "OPTIONS /p 204", "GET /p 403"}));
}

// ---- addresses ----------------------------------------------------------------

// One request to a numeric address of either family, read until the server closes.
std::string answer_at(const std::string& numeric, int port, const std::string& request) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  EXPECT_EQ(0, ::getaddrinfo(numeric.c_str(), std::to_string(port).c_str(), &hints, &found)) << numeric;
  if (!found) return "";
  const int fd = ::socket(found->ai_family, SOCK_STREAM, 0);
  EXPECT_EQ(0, ::connect(fd, found->ai_addr, found->ai_addrlen));
  ::freeaddrinfo(found);
  EXPECT_EQ(static_cast<ssize_t>(request.size()), ::send(fd, request.data(), request.size(), MSG_NOSIGNAL));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(ServeHttpServer, ListensOnNamesAndIpv6Addresses) {
  const std::string get = "GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  for (const std::string host : {"::1", "localhost", "127.0.0.1"}) {
    auto server = HttpServer::listen(host, 0, echo());
    ASSERT_TRUE(server.ok()) << host << ": " << server.error().message;
    auto numeric = resolve_listen_host(host);
    ASSERT_TRUE(numeric.ok());
    EXPECT_EQ(body_of(answer_at(*numeric, (*server)->port(), get)), "GET /x? [] ") << host;
  }
  EXPECT_EQ(*resolve_listen_host("::1"), "::1");
  EXPECT_EQ(*resolve_listen_host("0.0.0.0"), "0.0.0.0");
}

TEST(ServeHttpServer, ListenRefusesANameThatDoesNotResolveInOneLine) {
  auto server = HttpServer::listen("no-such-host.invalid", 0, echo());
  ASSERT_FALSE(server.ok());
  const std::string& message = server.error().message;
  EXPECT_EQ(message.rfind("cannot listen on 'no-such-host.invalid': ", 0), 0u) << message;
  const std::string hint = " (give an address such as 127.0.0.1, 0.0.0.0 or [::1], or a name this machine resolves)";
  ASSERT_GT(message.size(), hint.size());
  EXPECT_EQ(message.substr(message.size() - hint.size()), hint);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(ServeHttpServer, Http10RequestsWithBodiesAreAnswered) {
  auto server = start(echo());
  const std::string out = answer_to(server->port(), "POST /p HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(status_line(out), "HTTP/1.1 200 OK");
  EXPECT_EQ(body_of(out), "POST /p? [abc] ");
}

// ---- the OpenAI server on the tiny model, as clients call it ------------------

using json = nlohmann::json;

class ServeOpenAiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = engine::testing::json_tokenizer();
    ASSERT_NE(tokenizer_, nullptr);
    tiny_ = serve::testing::tiny_model(5, true, 256);
    scheduler_ = std::make_unique<Scheduler>(*tiny_.model, SchedulerOptions{});
    ServerOptions options;
    options.model_name = "tiny";
    options.default_max_tokens = 8;
    options.created = 1;
    options.access_log = [this](const AccessRecord& record) {
      std::lock_guard lock(mutex_);
      log_.push_back(record);
    };
    configure(options);
    server_ = std::make_unique<Server>(*scheduler_, *tokenizer_, std::vector<int32_t>{}, options);
    loop_ = std::thread([this] { EXPECT_TRUE(scheduler_->run(stop_).ok()); });
    HttpOptions http;
    http.limits.max_body_bytes = 4096;
    http.screen = [this](const HttpRequest& head, HttpResponder& out) { server_->screen(head, out); };
    http.answered = [this](const HttpRequest& head, int status) { server_->log_answered(head, status); };
    http_ = start([this](const HttpRequest& request, HttpResponder& out) { server_->handle(request, out); },
                  std::move(http));
  }
  void TearDown() override {
    if (http_) http_->stop();
    stop_ = true;
    if (loop_.joinable()) loop_.join();
  }

  std::string request(const std::string& method, const std::string& path, const std::string& body = "") {
    return answer_to(http_->port(), method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n" +
                                        (body.empty() ? "" : "Content-Type: application/json\r\nContent-Length: " +
                                                                 std::to_string(body.size()) + "\r\n") +
                                        "Connection: close\r\n\r\n" + body);
  }
  json post_json(const std::string& path, const json& body) {
    const std::string out = request("POST", path, body.dump());
    EXPECT_EQ(status_line(out), "HTTP/1.1 200 OK") << out;
    return json::parse(body_of(out), nullptr, false);
  }
  std::vector<AccessRecord> log() {
    std::lock_guard lock(mutex_);
    return log_;
  }
  virtual void configure(ServerOptions&) {}

  const Tokenizer* tokenizer_ = nullptr;
  serve::testing::TinyModel tiny_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Server> server_;
  std::atomic<bool> stop_{false};
  std::thread loop_;
  std::unique_ptr<HttpServer> http_;
  std::mutex mutex_;
  std::vector<AccessRecord> log_;
};

// The text and usage of every server-sent chunk of a streamed completion.
std::pair<std::string, json> streamed(const std::string& response) {
  std::string text;
  json usage;
  const std::string body = body_of(response);  // chunked framing: the events are whole inside it
  static const std::regex event("data: (\\{[^\\n]*\\})\\n");
  for (std::sregex_iterator it(body.begin(), body.end(), event), end; it != end; ++it) {
    json chunk = json::parse((*it)[1].str());
    if (!chunk["choices"].empty()) text += chunk["choices"][0].value("text", "");
    if (chunk.contains("usage")) usage = chunk["usage"];
  }
  return {text, usage};
}

// Reported: three identical greedy requests with a stop string said 3, 1 and 2
// completion tokens (tokens drawn after the match, before the cancel reached the
// scheduler, were counted). Counted now: up to the token that completes the match.
TEST_F(ServeOpenAiServer, CompletionTokensWithAStopStringAreTheSameEveryTime) {
  const json full = post_json("/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 24}, {"temperature", 0}});
  const std::string text = full["choices"][0]["text"];
  // A printable ASCII character from the second half of the answer: a whole token's text, never part of one.
  std::string stop;
  for (size_t i = text.size() / 2; i < text.size() && stop.empty(); ++i) {
    if (text[i] > ' ' && text[i] < 0x7f) stop = std::string(1, text[i]);
  }
  ASSERT_FALSE(stop.empty()) << text;
  const std::string before = text.substr(0, text.find(stop));
  // The fewest tokens whose text holds the stop string.
  int expected = 0;
  for (int k = 1; k <= 24 && expected == 0; ++k) {
    const json part = post_json("/v1/completions", {{"prompt", "Hello"}, {"max_tokens", k}, {"temperature", 0}});
    if (part["choices"][0]["text"].get<std::string>().find(stop) != std::string::npos) expected = k;
  }
  ASSERT_GT(expected, 0);
  for (int run = 0; run < 3; ++run) {
    const json whole = post_json("/v1/completions",
                                 {{"prompt", "Hello"}, {"max_tokens", 24}, {"temperature", 0}, {"stop", {stop}}});
    EXPECT_EQ(whole["choices"][0]["text"], before);
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(whole["usage"]["completion_tokens"], expected) << "run " << run;
    const json body = {{"prompt", "Hello"}, {"max_tokens", 24}, {"temperature", 0}, {"stop", {stop}},
                       {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    const auto [streamed_text, usage] = streamed(request("POST", "/v1/completions", body.dump()));
    EXPECT_EQ(streamed_text, before);
    EXPECT_EQ(usage["completion_tokens"], expected) << "run " << run;
  }
}

TEST_F(ServeOpenAiServer, OnlyTheServedModelNameIsAnswered) {
  EXPECT_EQ(body_of(request("GET", "/v1/models")),
            R"({"data":[{"capabilities":{"chat_template":"built-in ChatML","max_n":8,"max_top_logprobs":20,)"
            R"("reasoning_content":false,"response_format":["text","json_object","json_schema"],)"
            R"("tool_choice":["auto","none","required","function"],"tools":true},"created":1,"id":"tiny",)"
            R"("max_model_len":)" + std::to_string(scheduler_->max_context()) +
                R"(,"object":"model","owned_by":"xftctl"}],"object":"list"})");
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"temperature", 0}};
  json named = chat;
  named["model"] = "tiny";
  EXPECT_EQ(post_json("/v1/chat/completions", named)["model"], "tiny");
  EXPECT_EQ(post_json("/v1/chat/completions", chat)["model"], "tiny");  // no model: the one served
  named["model"] = "gpt-4o";
  const std::string other = request("POST", "/v1/chat/completions", named.dump());
  EXPECT_EQ(status_line(other), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(body_of(other),
            R"x({"error":{"code":"model_not_found","message":"The model 'gpt-4o' does not exist: this server serves 'tiny' (GET /v1/models; rename it with --served-model-name)","param":"model","type":"invalid_request_error"}})x");
}

TEST_F(ServeOpenAiServer, TheDeveloperRoleAnswersAsTheSystemRole) {
  auto ask = [this](const std::string& role) {
    return post_json("/v1/chat/completions",
                     {{"messages", {{{"role", role}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "hi"}}}},
                      {"max_tokens", 6},
                      {"temperature", 0},
                      {"response_format", {{"type", "text"}}},
                      {"tools", json::array()},
                      {"logit_bias", json::object()},
                      {"top_logprobs", 0},
                      {"parallel_tool_calls", true},
                      {"n", 1},
                      {"user", "u"}});
  };
  const json system = ask("system");
  const json developer = ask("developer");
  EXPECT_EQ(developer["choices"][0]["message"], system["choices"][0]["message"]);
  EXPECT_EQ(developer["usage"], system["usage"]);
}

TEST_F(ServeOpenAiServer, EveryErrorHasOpenAisShape) {
  const std::string get = request("GET", "/v1/chat/completions");
  EXPECT_EQ(undated(get),
            "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nContent-Type: application/json\r\nAllow: POST\r\n"
            "Content-Length: 129\r\n\r\n"
            R"({"error":{"code":"method_not_allowed","message":"use POST for /v1/chat/completions","param":null,"type":"invalid_request_error"}})");
  const std::string options = request("OPTIONS", "/v1/models");  // no Origin: not a preflight
  EXPECT_EQ(status_line(options), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(options.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << options;
  EXPECT_EQ(body_of(request("GET", "/nope")),
            R"({"error":{"code":"not_found","message":"no such endpoint: GET /nope","param":null,"type":"invalid_request_error"}})");
  const std::string big = request("POST", "/v1/completions", R"({"prompt":")" + std::string(5000, 'a') + R"("})");
  EXPECT_EQ(status_line(big), "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(body_of(big),
            R"({"error":{"code":"body_too_large","message":"request body larger than 4096 bytes","param":null,"type":"invalid_request_error"}})");
  const std::string tools = request("POST", "/v1/chat/completions",
                                    R"({"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]})");
  EXPECT_EQ(status_line(tools), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(body_of(tools),
            R"({"error":{"code":null,"message":"'tools[0]' must be {\"type\": \"function\", \"function\": {\"name\": ...}}","param":"tools[0]","type":"invalid_request_error"}})");
}

TEST_F(ServeOpenAiServer, TokenizeAndDetokenizeAsVllmAndLlamaServerSpellThem) {
  const json text = post_json("/tokenize", {{"model", "tiny"}, {"prompt", "Hello <|im_end|> world"}});
  const std::vector<int32_t> ids = tokenizer_->encode_ordinary("Hello <|im_end|> world");
  EXPECT_EQ(text, (json{{"count", ids.size()}, {"max_model_len", 256}, {"tokens", ids}}));
  const json pieces = post_json("/tokenize", {{"content", "Hi there"}, {"with_pieces", true}});
  EXPECT_EQ(pieces["token_strs"], (json{"Hi", " there"}));
  const json back = post_json("/detokenize", {{"tokens", ids}});
  EXPECT_EQ(back, (json{{"prompt", "Hello <|im_end|> world"}, {"content", "Hello <|im_end|> world"}}));
  // A chat's count is the prompt_tokens its completion reports.
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const json chat = post_json("/tokenize", {{"messages", messages}});
  const json answer = post_json("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}});
  EXPECT_EQ(chat["count"], answer["usage"]["prompt_tokens"]);
  EXPECT_EQ(chat["tokens"], tokenizer_->encode(tokenizer_->chat_prompt({{"user", "Hi"}}, true)));
  const std::string bad_id = request("POST", "/detokenize", R"({"tokens":[-1]})");
  EXPECT_EQ(status_line(bad_id), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(json::parse(body_of(bad_id))["error"]["param"], "tokens");
  EXPECT_EQ(status_line(request("POST", "/tokenize", R"({"prompt":"a","messages":[]})")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(request("GET", "/tokenize")), "HTTP/1.1 405 Method Not Allowed");
}

TEST_F(ServeOpenAiServer, ChatWithToolsAnswersWholeAndStreamedAlike) {
  const json tools = json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Weather?"}},
                                               {{"role", "assistant"}, {"content", nullptr},
                                                {"tool_calls", json::array({{{"id", "c"}, {"type", "function"},
                                                                             {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}})}},
                                               {{"role", "tool"}, {"tool_call_id", "c"}, {"content", "sunny"}}})},
                     {"tools", tools}, {"max_tokens", 6}, {"temperature", 0}};
  const json whole = post_json("/v1/chat/completions", body);
  ASSERT_EQ(whole["choices"][0]["message"]["role"], "assistant") << whole;
  json streamed_body = body;
  streamed_body["stream"] = true;
  const std::string events = body_of(request("POST", "/v1/chat/completions", streamed_body.dump()));
  std::string content;
  static const std::regex event("data: (\\{[^\\n]*\\})\\n");
  for (std::sregex_iterator it(events.begin(), events.end(), event), end; it != end; ++it) {
    const json chunk = json::parse((*it)[1].str());
    if (!chunk["choices"].empty()) content += chunk["choices"][0]["delta"].value("content", "");
  }
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(content, message["content"].is_null() ? "" : message["content"].get<std::string>());
}

// A stream's logprobs ride on its chunks; together they are the whole answer's.
TEST_F(ServeOpenAiServer, LogprobsAnswerWholeAndStreamedAlike) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
                     {"max_tokens", 6}, {"temperature", 0.8}, {"seed", 4}, {"ignore_eos", true},
                     {"logprobs", true}, {"top_logprobs", 3}};
  const json whole = post_json("/v1/chat/completions", body);
  const json& content = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << whole;
  for (const json& token : content) {
    ASSERT_EQ(token["top_logprobs"].size(), 3u);
    double mass = 0.0;
    for (const json& top : token["top_logprobs"]) mass += std::exp(top["logprob"].get<double>());
    EXPECT_LE(mass, 1.0 + 1e-5);  // logprobs are floats: a near-certain token's rounds to about 1
    EXPECT_LE(token["logprob"].get<double>(), 0.0);
    EXPECT_EQ(token["bytes"].size(), token["token"].get<std::string>().size());
  }
  json streamed_body = body;
  streamed_body["stream"] = true;
  const std::string events = body_of(request("POST", "/v1/chat/completions", streamed_body.dump()));
  json streamed = json::array();
  static const std::regex event("data: (\\{[^\\n]*\\})\\n");
  for (std::sregex_iterator it(events.begin(), events.end(), event), end; it != end; ++it) {
    const json chunk = json::parse((*it)[1].str());
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    for (const json& token : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(token);
  }
  EXPECT_EQ(streamed, content);

  const json text = post_json("/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0},
                                                  {"ignore_eos", true}, {"logprobs", 2}});
  const json& legacy = text["choices"][0]["logprobs"];
  ASSERT_EQ(legacy["tokens"].size(), 4u) << text;
  EXPECT_EQ(legacy["token_logprobs"].size(), 4u);
  EXPECT_EQ(legacy["text_offset"][0], 0);
  ASSERT_EQ(legacy["top_logprobs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_LE(legacy["top_logprobs"][i].size(), 2u);  // two tokens with one text would share a key
    // Greedy: the chosen token is the most likely one.
    double best = -1e30;
    for (const auto& [token, logprob] : legacy["top_logprobs"][i].items()) best = std::max(best, logprob.get<double>());
    EXPECT_EQ(legacy["token_logprobs"][i].get<double>(), best);
  }
  EXPECT_EQ(status_line(request("POST", "/v1/completions", R"({"prompt":"a","logprobs":6})")), "HTTP/1.1 400 Bad Request");
}

TEST_F(ServeOpenAiServer, EachRequestIsLoggedOnceWithItsTokens) {
  const json answer = post_json("/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 3}, {"temperature", 0}});
  request("GET", "/nope");
  request("POST", "/v1/completions", std::string(5000, ' '));
  http_->stop();  // a handler logs after its answer went out: stop waits for every handler
  // A handler logs after its answer went out, so the next request's line may
  // come first: the lines are compared as a set, each without its time.
  std::vector<std::string> lines;
  for (const AccessRecord& r : log()) {
    AccessRecord timeless = r;
    timeless.ms = 0;
    lines.push_back(access_line(timeless));
  }
  std::sort(lines.begin(), lines.end());
  const std::vector<std::string> expected = {
      "GET /nope 404 prompt=0 completion=0 0ms",
      "POST /v1/completions 200 prompt=" + std::to_string(answer["usage"]["prompt_tokens"].get<int>()) +
          " completion=3 0ms",
      "POST /v1/completions 413 prompt=0 completion=0 0ms"};
  EXPECT_EQ(lines, expected);
}

// ---- several choices, scripted answers ------------------------------------------

// A streamed chat answer put together as the openai SDKs do: per choice index,
// content appended, tool calls by their index (id, type and name from the
// first delta, arguments appended), the finish reason; and the usage chunk.
struct Assembled {
  std::map<int, json> messages;  // index: {content, tool_calls}
  std::map<int, std::string> finish;
  json usage;
  int chunks = 0;
  int argument_deltas = 0;
};

Assembled assemble(const std::string& response) {
  Assembled a;
  const std::string body = body_of(response);
  static const std::regex event("data: (\\{[^\\n]*\\})\\n");
  for (std::sregex_iterator it(body.begin(), body.end(), event), end; it != end; ++it) {
    const json chunk = json::parse((*it)[1].str());
    ++a.chunks;
    if (chunk.contains("usage")) a.usage = chunk["usage"];
    for (const json& choice : chunk["choices"]) {
      const int index = choice["index"];
      json& m = a.messages[index];
      if (!m.contains("content")) m = {{"content", ""}, {"tool_calls", json::array()}};
      if (!choice["finish_reason"].is_null()) a.finish[index] = choice["finish_reason"];
      const json& delta = choice.contains("delta") ? choice["delta"] : json::object();
      if (delta.contains("content")) m["content"] = m["content"].get<std::string>() + delta["content"].get<std::string>();
      if (choice.contains("text")) m["content"] = m["content"].get<std::string>() + choice["text"].get<std::string>();
      for (const json& call : delta.value("tool_calls", json::array())) {
        const size_t i = call["index"];
        if (i == m["tool_calls"].size()) {
          EXPECT_TRUE(call.contains("id") && call.contains("type") && call["function"].contains("name")) << call;
          m["tool_calls"].push_back({{"id", call["id"]}, {"type", call["type"]},
                                     {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}});
        }
        EXPECT_LT(i, m["tool_calls"].size());
        if (i >= m["tool_calls"].size()) continue;
        const std::string more = call["function"].value("arguments", "");
        if (!more.empty()) ++a.argument_deltas;
        json& args = m["tool_calls"][i]["function"]["arguments"];
        args = args.get<std::string>() + more;
      }
    }
  }
  return a;
}

const char* kTwoCalls =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";

class ServeScriptedServer : public ServeOpenAiServer {
 protected:
  void configure(ServerOptions& options) override {
    options.scripted_answer = kTwoCalls;
    options.default_max_tokens = 100;
  }
  json chat_with_tools() const {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Weather and time?"}}})},
            {"tools", json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}}}},
                                   {{"type", "function"}, {"function", {{"name", "get_time"}}}}})}};
  }
};

TEST_F(ServeScriptedServer, ToolCallsStreamAsOpenAiStreamsThemAndMatchTheWholeAnswer) {
  const json whole = post_json("/v1/chat/completions", chat_with_tools());
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 2u) << whole;
  EXPECT_EQ(message["tool_calls"][0]["function"], (json{{"name", "get_weather"}, {"arguments", R"({"city": "Paris", "days": 2})"}}));
  EXPECT_EQ(message["tool_calls"][1]["function"], (json{{"name", "get_time"}, {"arguments", R"({"zone": "CET"})"}}));
  EXPECT_EQ(whole["usage"]["completion_tokens"], static_cast<int>(tokenizer_->encode(kTwoCalls).size()));

  json body = chat_with_tools();
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const Assembled streamed = assemble(request("POST", "/v1/chat/completions", body.dump()));
  ASSERT_EQ(streamed.messages.size(), 1u);
  EXPECT_EQ(streamed.messages.at(0)["content"], "");
  const json& calls = streamed.messages.at(0)["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(calls[i]["function"], message["tool_calls"][i]["function"]);
    EXPECT_EQ(calls[i]["type"], "function");
    EXPECT_EQ(calls[i]["id"].get<std::string>().rfind("call_", 0), 0u);
  }
  EXPECT_GE(streamed.argument_deltas, 2);
  EXPECT_EQ(streamed.finish.at(0), "tool_calls");
  EXPECT_EQ(streamed.usage, whole["usage"]);
}

TEST_F(ServeScriptedServer, ParallelToolCallsFalseEndsTheAnswerAtTheFirstCall) {
  json body = chat_with_tools();
  body["parallel_tool_calls"] = false;
  const json whole = post_json("/v1/chat/completions", body);
  const json& message = whole["choices"][0]["message"];
  ASSERT_EQ(message["tool_calls"].size(), 1u) << whole;
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  body["stream"] = true;
  const Assembled streamed = assemble(request("POST", "/v1/chat/completions", body.dump()));
  ASSERT_EQ(streamed.messages.at(0)["tool_calls"].size(), 1u);
  EXPECT_EQ(streamed.finish.at(0), "tool_calls");
}

TEST_F(ServeScriptedServer, WithoutToolsTheCallsAreText) {
  const json whole = post_json("/v1/chat/completions", {{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}});
  EXPECT_EQ(whole["choices"][0]["message"]["content"], kTwoCalls);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
}

class ServeMalformedCallServer : public ServeOpenAiServer {
 protected:
  void configure(ServerOptions& options) override { options.scripted_answer = "<tool_call>\n[\"get_weather\"]\n</tool_call>"; }
};

TEST_F(ServeMalformedCallServer, AMalformedCallIsContentNeverAnError) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "x"}}})},
                     {"tools", json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}}}}})}};
  const json whole = post_json("/v1/chat/completions", body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "<tool_call>\n[\"get_weather\"]\n</tool_call>");
  EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
}

// n choices: each its own sample (choice i draws with seed + i * stride), in
// index order; a stream interleaves them; usage counts every choice's tokens.
// (This qwen2 test model answers newlines whatever the seed: that the samples
// differ is checked on the Qwen1 one in integration/openai_node_sdk.sh.)
TEST_F(ServeOpenAiServer, NChoicesAreDistinctReproducibleSamples) {
  const json messages = json::array({{{"role", "user"}, {"content", "Hello"}}});
  const json body = {{"messages", messages}, {"n", 3}, {"max_tokens", 6}, {"temperature", 2.0}, {"seed", 11},
                     {"ignore_eos", true}};
  const json whole = post_json("/v1/chat/completions", body);
  ASSERT_EQ(whole["choices"].size(), 3u) << whole;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(whole["choices"][i]["index"], i);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 18);
  EXPECT_EQ(post_json("/v1/chat/completions", body)["choices"], whole["choices"]);
  // Choice 1 is the single answer of seed 11 + the stride.
  json second = body;
  second["n"] = 1;
  second["seed"] = uint64_t{11} + 0x9e3779b97f4a7c15ULL;
  EXPECT_EQ(post_json("/v1/chat/completions", second)["choices"][0]["message"], whole["choices"][1]["message"]);

  json stream = body;
  stream["stream"] = true;
  stream["stream_options"] = {{"include_usage", true}};
  const Assembled streamed = assemble(request("POST", "/v1/chat/completions", stream.dump()));
  ASSERT_EQ(streamed.messages.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streamed.messages.at(i)["content"], whole["choices"][i]["message"]["content"]);
    EXPECT_EQ(streamed.finish.at(i), "length");
  }
  EXPECT_EQ(streamed.usage, whole["usage"]);

  // Each choice's logprobs ride on its own chunks.
  json with_logprobs = body;
  with_logprobs["logprobs"] = true;
  with_logprobs["top_logprobs"] = 2;
  const json scored = post_json("/v1/chat/completions", with_logprobs);
  with_logprobs["stream"] = true;
  const std::string events = body_of(request("POST", "/v1/chat/completions", with_logprobs.dump()));
  std::map<int, json> streamed_logprobs;
  static const std::regex data("data: (\\{[^\\n]*\\})\\n");
  for (std::sregex_iterator it(events.begin(), events.end(), data), end; it != end; ++it) {
    const json chunk = json::parse((*it)[1].str());
    for (const json& choice : chunk["choices"]) {
      if (choice["logprobs"].is_null()) continue;
      json& list = streamed_logprobs[choice["index"].get<int>()];
      if (list.is_null()) list = json::array();
      for (const json& token : choice["logprobs"]["content"]) list.push_back(token);
    }
  }
  ASSERT_EQ(streamed_logprobs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scored["choices"][i]["logprobs"]["content"].size(), 6u);
    EXPECT_EQ(streamed_logprobs.at(i), scored["choices"][i]["logprobs"]["content"]) << i;
  }

  const json text = post_json("/v1/completions", {{"prompt", "Hello"}, {"n", 2}, {"max_tokens", 3}, {"seed", 2},
                                                  {"ignore_eos", true}, {"logprobs", 1}});
  ASSERT_EQ(text["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(text["choices"][i]["index"], i);
    EXPECT_EQ(text["choices"][i]["logprobs"]["tokens"].size(), 3u);
  }
  EXPECT_EQ(text["usage"]["completion_tokens"], 6);
  EXPECT_EQ(status_line(request("POST", "/v1/completions", R"({"prompt":"a","n":9})")), "HTTP/1.1 400 Bad Request");
}

// A prompt longer than a cache block: the other choices copy the first one's
// prefilled prompt from the prefix cache, and answer as they would alone.
TEST_F(ServeOpenAiServer, NChoicesShareTheirPromptsPrefill) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "word" + std::to_string(i) + " ";
  const uint64_t hits_before = scheduler_->take_counters().prefix_cache.hit_tokens;
  const json body = {{"prompt", prompt}, {"n", 4}, {"max_tokens", 4}, {"seed", 5}, {"ignore_eos", true}};
  const json whole = post_json("/v1/completions", body);
  ASSERT_EQ(whole["choices"].size(), 4u) << whole;
  const int prompt_tokens = whole["usage"]["prompt_tokens"];
  ASSERT_GT(prompt_tokens, 32);
  const uint64_t reused = scheduler_->take_counters().prefix_cache.hit_tokens - hits_before;
  EXPECT_EQ(reused, 3u * ((prompt_tokens - 1) / 16 * 16));
  for (int i = 0; i < 4; ++i) {
    json alone = body;
    alone["n"] = 1;
    alone["seed"] = uint64_t{5} + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL;
    EXPECT_EQ(post_json("/v1/completions", alone)["choices"][0]["text"], whole["choices"][i]["text"]) << i;
  }
}

// ---- the policy as functions -------------------------------------------------------

TEST(ServeAccessPolicy, HostNames) {
  EXPECT_EQ(host_name("LocalHost:8000"), "localhost");
  EXPECT_EQ(host_name("[::1]:80"), "[::1]");
  EXPECT_EQ(host_name("[::1]"), "[::1]");
  EXPECT_EQ(host_name("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(host_name("a b"), "");
  EXPECT_EQ(host_name("host:port"), "");
  EXPECT_EQ(host_name("[::1"), "");
  EXPECT_EQ(host_name(""), "");
  AccessPolicy none;
  EXPECT_TRUE(host_allowed(none, ""));  // HTTP/1.0 without Host: not a browser
  EXPECT_FALSE(host_allowed(none, "127.0.0.1.nip.io"));
  EXPECT_FALSE(host_allowed(none, "evil:80:80"));
}

TEST(ServeAccessPolicy, Origins) {
  AccessPolicy policy;
  policy.cors_origins = {"https://app.example"};
  EXPECT_EQ(check_origin(policy, "", "localhost:8000"), OriginCheck::none);
  EXPECT_EQ(check_origin(policy, "http://localhost:8000", "localhost:8000"), OriginCheck::same);
  EXPECT_EQ(check_origin(policy, "https://api.example", "api.example"), OriginCheck::same);  // behind a TLS proxy
  EXPECT_EQ(check_origin(policy, "http://api.example:80", "api.example"), OriginCheck::same);
  EXPECT_EQ(check_origin(policy, "http://localhost:8001", "localhost:8000"), OriginCheck::refused);
  EXPECT_EQ(check_origin(policy, "https://APP.example:443", "localhost"), OriginCheck::allowed);
  EXPECT_EQ(check_origin(policy, "null", "localhost"), OriginCheck::refused);
  EXPECT_EQ(check_origin(policy, "file://", "localhost"), OriginCheck::refused);
  EXPECT_EQ(split_list(" a, b,,c "), (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace xft::engine::serve
