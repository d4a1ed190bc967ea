// The HTTP layer against raw sockets: keep-alive with pipelined requests,
// 100-continue, chunked streaming, and the refusals (malformed, too large).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "engine/serve/http_server.h"

namespace xft::engine::serve {
namespace {

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
  void send(const std::string& data) { ASSERT_EQ(static_cast<ssize_t>(data.size()), ::send(fd_, data.data(), data.size(), 0)); }
  // Everything until the server closes the connection.
  std::string read_all() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  // Reads until `text` has arrived.
  std::string read_until(const std::string& text) {
    std::string out;
    char buf[4096];
    while (out.find(text) == std::string::npos) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

std::unique_ptr<HttpServer> echo_server(HttpLimits limits = {}) {
  auto server = HttpServer::listen(
      "127.0.0.1", 0,
      [](const HttpRequest& r, HttpResponder& out) {
        if (r.path == "/stream") {
          out.start_stream(200, "text/event-stream");
          out.write("data: a\n\n");
          out.write("data: b\n\n");
          out.end_stream();
          return;
        }
        out.send(200, "text/plain", r.method + " " + r.path + "?" + r.query + " [" + r.body + "] " + r.header("x-a"));
      },
      limits);
  EXPECT_TRUE(server.ok()) << server.error().message;
  return std::move(*server);
}

TEST(ServeHttpServer, PipelinedKeepAliveRequestsAreAnsweredInOrder) {
  auto server = echo_server();
  Client c(server->port());
  c.send("POST /one?x=1 HTTP/1.1\r\nContent-Length: 3\r\nX-A: h\r\n\r\nabcGET /two HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_all(),
            std::string("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 21\r\nConnection: keep-alive\r\n\r\n"
                "POST /one?x=1 [abc] h"
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\n"
                "GET /two? [] "));
}

TEST(ServeHttpServer, ExpectContinueGetsA100BeforeTheBodyIsSent) {
  auto server = echo_server();
  Client c(server->port());
  c.send("POST /b HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("hi");
  EXPECT_NE(c.read_all().find("POST /b? [hi]"), std::string::npos);
}

TEST(ServeHttpServer, StreamsUseChunkedFraming) {
  auto server = echo_server();
  Client c(server->port());
  c.send("GET /stream HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_all(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            "9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\n0\r\n\r\n");
}

TEST(ServeHttpServer, MalformedAndOversizedRequestsAreRefusedAndTheServerGoesOn) {
  HttpLimits limits;
  limits.max_body_bytes = 10;
  limits.max_header_bytes = 256;
  auto server = echo_server(limits);
  {
    Client c(server->port());
    c.send("NONSENSE\r\n\r\n");
    EXPECT_EQ(c.read_all().substr(0, 24), "HTTP/1.1 400 Bad Request");
  }
  {
    Client c(server->port());
    c.send("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n");
    EXPECT_EQ(c.read_all().substr(0, 30), "HTTP/1.1 413 Payload Too Large");
  }
  {
    Client c(server->port());
    c.send("GET / HTTP/1.1\r\nX-Big: " + std::string(400, 'a') + "\r\n\r\n");
    EXPECT_EQ(c.read_all().substr(0, 12), "HTTP/1.1 431");
  }
  {
    Client c(server->port());
    c.send("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    EXPECT_EQ(c.read_all().substr(0, 12), "HTTP/1.1 400");
  }
  Client c(server->port());
  c.send("GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(c.read_all().find("GET /ok? []"), std::string::npos);
  EXPECT_FALSE(HttpServer::listen("not-an-address", 0, {}).ok());
}

}  // namespace
}  // namespace xft::engine::serve
