#include "fabric/pingpong.h"

#include "fabric/libfabric.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

namespace xft::fabric {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

constexpr std::uint64_t kPingTag = 0x70696e67;  // "ping"
constexpr std::uint64_t kPongTag = 0x706f6e67;  // "pong"
constexpr int kWarmupRoundTrips = 10;
constexpr std::size_t kMaxNameLength = 1024;

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int remaining_ms(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Only reached once libfabric() has loaded: every caller holds an object it made.
const char* fi_error_text(int code) { return (*libfabric())->strerror(code); }

std::string fi_text(const char* call, long rc) {
  return std::string(call) + ": " + fi_error_text(static_cast<int>(-rc));
}

// --- plain TCP with deadlines ------------------------------------------------

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

Expected<sockaddr_storage> resolve(const std::string& address, int port, socklen_t& length) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(address.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return make_error("cannot resolve " + address + ": " + gai_strerror(rc));
  sockaddr_storage storage{};
  std::memcpy(&storage, found->ai_addr, found->ai_addrlen);
  length = found->ai_addrlen;
  freeaddrinfo(found);
  return storage;
}

bool wait_fd(int fd, short events, Deadline deadline) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, remaining_ms(deadline)) == 1;
}

Expected<Socket> tcp_connect(const std::string& address, int port, Deadline deadline) {
  socklen_t length = 0;
  auto target = resolve(address, port, length);
  if (!target) return target.error();
  Socket socket(::socket(target->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.fd() < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&*target), length) != 0 && errno != EINPROGRESS)
    return make_error(std::string("refused (") + std::strerror(errno) + ")");
  if (!wait_fd(socket.fd(), POLLOUT, deadline)) return make_error("timed out");
  int error = 0;
  socklen_t size = sizeof error;
  getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &size);
  if (error == ECONNREFUSED) return make_error("refused (nothing listens on the port)");
  if (error != 0) return make_error(std::strerror(error));
  return socket;
}

Expected<void> send_all(int fd, const void* data, std::size_t size, Deadline deadline) {
  auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    if (!wait_fd(fd, POLLOUT, deadline)) return make_error("send timed out");
    ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) return make_error(std::string("send: ") + std::strerror(errno));
    if (sent > 0) {
      bytes += sent;
      size -= static_cast<std::size_t>(sent);
    }
  }
  return {};
}

Expected<void> recv_all(int fd, void* data, std::size_t size, Deadline deadline) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return make_error("receive timed out");
    ssize_t got = ::recv(fd, bytes, size, 0);
    if (got == 0) return make_error("the peer closed the connection");
    if (got < 0 && errno != EAGAIN && errno != EINTR) return make_error(std::string("recv: ") + std::strerror(errno));
    if (got > 0) {
      bytes += got;
      size -= static_cast<std::size_t>(got);
    }
  }
  return {};
}

// An endpoint name: 4-byte length (network order), then the bytes.
Expected<void> send_name(int fd, const std::string& name, Deadline deadline) {
  std::uint32_t length = htonl(static_cast<std::uint32_t>(name.size()));
  if (auto sent = send_all(fd, &length, sizeof length, deadline); !sent) return sent;
  return send_all(fd, name.data(), name.size(), deadline);
}

Expected<std::string> recv_name(int fd, Deadline deadline) {
  std::uint32_t length = 0;
  if (auto got = recv_all(fd, &length, sizeof length, deadline); !got) return got.error();
  length = ntohl(length);
  if (length == 0) return std::string();  // the control node's stop
  if (length > kMaxNameLength) return make_error("bad endpoint name length " + std::to_string(length));
  std::string name(length, '\0');
  if (auto got = recv_all(fd, name.data(), length, deadline); !got) return got.error();
  return name;
}

