// The known_hosts file xftctl manages (OpenSSH format, so `ssh -o
// UserKnownHostsFile=...` and ssh-keygen -R work on it too). Host keys are
// trusted on first use only when asked; a changed key is always refused.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/expected.h"
#include "remote/transport.h"

namespace xft::remote {

// How OpenSSH names a host in known_hosts: "addr" on port 22, "[addr]:port" otherwise.
std::string known_hosts_name(const std::string& address, int port);

// "SHA256:..." as ssh-keygen -l prints it; an error when the key does not decode.
Expected<std::string> key_fingerprint(const std::string& key_type, const std::string& key_base64);

struct KnownHostEntry {
  int line = 0;                       // 1-based line in the file
  std::string marker;                 // "", "@revoked" or "@cert-authority"
  std::vector<std::string> patterns;  // "host", "[host]:port", "!neg", globs, or "|1|salt|hash"
  std::string key_type;
  std::string key_base64;

  bool matches(const std::string& name) const;  // name as known_hosts_name() builds it
};

enum class HostKeyMatch {
  known,    // an entry with this exact key
  unknown,  // no entry for this host at all
  changed,  // entries for this host, none with this key (or the key is @revoked)
};

struct HostKeyVerdict {
  HostKeyMatch match = HostKeyMatch::unknown;
  const KnownHostEntry* conflicting = nullptr;  // the entry to delete, for `changed`
  bool revoked = false;
};

// The parsed file. Unparseable lines and comments are kept verbatim, as
// OpenSSH ignores them, so rewriting the file never loses anything.
class KnownHosts {
 public:
  static KnownHosts parse(const std::string& text);
  // A missing file is an empty one.
  static Expected<KnownHosts> load(const std::string& path);

  HostKeyVerdict check(const std::string& name, const std::string& key_type,
                       const std::string& key_base64) const;
  // Key types recorded for `name`, most recent last; for host key algorithm preference.
  std::vector<std::string> key_types_for(const std::string& name) const;
  void add(const std::string& name, const std::string& key_type, const std::string& key_base64);
  const std::vector<KnownHostEntry>& entries() const { return entries_; }
  std::string text() const;

 private:
  std::vector<std::string> lines_;
  std::vector<KnownHostEntry> entries_;
};

// A key trusted on first use, for the notice that reports it: one line per
// host would fill a cluster's terminal, so the caller folds them.
struct TrustedHostKey {
  std::string host;         // inventory name, "h01"
  std::string label;        // "h01 (10.0.0.1)"
  std::string key_type;     // "ssh-ed25519"
  std::string fingerprint;  // "SHA256:..."
  std::string known_hosts;  // the file it was recorded in

  // "h01 (10.0.0.1): trusting new host key ssh-ed25519 SHA256:... on first use (as asked); recorded in PATH"
  std::string message() const;
};

// Verifies server keys against one file on behalf of many threads, adding
// new keys (re-read, append, atomic rewrite) under a lock.
class KnownHostsStore {
 public:
  using Notice = std::function<void(const TrustedHostKey&)>;
  KnownHostsStore(std::string path, bool accept_new, Notice notice);

  // `label` ("h01 (10.0.0.1)") starts every message; `host` is the inventory name.
  Remote<void> verify(const std::string& host, const std::string& label, const std::string& address, int port,
                      const std::string& key_type, const std::string& key_base64);
  std::vector<std::string> key_types_for(const std::string& address, int port);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool accept_new_;
  Notice notice_;
  std::mutex mutex_;
};

}  // namespace xft::remote
