#include "launcher/launch.h"
#include "launcher/launch_site.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

#include "remote/credentials.h"
#include "remote/fanout.h"
#include "common/log.h"

namespace xft::launcher {

namespace {

std::atomic<int> g_pending_signal{0};

extern "C" void remember_signal(int sig) { g_pending_signal.store(sig); }

// Installs SIGINT/SIGTERM handlers for the duration of a launch, so a ^C
// stops the whole rank group instead of orphaning it.
class SignalGuard {
 public:
  SignalGuard() {
    g_pending_signal.store(0);
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct Pipe {
  int read = -1, write = -1;
  bool open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void close_both() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
    read = write = -1;
  }
};

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// fork + exec in a new process group; exec failures come back through a
// close-on-exec pipe so "mpirun not found" is an error, not exit 127.
Expected<pid_t> spawn(std::vector<std::string> argv, Pipe& out, Pipe& err, bool pass_stdin,
                      const std::vector<std::pair<std::string, std::string>>& child_env) {
  auto env = environment_with(child_env);
  if (!env) return env.error();
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> envp = c_strings(*env);
  Pipe exec_status;
  if (!out.open() || !err.open() || !exec_status.open())
    return make_error(std::string("cannot create pipes: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // A session of its own: Open MPI puts each local rank in its own process
    // group, but they all stay in this session, so kill_session() finds them.
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // xftctl killed outright: mpirun still stops its ranks
    dup2(out.write, STDOUT_FILENO);
    dup2(err.write, STDERR_FILENO);
    if (!pass_stdin) {
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    }
    execvpe(args[0], args.data(), envp.data());
    int code = errno;
    (void)!::write(exec_status.write, &code, sizeof code);
    _exit(127);
  }
  ::close(out.write);
  ::close(err.write);
  ::close(exec_status.write);
  out.write = err.write = exec_status.write = -1;
  int code = 0;
  ssize_t n = ::read(exec_status.read, &code, sizeof code);
  ::close(exec_status.read);
  if (n == sizeof code) {
    waitpid(pid, nullptr, 0);
    out.close_both();
    err.close_both();
    return make_error("cannot run " + argv[0] + ": " + std::strerror(code) +
                      (code == ENOENT ? " (install Open MPI: apt-get install openmpi-bin)" : ""));
  }
  return pid;
}

void default_printer(const LaunchSpec& spec, const OutputLine& line) {
  if (line.rank < 0) return;  // mpirun's own messages are summarized at the end
  std::string host = line.rank < spec.plan.size() ? spec.plan.ranks[line.rank].host : "?";
  std::FILE* stream = line.is_stderr ? stderr : stdout;
  std::fprintf(stream, "[%d %s] %s\n", line.rank, host.c_str(), line.text.c_str());
  std::fflush(stream);
}

class OutputCollector {
 public:
  OutputCollector(const LaunchSpec& spec, LaunchResult& result) : spec_(spec), result_(result) {}

  void feed(bool is_stderr, const char* data, size_t n) {
    std::string& buffer = is_stderr ? err_buffer_ : out_buffer_;
    buffer.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1)
      line(is_stderr, buffer.substr(start, nl - start));
    buffer.erase(0, start);
  }
  void flush() {
    if (!out_buffer_.empty()) line(false, out_buffer_);
    if (!err_buffer_.empty()) line(true, err_buffer_);
    out_buffer_.clear();
    err_buffer_.clear();
  }
  std::vector<std::string> stderr_tail(int rank) const {
    auto it = tails_.find(rank);
    return it == tails_.end() ? std::vector<std::string>{} : std::vector<std::string>(it->second.begin(), it->second.end());
  }
  const std::vector<std::string>& state_trace() const { return state_trace_; }

 private:
  void line(bool from_stderr_pipe, const std::string& text) {
    OutputLine out;
    if (is_state_trace_line(text)) {
      state_trace_.push_back(text);  // read for the failure report, never shown
      return;
    }
    if (!parse_tagged_line(text, spec_.mpirun.mpi_major, out)) {
      out.rank = -1;
      out.is_stderr = from_stderr_pipe;
      out.text = text;
      result_.mpirun_messages.push_back(text);
    } else if (out.is_stderr) {
      auto& tail = tails_[out.rank];
      tail.push_back(out.text);
      if (tail.size() > spec_.stderr_tail_lines) tail.pop_front();
    } else {
      result_.stdout_lines[out.rank].push_back(out.text);
    }
    if (spec_.on_output)
      spec_.on_output(out);
    else
      default_printer(spec_, out);
  }

  const LaunchSpec& spec_;
  LaunchResult& result_;
  std::string out_buffer_, err_buffer_;
  std::vector<std::string> state_trace_;
  std::map<int, std::deque<std::string>> tails_;
};

using Clock = std::chrono::steady_clock;

// Signals every process in session `sid` (the one spawn() created for mpirun).
void kill_session(pid_t sid, int sig) {
  DIR* proc = opendir("/proc");
  if (!proc) return;
  while (dirent* entry = readdir(proc)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // pid (comm) state ppid pgrp session ...; comm may hold spaces and parens.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (!(fields >> state >> ppid >> pgrp >> session)) continue;
    if (session == sid) kill(pid, sig);
  }
  closedir(proc);
}

// Everything already in the pipe, without waiting for writers that are left:
// once mpirun has exited, all it wrote is there.
void drain_nonblocking(Pipe& pipe, bool is_err, OutputCollector& collector) {
  if (pipe.read < 0) return;
  fcntl(pipe.read, F_SETFL, fcntl(pipe.read, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  while (true) {
    ssize_t n = ::read(pipe.read, buf, sizeof buf);
    if (n > 0) collector.feed(is_err, buf, n);
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  pipe.close_both();
}

// Reads both pipes until mpirun is gone, enforcing the timeout and passing
// signals on to the process group. Returns the wait status.
int supervise(pid_t pid, Pipe& out, Pipe& err, const LaunchSpec& spec, OutputCollector& collector,
              LaunchResult& result) {
  const auto start = Clock::now();
  std::optional<Clock::time_point> term_sent, exited_at;
  bool killed = false;
  int status = 0;
  auto stop_group = [&](int sig) { kill_session(pid, sig); };
  while (true) {
    std::vector<pollfd> fds;
    if (out.read >= 0) fds.push_back({out.read, POLLIN, 0});
    if (err.read >= 0) fds.push_back({err.read, POLLIN, 0});
    if (!fds.empty()) poll(fds.data(), fds.size(), 100);
    else usleep(50 * 1000);
    for (const auto& p : fds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = ::read(p.fd, buf, sizeof buf);
      bool is_err = p.fd == err.read;
      if (n > 0) {
        collector.feed(is_err, buf, n);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        (is_err ? err : out).close_both();
      }
    }
    auto now = Clock::now();
    if (int sig = g_pending_signal.exchange(0); sig && !term_sent) {
      result.interrupted = true;
      if (spec.interrupt_signal == SIGTERM) stop_group(SIGTERM);
      else ::kill(pid, spec.interrupt_signal);  // mpirun alone: it forwards to the ranks
      term_sent = now;
    }
    if (spec.timeout.count() > 0 && !term_sent && now - start >= spec.timeout) {
      result.timed_out = true;
      stop_group(SIGTERM);
      term_sent = now;
    }
    if (term_sent && !killed && now - *term_sent >= spec.kill_grace) {
      stop_group(SIGKILL);
      killed = true;
    }
    if (!exited_at) {
      siginfo_t info{};
      if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        exited_at = now;
        // Leftovers of the group (ranks mpirun did not reap) go with it.
        stop_group(SIGKILL);
      }
    }
    bool pipes_closed = out.read < 0 && err.read < 0;
    // A grandchild that kept the pipes open must not hold us after mpirun is gone.
    if (exited_at && (pipes_closed || now - *exited_at > std::chrono::seconds(2))) break;
  }
  waitpid(pid, &status, 0);
  drain_nonblocking(out, false, collector);
  drain_nonblocking(err, true, collector);
  collector.flush();
  return status;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string first_meaningful(const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    if (l.empty() || l.find_first_not_of("-= ") == std::string::npos) continue;
    return l;
  }
  return "";
}

}  // namespace

Expected<std::vector<std::string>> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& [name, value] : overrides)
    if (!std::regex_match(name, variable))
      return make_error("cannot pass " + shell_join({name}) + " to mpirun's environment: not a variable name");
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& o : overrides) overridden = overridden || o.first == name;
    if (!overridden) env.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

bool parse_tagged_line(const std::string& line, int mpi_major, OutputLine& out) {
  static const std::regex tag(R"(^\[(\d+),(\d+)\]<(stdout|stderr)>:)");
  std::smatch m;
  if (!std::regex_search(line, m, tag)) return false;
  out.rank = std::stoi(m[2]);
  out.is_stderr = m[3] == "stderr";
  out.text = line.substr(m.length(0));
  // Open MPI 4 tags every chunk it forwards, also one that starts mid-line
  // (a long write split by the pipe): drop those inner tags to get the line back.
  const std::string inner = m.str(0);
  for (size_t at; (at = out.text.find(inner)) != std::string::npos;) out.text.erase(at, inner.size());
  if (mpi_major >= 5 && !out.text.empty() && out.text[0] == ' ') out.text.erase(0, 1);
  return true;
}

std::optional<RankFailure> find_failed_rank(const std::vector<std::string>& messages) {
  static const std::regex process_name(R"(Process name:\s*\[.*,(\d+)\]\s*$)");
  static const std::regex exit_code(R"(Exit code:\s*(\d+))");
  static const std::regex on_signal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  std::optional<RankFailure> failure;
  std::smatch m;
  for (const auto& line : messages) {
    if (std::regex_search(line, m, on_signal)) {
      RankFailure f;
      f.rank = std::stoi(m[1]);
      f.signal = std::stoi(m[2]);
      return f;
    }
    if (std::regex_search(line, m, process_name)) {
      failure = RankFailure{};
      failure->rank = std::stoi(m[1]);
    } else if (failure && std::regex_search(line, m, exit_code)) {
      failure->exit_code = std::stoi(m[1]);
      return failure;
    }
  }
  return failure;
}

namespace {

const std::regex& state_trace_pattern() {
  // "[host:pid] [[job,0],daemon] ACTIVATE PROC [[job,1],rank] STATE EXITED WITH NON-ZERO STATUS AT file:line"
  static const std::regex pattern(R"(^\[[^\]]+\] \S+ ACTIVATE (PROC|JOB) (\S+) STATE (.+?) AT \S+$)");
  return pattern;
}

}  // namespace

bool is_state_trace_line(const std::string& line) {
  return line.starts_with('[') && line.find(" ACTIVATE ") != std::string::npos &&
         std::regex_match(line, state_trace_pattern());
}

std::optional<RankFailure> failure_from_state_trace(const std::vector<std::string>& trace, int mpirun_exit_code) {
  // [[job,1],rank] (ORTE) or [nspace,rank] (PRRTE)
  static const std::regex proc_rank(R"(,(\d+)\]$)");
  std::smatch m, r;
  for (const auto& line : trace) {
    if (!std::regex_match(line, m, state_trace_pattern()) || m[1] != "PROC") continue;
    const std::string name = m[2], state = m[3];
    if (state != "EXITED WITH NON-ZERO STATUS" && state != "ABORTED BY SIGNAL" && state != "CALLED ABORT") continue;
    if (!std::regex_search(name, r, proc_rank)) continue;
    RankFailure failure;
    failure.rank = std::stoi(r[1]);
    // mpirun exits with the status of the first rank that failed: 128+N for signal N.
    if (state == "ABORTED BY SIGNAL" && mpirun_exit_code > 128) failure.signal = mpirun_exit_code - 128;
    else failure.exit_code = mpirun_exit_code;
    return failure;
  }
  return std::nullopt;
}

std::string LaunchResult::summary() const {
  std::string text;
  if (timed_out) {
    text = "launch timed out: every rank was stopped";
  } else if (interrupted) {
    text = "launch interrupted: every rank was stopped";
  } else if (failure) {
    text = "rank " + std::to_string(failure->rank) + " (" + failure->host +
           (failure->address.empty() || failure->address == failure->host ? "" : ", " + failure->address) + ") ";
    if (failure->signal)
      text += "was killed by signal " + std::to_string(failure->signal) + " (" + strsignal(failure->signal) + ")";
    else
      text += "exited with code " + std::to_string(failure->exit_code);
    text += "; mpirun stopped every other rank";
  } else if (exit_code != 0) {
    std::string first = first_meaningful(mpirun_messages);
    text = "mpirun exited with code " + std::to_string(exit_code) + (first.empty() ? "" : ": " + first);
  } else {
    return "all ranks finished";
  }
  if (failure && !failure->last_stderr.empty()) {
    text += "\nlast stderr of rank " + std::to_string(failure->rank) + ":";
    for (const auto& l : failure->last_stderr) text += "\n  " + l;
  }
  return text;
}

namespace {

// The failed rank of a finished job, from mpirun's messages or its state trace.
void name_failed_rank(const LaunchSpec& spec, const OutputCollector& collector, LaunchResult& result) {
  if (result.exit_code != 0 && !result.timed_out && !result.interrupted) {
    result.failure = find_failed_rank(result.mpirun_messages);
    if (!result.failure) result.failure = failure_from_state_trace(collector.state_trace(), result.exit_code);
    if (result.failure && result.failure->rank < spec.plan.size()) {
      const auto& r = spec.plan.ranks[result.failure->rank];
      result.failure->host = r.host;
      result.failure->address = r.address;
      result.failure->last_stderr = collector.stderr_tail(r.rank);
    }
  }
}

}  // namespace

Expected<LaunchResult> launch(const LaunchSpec& spec) {
  SignalGuard guard;  // first: a ^C from here on still removes the agent script
  MpirunSpec mpirun = spec.mpirun;
  std::optional<SshAgentFile> agent;  // removed on every return below
  if (!mpirun.local_only) {
    auto created = SshAgentFile::create(mpirun.ssh);
    if (!created) return created.error();
    agent.emplace(std::move(*created));
    mpirun.ssh_agent_path = agent->path();
  }
  auto command = build_mpirun_command(spec.plan, mpirun);
  if (!command) return command.error();
  LaunchResult result;
  result.command = *command;
  Pipe out, err;
  // mpirun's failure report is optional (Open MPI 4.1 leaves it out when the
  // failed rank's state is overwritten while the job is torn down); its state
  // trace names the rank every time, so the collector reads and hides it.
  auto child_env = spec.child_env;
  child_env.emplace_back(mpirun.mpi_major >= 5 ? "PRTE_MCA_state_base_verbose" : "OMPI_MCA_state_base_verbose", "5");
  auto pid = spawn(*command, out, err, spec.pass_stdin, child_env);
  if (!pid) return pid.error();
  OutputCollector collector(spec, result);
  int status = supervise(*pid, out, err, spec, collector, result);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (result.timed_out) result.exit_code = 124;
  name_failed_rank(spec, collector, result);
  return result;
}

namespace {

const char* state_trace_variable(const MpirunSpec& mpirun) {
  return mpirun.mpi_major >= 5 ? "PRTE_MCA_state_base_verbose" : "OMPI_MCA_state_base_verbose";
}

// The shell line run on the remote host: each child_env value read from
// stdin (one line each, so none may hold a newline), then mpirun through env
// with the state trace on. Every token single-quoted by shell_join.
Expected<std::pair<std::string, std::string>> remote_mpirun_line(const LaunchSpec& spec,
                                                                  const std::vector<std::string>& command) {
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  std::string line, stdin_data;
  for (const auto& [name, value] : spec.child_env) {
    if (!std::regex_match(name, variable)) return make_error("environment variable name " + shell_join({name}) + " is not valid");
    if (value.find('\n') != std::string::npos) return make_error(name + " holds a newline: cannot hand it to mpirun on the first host");
    line += "IFS= read -r " + name + " && export " + name + " && ";
    stdin_data += value + "\n";
  }
  std::vector<std::string> argv{"exec", "env", std::string(state_trace_variable(spec.mpirun)) + "=5"};
  argv.insert(argv.end(), command.begin(), command.end());
  return std::pair{line + shell_join(argv), stdin_data};
}

// The private directory `mktemp -d` made on the remote host, checked before it goes into any command.
Expected<std::string> remote_temp_dir(remote::RemoteSession& session) {
  auto made = session.run(shell_join({"mktemp", "-d", kRemoteAgentDirTemplate}));
  if (!made) return made.error().to_error();
  std::string dir = made->out.substr(0, made->out.find('\n'));
  static const std::regex plain("/tmp/xftctl-launch\\.[A-Za-z0-9]+");
  if (made->exit_status != 0 || !std::regex_match(dir, plain))
    return make_error("mktemp on " + session.host().name + " failed: " + made->err);
  return dir;
}

}  // namespace

Expected<LaunchResult> launch_through(const LaunchSpec& spec, remote::RemoteSession& session) {
  if (spec.pass_stdin) return make_error("standard input cannot be passed to ranks started on another host");
  MpirunSpec mpirun = spec.mpirun;
  std::string dir;
  if (!mpirun.local_only) {
    auto script = ssh_agent_script(mpirun.ssh);
    if (!script) return script.error();
    auto made = remote_temp_dir(session);
    if (!made) return made.error();
    dir = *made;
    mpirun.ssh_agent_path = dir + "/" + kSshAgentName;
    if (auto sent = session.upload(*script, mpirun.ssh_agent_path, 0700); !sent) {
      session.run("rm -rf -- " + shell_join({dir}));
      return sent.error().to_error();
    }
  }
  auto cleanup = [&] {
    if (!dir.empty()) session.run("rm -rf -- " + shell_join({dir}));
  };
  auto command = build_mpirun_command(spec.plan, mpirun);
  if (!command) {
    cleanup();
    return command.error();
  }
  auto line = remote_mpirun_line(spec, *command);
  if (!line) {
    cleanup();
    return line.error();
  }
  LaunchResult result;
  result.command = *command;
  OutputCollector collector(spec, result);
  remote::RunOptions options;
  options.stdin_data = line->second;
  options.timeout = spec.timeout;
  options.on_output = [&](bool is_stderr, std::string_view chunk) { collector.feed(is_stderr, chunk.data(), chunk.size()); };
  auto ran = session.run(line->first, options);
  collector.flush();
  cleanup();
  if (!ran) {
    if (ran.error().kind != remote::Failure::timeout) return ran.error().to_error();
    result.timed_out = true;
    result.exit_code = 124;
    return result;
  }
  result.exit_code = ran->exit_status;
  name_failed_rank(spec, collector, result);
  return result;
}

namespace {

// stdout and stderr of argv together; nullopt when it cannot be run at all.
Expected<std::optional<std::string>> capture_output(std::vector<std::string> argv, std::chrono::seconds timeout) {
  Pipe out, exec_status;
  if (!out.open() || !exec_status.open()) return make_error(std::string("cannot create pipes: ") + std::strerror(errno));
  std::vector<char*> args = c_strings(argv);
  pid_t pid = fork();
  if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(out.write, STDOUT_FILENO);
    dup2(out.write, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execvp(args[0], args.data());
    int code = errno;
    (void)!::write(exec_status.write, &code, sizeof code);
    _exit(127);
  }
  ::close(out.write);
  ::close(exec_status.write);
  out.write = exec_status.write = -1;
  int code = 0;
  bool exec_failed = ::read(exec_status.read, &code, sizeof code) == sizeof code;
  exec_status.close_both();
  std::string text;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  while (!exec_failed) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out.read, POLLIN, 0};
    if (poll(&p, 1, int(left)) < 0 && errno != EINTR) break;
    char buf[4096];
    ssize_t n = ::read(out.read, buf, sizeof buf);
    if (n > 0) text.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR) break;
  }
  out.close_both();
  if (timed_out) ::kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (exec_failed) return std::optional<std::string>{};
  if (timed_out) return make_error(argv[0] + " --version did not answer within " + std::to_string(timeout.count()) + " s");
  return std::optional<std::string>{std::move(text)};
}