Expected<Socket, ServeError> tcp_listen(const std::string& address, int port) {
  socklen_t length = 0;
  auto local = resolve(address, port, length);
  if (!local) return ServeError{local.error().message};
  Socket socket(::socket(local->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.fd() < 0) return ServeError{std::string("socket: ") + std::strerror(errno)};
  int one = 1;
  setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(socket.fd(), reinterpret_cast<sockaddr*>(&*local), length) != 0) {
    int bind_errno = errno;
    return ServeError{"cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(bind_errno),
                      bind_errno == EADDRINUSE};
  }
  if (::listen(socket.fd(), 4) != 0) return ServeError{std::string("listen: ") + std::strerror(errno)};
  return socket;
}

// --- libfabric -----------------------------------------------------------------

struct FiCloser {
  void operator()(fid* f) const {
    if (f) fi_close(f);
  }
};
using FidPtr = std::unique_ptr<fid, FiCloser>;
struct InfoFree {
  void operator()(fi_info* info) const { (*libfabric())->freeinfo(info); }
};

bool is_sockaddr(std::uint32_t format) {
  return format == FI_SOCKADDR_IN || format == FI_SOCKADDR_IN6 || format == FI_SOCKADDR;
}

// One RDM endpoint with its CQ, AV and (when the provider wants local
// registration) one registered buffer big enough for every size.
class Endpoint {
 public:
  // node/service: where to bind (FI_SOURCE); service empty: any port.
  Expected<void> open(const std::string& provider, const std::string& node, const std::string& service,
                      std::size_t buffer_size) {
    auto api = libfabric();
    if (!api) return api.error();
    std::unique_ptr<fi_info, InfoFree> hints((*api)->dupinfo(nullptr));
    hints->caps = FI_TAGGED | FI_MSG;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(provider.c_str());
    fi_info* found = nullptr;
    int rc = (*api)->getinfo(FI_VERSION(1, 9), node.empty() ? nullptr : node.c_str(),
                        service.empty() ? nullptr : service.c_str(), node.empty() ? 0 : FI_SOURCE, hints.get(), &found);
    if (rc != 0) {
      last_failure_ = rc;
      return make_error("fi_getinfo(" + provider + ", " + node + "): " + fi_error_text(-rc));
    }
    info_.reset(found);
    fid_fabric* fabric = nullptr;
    if ((rc = (*api)->fabric(info_->fabric_attr, &fabric, nullptr))) return failed("fi_fabric", rc);
    fabric_.reset(&fabric->fid);
    fid_domain* domain = nullptr;
    if ((rc = fi_domain(fabric, info_.get(), &domain, nullptr))) return failed("fi_domain", rc);
    domain_.reset(&domain->fid);
    domain_ptr_ = domain;
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.size = 64;
    if ((rc = fi_cq_open(domain, &cq_attr, &cq_, nullptr))) return failed("fi_cq_open", rc);
    cq_fid_.reset(&cq_->fid);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    if ((rc = fi_av_open(domain, &av_attr, &av_, nullptr))) return failed("fi_av_open", rc);
    av_fid_.reset(&av_->fid);
    if ((rc = fi_endpoint(domain, info_.get(), &ep_, nullptr))) return failed("fi_endpoint", rc);
    ep_fid_.reset(&ep_->fid);
    if ((rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV))) return failed("fi_ep_bind(cq)", rc);
    if ((rc = fi_ep_bind(ep_, &av_->fid, 0))) return failed("fi_ep_bind(av)", rc);
    if ((rc = fi_enable(ep_))) return failed("fi_enable", rc);
    send_buffer_.assign(std::max<std::size_t>(buffer_size, 64), 's');
    recv_buffer_.assign(std::max<std::size_t>(buffer_size, 64), 0);
    if (info_->domain_attr->mr_mode & FI_MR_LOCAL) {
      if (auto reg = register_buffer(send_buffer_, send_mr_, send_mr_ptr_, FI_SEND); !reg) return reg;
      if (auto reg = register_buffer(recv_buffer_, recv_mr_, recv_mr_ptr_, FI_RECV); !reg) return reg;
    }
    return {};
  }

  // The last open() failed because its FI_SOURCE address was taken.
  bool address_in_use() const { return last_failure_ == -FI_EADDRINUSE; }

  std::uint32_t addr_format() const { return info_->addr_format; }

  Expected<std::string> name() {
    std::string name(kMaxNameLength, '\0');
    std::size_t length = name.size();
    int rc = fi_getname(&ep_->fid, name.data(), &length);
    if (rc != 0) return make_error(fi_text("fi_getname", rc));
    name.resize(length);
    return name;
  }

  Expected<void> insert_peer(const std::string& name) {
    int rc = fi_av_insert(av_, name.data(), 1, &peer_, 0, nullptr);
    if (rc != 1) return make_error("fi_av_insert: the provider rejected the peer's address");
    return {};
  }

  Expected<void> insert_peer_service(const std::string& node, const std::string& service) {
    int rc = fi_av_insertsvc(av_, node.c_str(), service.c_str(), &peer_, 0, nullptr);
    if (rc != 1) return make_error("fi_av_insertsvc(" + node + ":" + service + ") failed");
    return {};
  }

  // Posts a receive of `size` bytes tagged `tag` and a send; both retried on
  // EAGAIN (RxM makes progress while we read the CQ).
  Expected<void> post_recv(std::size_t size, std::uint64_t tag, Deadline deadline) {
    return retry("fi_trecv", deadline, [&] {
      return fi_trecv(ep_, recv_buffer_.data(), size, fi_mr_desc_or_null(recv_mr_ptr_), peer_, tag, 0,
                      &recv_context_);
    });
  }
  Expected<void> post_send(std::size_t size, std::uint64_t tag, Deadline deadline) {
    return retry("fi_tsend", deadline, [&] {
      return fi_tsend(ep_, send_buffer_.data(), size, fi_mr_desc_or_null(send_mr_ptr_), peer_, tag,
                      &send_context_);
    });
  }

  // Reads the CQ until `count` completions arrived or the deadline passed.
  Expected<void> wait_completions(int count, Deadline deadline, const char* what) {
    fi_cq_tagged_entry entries[8];
    while (count > 0) {
      ssize_t got = fi_cq_read(cq_, entries, std::min(count, 8));
      if (got > 0) {
        count -= static_cast<int>(got);
        continue;
      }
      if (got == -FI_EAVAIL) {
        fi_cq_err_entry error{};
        fi_cq_readerr(cq_, &error, 0);
        return make_error(std::string(what) + ": " + fi_error_text(error.err) + " (" +
                          fi_cq_strerror(cq_, error.prov_errno, error.err_data, nullptr, 0) + ")");
      }
      if (got != -FI_EAGAIN) return make_error(fi_text("fi_cq_read", got));
      if (Clock::now() >= deadline) return make_error(std::string(what) + ": timed out");
      // Poll, but let the peer run when it shares our cores (test hosts, a
      // busy node): on an idle host sched_yield returns at once.
      sched_yield();
    }
    return {};
  }

 private:
  static void* fi_mr_desc_or_null(fid_mr* mr) { return mr ? fi_mr_desc(mr) : nullptr; }

  Error failed(const char* call, int rc) {
    last_failure_ = rc;
    return make_error(fi_text(call, rc));
  }

  Expected<void> register_buffer(std::vector<char>& buffer, FidPtr& holder, fid_mr*& handle, std::uint64_t access) {
    fid_mr* mr = nullptr;
    int rc = fi_mr_reg(domain_ptr_, buffer.data(), buffer.size(), access, 0, 0, 0, &mr, nullptr);
    if (rc != 0) return make_error(fi_text("fi_mr_reg", rc) + " (is memlock unlimited?)");
    holder.reset(&mr->fid);
    handle = mr;
    return {};
  }

  template <class Post>
  Expected<void> retry(const char* call, Deadline deadline, Post&& post) {
    for (;;) {
      ssize_t rc = post();
      if (rc == 0) return {};
      if (rc != -FI_EAGAIN) return make_error(fi_text(call, rc));
      fi_cq_tagged_entry entry;
      ssize_t got = fi_cq_read(cq_, &entry, 0);  // progress only
      (void)got;
      if (Clock::now() >= deadline) return make_error(std::string(call) + ": timed out (the provider kept answering EAGAIN)");
    }
  }

  int last_failure_ = 0;
  std::unique_ptr<fi_info, InfoFree> info_;
  // Closed in reverse order of declaration: endpoint first, fabric last.
  FidPtr fabric_, domain_, cq_fid_, av_fid_, send_mr_, recv_mr_, ep_fid_;
  fid_domain* domain_ptr_ = nullptr;
  fid_mr* send_mr_ptr_ = nullptr;
  fid_mr* recv_mr_ptr_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  fi_context send_context_{}, recv_context_{};
  std::vector<char> send_buffer_, recv_buffer_;
};

