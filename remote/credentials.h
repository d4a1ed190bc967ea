// Where the secrets for SSH logins come from. The inventory never holds a
// password: it names an environment variable, or asks for a prompt. Key
// files are tried in a fixed order when the inventory names none.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::remote {

// Asks the user for a secret without echo; `prompt` is shown as is.
using PromptReader = std::function<Expected<std::string>(const std::string& prompt)>;

// Reads from /dev/tty with echo off; an error when there is no terminal.
Expected<std::string> read_password_from_tty(const std::string& prompt);

class PasswordSource {
 public:
  virtual ~PasswordSource() = default;
  // Whether the inventory gives this host a password at all.
  static bool has_password(const inventory::Host& host) {
    return !host.credentials.password_env.empty() || host.credentials.password_prompt;
  }
  // The password for `host`: $password_env, else the prompt. Thread-safe.
  virtual Expected<std::string> password_for(const inventory::Host& host) = 0;
};

// Environment first; prompts once per distinct prompt text (one per user
// name), however many hosts and threads ask, and reuses the answer.
class DefaultPasswordSource : public PasswordSource {
 public:
  explicit DefaultPasswordSource(PromptReader reader = read_password_from_tty);
  ~DefaultPasswordSource() override;
  Expected<std::string> password_for(const inventory::Host& host) override;

  static std::string prompt_for(const inventory::Host& host);

 private:
  PromptReader reader_;
  std::mutex mutex_;
  std::map<std::string, Expected<std::string>> answers_;  // prompt -> answer (or the failure)
};

// Private key files to offer, in order: the inventory's key if it names one;
// else xftctl's own ~/.config/xftctl/id_ed25519, then ~/.ssh/id_ed25519,
// each only if it exists.
std::vector<std::string> key_candidates(const inventory::Host& host);

// $HOME (or the passwd entry when HOME is unset).
std::string home_directory();
// ~/.config/xftctl (honours $XDG_CONFIG_HOME).
std::string xftctl_config_dir();

}  // namespace xft::remote