// "Intel MPI", "MPICH", "MVAPICH" from a foreign mpirun's --version; empty when unknown.
std::string foreign_mpi_name(const std::string& version_output) {
  if (version_output.find("Intel(R) MPI Library") != std::string::npos) return "Intel MPI";
  if (version_output.find("MVAPICH") != std::string::npos) return "MVAPICH";
  if (version_output.find("HYDRA build details") != std::string::npos ||
      version_output.find("MPICH") != std::string::npos)
    return "MPICH";
  return "";
}

}  // namespace

namespace {

bool mpirun_on_path() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t begin = 0; begin <= dirs.size();) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    if (!dir.empty() && ::access((dir + "/mpirun").c_str(), X_OK) == 0) return true;
    begin = end + 1;
  }
  return false;
}

}  // namespace

std::string default_mpirun(const std::string& root) {
  if (const char* custom = std::getenv("XFTCTL_MPIRUN"); custom && *custom) return custom;
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string efa = base + "/opt/amazon/openmpi/bin/mpirun";
  // An absolute mpirun is also Open MPI's --prefix on the hosts: their daemons come from there too.
  if (::access(efa.c_str(), X_OK) == 0) return efa;
  if (mpirun_on_path()) return "mpirun";
  // RHEL and Alibaba Cloud Linux keep Open MPI off PATH until `module load mpi/openmpi-x86_64`.
  const std::string rhel = base + "/usr/lib64/openmpi/bin/mpirun";
  if (::access(rhel.c_str(), X_OK) == 0) return rhel;
  return "mpirun";
}