std::size_t largest(const std::vector<std::size_t>& sizes) {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

// The server answers every ping of every size with a pong of the same size,
// in the order the client sends them (warm-up first).
Expected<void> answer_pings(Endpoint& endpoint, const PingPongOptions& options, Deadline first_deadline,
                            Deadline deadline) {
  bool first = true;
  for (std::size_t size : options.sizes) {
    int round_trips = kWarmupRoundTrips + iterations_for(size, options.iterations);
    for (int i = 0; i < round_trips; ++i) {
      Deadline wait_until = first ? first_deadline : deadline;
      if (auto posted = endpoint.post_recv(size, kPingTag, wait_until); !posted) return posted;
      if (auto got = endpoint.wait_completions(1, wait_until, "waiting for a ping"); !got) return got;
      first = false;
      if (auto posted = endpoint.post_send(size, kPongTag, deadline); !posted) return posted;
      if (auto sent = endpoint.wait_completions(1, deadline, "sending a pong"); !sent) return sent;
    }
  }
  return {};
}

Expected<double> round_trips(Endpoint& endpoint, std::size_t size, int count, Deadline deadline) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    if (auto posted = endpoint.post_recv(size, kPongTag, deadline); !posted) return posted.error();
    if (auto posted = endpoint.post_send(size, kPingTag, deadline); !posted) return posted.error();
    if (auto done = endpoint.wait_completions(2, deadline, "waiting for the pong"); !done) return done.error();
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The client's libfabric part; the outcome's detail says where it stopped.
ProbeOutcome measure(Endpoint& endpoint, const PingPongOptions& options, std::vector<SizeResult>& results) {
  auto start = Clock::now();
  Deadline first_deadline = start + options.connect_timeout;
  Deadline deadline = start + options.connect_timeout + options.run_timeout;
  // The first round trip makes RxM connect: it alone gets the connect timeout.
  bool first = true;
  for (std::size_t size : options.sizes) {
    auto warm = round_trips(endpoint, size, first ? 1 : kWarmupRoundTrips, first ? first_deadline : deadline);
    if (!warm) {
      return {false, first ? "no answer to the first message within " + seconds_text(options.connect_timeout) + " (" +
                                 warm.error().message + ")"
                           : warm.error().message};
    }
    if (first) {
      auto rest = round_trips(endpoint, size, kWarmupRoundTrips - 1, deadline);
      if (!rest) return {false, rest.error().message};
      first = false;
    }
    int count = iterations_for(size, options.iterations);
    auto total_us = round_trips(endpoint, size, count, deadline);
    if (!total_us) return {false, total_us.error().message};
    SizeResult result;
    result.size = size;
    result.iterations = count;
    double round_trip_us = *total_us / count;
    result.one_way_us = round_trip_us / 2;
    result.bandwidth_gbps = 2.0 * static_cast<double>(size) / (round_trip_us * 1000.0);
    results.push_back(result);
  }
  char detail[64];
  std::snprintf(detail, sizeof detail, "answered (first message in %.1f ms)", elapsed_ms(start));
  return {true, detail};
}

std::string port_text(int port) { return port > 0 ? std::to_string(port) : std::string(); }

}  // namespace

