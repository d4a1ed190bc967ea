#include "remote/credentials.h"

#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace xft::remote {
namespace {

bool file_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string where_declared(const inventory::Host& host) {
  return host.line > 0 ? " (inventory line " + std::to_string(host.line) + ")" : "";
}

}  // namespace

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_dir) return entry->pw_dir;
  return "/";
}

std::string xftctl_config_dir() {
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config)
    return std::string(config) + "/xftctl";
  return home_directory() + "/.config/xftctl";
}

Expected<std::string> read_password_from_tty(const std::string& prompt) {
  int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (tty < 0)
    return make_error("no terminal to prompt for a password (password_prompt needs one); "
                      "use password_env or a key instead");
  termios saved;
  bool have_termios = ::tcgetattr(tty, &saved) == 0;
  if (have_termios) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    quiet.c_lflag |= ECHONL;
    ::tcsetattr(tty, TCSAFLUSH, &quiet);
  }
  ssize_t ignored = ::write(tty, prompt.data(), prompt.size());
  (void)ignored;
  std::string answer;
  char c;
  ssize_t n;
  while ((n = ::read(tty, &c, 1)) == 1 && c != '\n') answer += c;
  if (have_termios) ::tcsetattr(tty, TCSAFLUSH, &saved);
  ::close(tty);
  if (n < 0 && errno != EINTR) return make_error("cannot read the password from the terminal");
  return answer;
}

DefaultPasswordSource::DefaultPasswordSource(PromptReader reader) : reader_(std::move(reader)) {}

DefaultPasswordSource::~DefaultPasswordSource() {
  for (auto& [prompt, answer] : answers_)
    if (answer) ::explicit_bzero(answer->data(), answer->size());
}

std::string DefaultPasswordSource::prompt_for(const inventory::Host& host) {
  return "xftctl: SSH password for " + host.user + ": ";
}

Expected<std::string> DefaultPasswordSource::password_for(const inventory::Host& host) {
  const auto& credentials = host.credentials;
  if (!credentials.password_env.empty()) {
    if (const char* value = std::getenv(credentials.password_env.c_str())) return std::string(value);
    if (!credentials.password_prompt)
      return make_error(host.name + ": password_env " + credentials.password_env +
                        " is not set" + where_declared(host) + "; export " +
                        credentials.password_env + " with the password");
  }
  if (!credentials.password_prompt) return make_error(host.name + ": the inventory gives no password");
  std::string prompt = prompt_for(host);
  // Holding the lock while prompting makes the other threads wait for the one answer.
  std::lock_guard lock(mutex_);
  auto found = answers_.find(prompt);
  if (found == answers_.end()) found = answers_.emplace(prompt, reader_(prompt)).first;
  return found->second;
}

std::vector<std::string> key_candidates(const inventory::Host& host) {
  if (!host.credentials.key.empty()) return {host.credentials.key};
  std::vector<std::string> keys;
  for (const auto& path : {xftctl_config_dir() + "/id_ed25519", home_directory() + "/.ssh/id_ed25519"})
    if (file_exists(path)) keys.push_back(path);
  return keys;
}

}  // namespace xft::remote