Expected<int> detect_open_mpi_major(const std::string& mpirun) {
  auto output = capture_output({mpirun, "--version"}, std::chrono::seconds(30));
  if (!output) return output.error();
  // Not there: launch() says so, with how to install it.
  if (!*output) return 4;
  if (int major = parse_open_mpi_major(**output); major > 0) return major;
  std::string name = foreign_mpi_name(**output);
  std::string first = first_meaningful(split_lines(**output));
  return make_error(mpirun + " is " + (name.empty() ? "not Open MPI" : name) +
                    (first.empty() ? "" : " (" + first + ")") +
                    "; xftctl builds Open MPI command lines: set XFTCTL_MPIRUN to Open MPI's mpirun "
                    "(/usr/bin/mpirun.openmpi on Debian/Ubuntu, /usr/lib64/openmpi/bin/mpirun on RHEL/Alibaba "
                    "Cloud Linux, /opt/amazon/openmpi/bin/mpirun with EFA)");
}

std::string local_subnet_for(const std::string& address) {
  in_addr target{};
  if (inet_pton(AF_INET, address.c_str(), &target) != 1) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string subnet;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET) continue;
    uint32_t addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    uint32_t mask = reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr;
    if ((addr & mask) != (target.s_addr & mask)) continue;
    in_addr net{addr & mask};
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &net, text, sizeof text);
    subnet = std::string(text) + "/" + std::to_string(__builtin_popcount(mask));
    break;
  }
  freeifaddrs(list);
  return subnet;
}