int iterations_for(std::size_t size, int iterations) {
  constexpr std::size_t kBytesPerSize = std::size_t{64} << 20;
  std::size_t cap = std::max<std::size_t>(5, kBytesPerSize / std::max<std::size_t>(size, 1));
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(iterations), cap)));
}

LoadedLibfabric loaded_libfabric() {
  LoadedLibfabric loaded;
  auto api = libfabric();
  if (!api) return loaded;  // the ping-pong itself reports why
  std::uint32_t version = (*api)->version();
  const char* release = (*api)->tostr("1", FI_TYPE_VERSION);
  loaded.version =
      release && *release ? release : std::to_string(FI_MAJOR(version)) + "." + std::to_string(FI_MINOR(version));
  Dl_info where{};
  if (::dladdr(reinterpret_cast<void*>((*api)->getinfo), &where) != 0 && where.dli_fname) loaded.path = where.dli_fname;
  return loaded;
}

ProbeOutcome probe_tcp(const std::string& address, int port, std::chrono::milliseconds timeout) {
  auto start = Clock::now();
  auto socket = tcp_connect(address, port, start + timeout);
  if (!socket) {
    std::string why = socket.error().message;
    if (why == "timed out") why = "timed out after " + seconds_text(timeout);
    return {false, "port " + std::to_string(port) + ": " + why};
  }
  char detail[64];
  std::snprintf(detail, sizeof detail, "port %d open (%.1f ms)", port, elapsed_ms(start));
  return {true, detail};
}