std::vector<HostFactsResult> gather_facts(const std::vector<inventory::Host>& hosts, remote::Transport& transport,
                                          const FactsRequest& request) {
  std::string dir = request.cache_dir.empty() ? facts_cache_dir() : request.cache_dir;
  return remote::fan_out(hosts, request.fanout, [&](const inventory::Host& host) {
    HostFactsResult result;
    result.host = host.name;
    if (!request.refresh) {
      auto cached = load_cached_facts(dir, host.name);
      if (cached) {
        result.facts = std::move(cached);
        result.from_cache = true;
        return result;
      }
    }
    auto session = transport.connect(host);
    if (!session) {
      result.unreachable = session.error().kind == remote::Failure::unreachable;
      result.facts = session.error().to_error();
      return result;
    }
    remote::RunOptions options;
    options.stdin_data = fact_probe_script();
    options.timeout = std::chrono::seconds(60);
    auto run = (*session)->run("sh -s", options);
    if (!run) {
      result.facts = run.error().to_error();
      return result;
    }
    auto facts = parse_facts(parse_fact_dump(run->out), host.name, host.name + ":");
    if (facts) {
      facts->probed_at = utc_now_iso8601();
      if (auto saved = save_cached_facts(dir, *facts); !saved)
        spdlog::warn("{}", saved.error().message);
    }
    result.facts = std::move(facts);
    return result;
  });
}