Expected<void, ServeError> serve_pingpong(const PingPongOptions& options) {
  // The client starts after we listen (the control node waits for the port),
  // over SSH: allow it some seconds to arrive on a loaded machine.
  auto start = Clock::now();
  Deadline contact_deadline = start + options.connect_timeout * 2 + std::chrono::seconds(10);
  Deadline first_deadline = contact_deadline + options.connect_timeout;
  Deadline deadline = first_deadline + options.run_timeout;

  Endpoint endpoint;
  if (auto opened = endpoint.open(options.provider, options.local_address, port_text(options.fabric_port),
                                  largest(options.sizes));
      !opened)
    return ServeError{opened.error().message, endpoint.address_in_use()};
  auto listener = tcp_listen(options.local_address, options.tcp_port);
  if (!listener) return listener.error();
  if (options.on_listening) options.on_listening();

  // The client's plain TCP probe (closed at once), then the name exchange.
  bool have_peer = false;
  while (!have_peer) {
    if (!wait_fd(listener->fd(), POLLIN, contact_deadline)) break;
    Socket peer(::accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.fd() < 0) continue;
    int flags = fcntl(peer.fd(), F_GETFL);
    fcntl(peer.fd(), F_SETFL, flags | O_NONBLOCK);
    auto client_name = recv_name(peer.fd(), contact_deadline);
    if (!client_name) continue;  // the bare probe connection closes without a name
    if (client_name->empty()) break;
    auto own_name = endpoint.name();
    if (!own_name) return ServeError{own_name.error().message};
    if (auto sent = send_name(peer.fd(), *own_name, contact_deadline); !sent) return ServeError{sent.error().message};
    if (auto inserted = endpoint.insert_peer(*client_name); !inserted) return ServeError{inserted.error().message};
    have_peer = true;
  }
  if (!have_peer) return ServeError{"no client reached the TCP port " + std::to_string(options.tcp_port)};
  if (auto answered = answer_pings(endpoint, options, first_deadline, deadline); !answered)
    return ServeError{answered.error().message};
  return {};
}

void stop_server(const std::string& address, int tcp_port) {
  auto deadline = Clock::now() + std::chrono::seconds(2);
  if (auto socket = tcp_connect(address, tcp_port, deadline)) (void)send_name(socket->fd(), "", deadline);
}