PlanHost plan_host_from(const inventory::Host& host, HostFacts facts) {
  PlanHost p;
  p.name = host.name;
  p.address = host.address.empty() ? host.name : host.address;
  p.ranks = host.ranks;
  p.fabric_iface = host.fabric.iface;
  p.fabric_provider = host.fabric.provider;
  p.fabric_env = host.fabric.env;
  p.facts = std::move(facts);
  return p;
}

Expected<RankPlan> plan_local(int ranks, const std::string& sysfs_root, const PlanOptions& options) {
  if (ranks < 1) return make_error("--local needs at least 1 rank (got " + std::to_string(ranks) + ")");
  char hostname[256] = "localhost";
  gethostname(hostname, sizeof hostname - 1);
  auto facts = probe_local_facts(sysfs_root, hostname);
  if (!facts) return facts.error();
  PlanHost host;
  host.name = hostname;
  host.address = "localhost";
  host.ranks.kind = inventory::RanksKind::count;
  host.ranks.count = ranks;
  host.fabric_provider = "shm";
  host.facts = std::move(*facts);
  PlanOptions local = options;
  local.ranks = host.ranks;  // --local N is N ranks, whatever else was asked
  return plan_ranks({host}, local);
}

Expected<MpirunSpec> mpirun_spec_for(const RankPlan& plan, const std::vector<inventory::Host>& hosts,
                                     const std::string& known_hosts, std::vector<std::string> command) {
  MpirunSpec spec;
  spec.mpirun = default_mpirun("/");
  auto major = detect_open_mpi_major(spec.mpirun);
  if (!major) return major.error();
  spec.mpi_major = *major;
  spec.as_root = geteuid() == 0;
  spec.command = std::move(command);
  spec.local_only = true;
  for (const auto& r : plan.ranks)
    if (r.address != "localhost" && r.address != "127.0.0.1") spec.local_only = false;
  if (plan.hosts.empty()) return spec;
  const PlanHost& first = plan.hosts.front();
  spec.provider = first.fabric_provider;
  if (spec.local_only) return spec;

  spec.iface = first.fabric_iface;
  for (const auto& h : plan.hosts)
    if (h.fabric_provider != first.fabric_provider)
      return make_error("hosts " + first.name + " and " + h.name + " use different fabric providers (" +
                        first.fabric_provider + ", " + h.fabric_provider +
                        "); one mpirun job runs one transport: make fabric.provider the same");
  spec.oob_subnet = local_subnet_for(first.address);

  // One ssh agent serves every host: they must agree on user, port and key.
  const inventory::Host* ref = hosts.empty() ? nullptr : &hosts.front();
  if (ref) {
    auto keys = remote::key_candidates(*ref);
    for (const auto& h : hosts) {
      if (h.user != ref->user || h.port != ref->port || remote::key_candidates(h) != keys)
        return make_error("hosts " + ref->name + " and " + h.name +
                          " differ in SSH user, port or key; mpirun uses one ssh command for all hosts");
    }
    if (keys.empty())
      return make_error("host " + ref->name + " has no SSH key: mpirun's ssh runs in batch mode (no passwords); " +
                        "set the host's key in the inventory or install ~/.config/xftctl/id_ed25519 on the hosts");
    spec.ssh.key = keys.front();
    spec.ssh.user = ref->user;
    spec.ssh.port = ref->port;
  }
  spec.ssh.known_hosts = known_hosts;
  return spec;
}

}  // namespace xft::launcher