Expected<PingPongReport> run_pingpong_client(const PingPongOptions& options) {
  if (options.peer_address.empty() || options.tcp_port <= 0)
    return make_error("the client needs --peer and --tcp-port");
  PingPongReport report;
  report.libfabric = loaded_libfabric();
  report.tcp = probe_tcp(options.peer_address, options.tcp_port, options.connect_timeout);
  report.ssh = probe_tcp(options.peer_address, options.ssh_port, options.connect_timeout);

  Endpoint endpoint;
  if (auto opened = endpoint.open(options.provider, options.local_address, "", largest(options.sizes)); !opened) {
    report.fabric = {false, opened.error().message};
    return report;
  }
  // Endpoint names go over the TCP port (as fabtests' out-of-band setup does),
  // so providers whose addresses are not IP:port work too. When TCP is blocked,
  // a provider with IP addresses still gets the direct attempt, so the report
  // says whether libfabric itself gets through.
  auto start = Clock::now();
  auto exchanged = [&]() -> Expected<std::string> {
    if (!report.tcp.ok) return make_error("TCP to the peer is blocked");
    auto socket = tcp_connect(options.peer_address, options.tcp_port, start + options.connect_timeout);
    if (!socket) return socket.error();
    auto own_name = endpoint.name();
    if (!own_name) return own_name.error();
    if (auto sent = send_name(socket->fd(), *own_name, start + options.connect_timeout); !sent) return sent.error();
    return recv_name(socket->fd(), start + options.connect_timeout);
  }();
  if (exchanged) {
    if (auto inserted = endpoint.insert_peer(*exchanged); !inserted) {
      report.fabric = {false, inserted.error().message};
      return report;
    }
  } else if (is_sockaddr(endpoint.addr_format()) && options.fabric_port > 0) {
    if (auto inserted = endpoint.insert_peer_service(options.peer_address, std::to_string(options.fabric_port));
        !inserted) {
      report.fabric = {false, inserted.error().message};
      return report;
    }
  } else {
    report.fabric = {false, "no endpoint name from the peer: " + exchanged.error().message};
    return report;
  }
  report.fabric = measure(endpoint, options, report.sizes);
  return report;
}

nlohmann::json report_to_json(const PingPongReport& report) {
  auto outcome = [](const ProbeOutcome& o) { return nlohmann::json{{"ok", o.ok}, {"detail", o.detail}}; };
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : report.sizes)
    sizes.push_back({{"size", s.size}, {"iterations", s.iterations}, {"one_way_us", s.one_way_us},
                     {"bandwidth_gbps", s.bandwidth_gbps}});
  return {{"tcp", outcome(report.tcp)},
          {"ssh", outcome(report.ssh)},
          {"fabric", outcome(report.fabric)},
          {"sizes", sizes},
          {"libfabric", {{"version", report.libfabric.version}, {"path", report.libfabric.path}}}};
}

Expected<PingPongReport> report_from_json(const std::string& text) {
  try {
    auto json = nlohmann::json::parse(text);
    PingPongReport report;
    auto outcome = [&](const char* key) {
      return ProbeOutcome{json.at(key).at("ok").get<bool>(), json.at(key).at("detail").get<std::string>()};
    };
    report.tcp = outcome("tcp");
    report.ssh = outcome("ssh");
    report.fabric = outcome("fabric");
    for (const auto& s : json.at("sizes"))
      report.sizes.push_back({s.at("size").get<std::size_t>(), s.at("iterations").get<int>(),
                              s.at("one_way_us").get<double>(), s.at("bandwidth_gbps").get<double>()});
    report.libfabric = {json.at("libfabric").at("version").get<std::string>(),
                        json.at("libfabric").at("path").get<std::string>()};
    return report;
  } catch (const std::exception& e) {
    return make_error(std::string("not a pair-worker report: ") + e.what());
  }
}

}  // namespace xft::fabric
