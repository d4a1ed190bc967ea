#include "remote/known_hosts.h"

#include <libssh/libssh.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"

namespace xft::remote {
namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// OpenSSH host patterns know only '*' and '?' ('[' is literal, as in "[host]:port").
bool glob_match(const char* pattern, const char* text) {
  for (; *pattern; ++pattern, ++text) {
    if (*pattern == '*') {
      for (const char* rest = text;; ++rest) {
        if (glob_match(pattern + 1, rest)) return true;
        if (!*rest) return false;
      }
    }
    if (!*text || (*pattern != '?' && *pattern != *text)) return false;
  }
  return *text == '\0';
}

std::string base64_decode(const std::string& text) {
  if (text.empty() || text.size() % 4 != 0) return {};
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return {};
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

std::string base64_encode(const unsigned char* data, size_t size) {
  std::string out((size + 2) / 3 * 4 + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<size_t>(n));
  return out;
}

// "|1|base64(salt)|base64(HMAC-SHA1(salt, name))", what HashKnownHosts writes.
bool hashed_match(const std::string& pattern, const std::string& name) {
  const std::string magic = "|1|";
  if (pattern.compare(0, magic.size(), magic) != 0) return false;
  size_t bar = pattern.find('|', magic.size());
  if (bar == std::string::npos) return false;
  std::string salt = base64_decode(pattern.substr(magic.size(), bar - magic.size()));
  if (salt.empty()) return false;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (!HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
            reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest, &digest_size))
    return false;
  return base64_encode(digest, digest_size) == pattern.substr(bar + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

bool parse_entry(const std::string& line, int line_number, KnownHostEntry& entry) {
  auto fields = split_fields(line);
  if (fields.empty() || fields[0][0] == '#') return false;
  size_t first = 0;
  if (fields[0][0] == '@') entry.marker = fields[first++];
  if (fields.size() < first + 3) return false;
  entry.line = line_number;
  entry.patterns = split_commas(fields[first]);
  entry.key_type = fields[first + 1];
  entry.key_base64 = fields[first + 2];
  return true;
}

std::string fingerprint_or_placeholder(const std::string& type, const std::string& base64) {
  auto fingerprint = key_fingerprint(type, base64);
  return fingerprint ? *fingerprint : "(undecodable key)";
}

Expected<void> make_parent_directory(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return {};
  std::error_code error;
  bool created = std::filesystem::create_directories(parent, error);
  if (error) return make_error("cannot create directory " + parent.string() + ": " + error.message());
  // A fresh ~/.config/xftctl also holds our private key: keep it to ourselves.
  if (created) ::chmod(parent.c_str(), 0700);
  return {};
}

}  // namespace

std::string known_hosts_name(const std::string& address, int port) {
  if (port == 22) return lowercase(address);
  return "[" + lowercase(address) + "]:" + std::to_string(port);
}

Expected<std::string> key_fingerprint(const std::string& key_type, const std::string& key_base64) {
  ssh_key key = nullptr;
  enum ssh_keytypes_e type = ssh_key_type_from_name(key_type.c_str());
  if (type == SSH_KEYTYPE_UNKNOWN || ssh_pki_import_pubkey_base64(key_base64.c_str(), type, &key) != SSH_OK)
    return make_error("cannot decode " + key_type + " key");
  unsigned char* hash = nullptr;
  size_t hash_size = 0;
  int rc = ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_size);
  ssh_key_free(key);
  if (rc != SSH_OK) return make_error("cannot hash " + key_type + " key");
  char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_size);
  ssh_clean_pubkey_hash(&hash);
  if (!text) return make_error("cannot format the fingerprint of a " + key_type + " key");
  std::string fingerprint = text;
  ssh_string_free_char(text);
  return fingerprint;
}

bool KnownHostEntry::matches(const std::string& name) const {
  std::string lowered = lowercase(name);
  bool matched = false;
  for (const auto& pattern : patterns) {
    if (pattern.empty()) continue;
    if (pattern[0] == '|') {
      if (hashed_match(pattern, lowered)) matched = true;
      continue;
    }
    bool negated = pattern[0] == '!';
    std::string glob = lowercase(negated ? pattern.substr(1) : pattern);
    if (!glob_match(glob.c_str(), lowered.c_str())) continue;
    if (negated) return false;  // a negated match vetoes the whole line, as in OpenSSH
    matched = true;
  }
  return matched;
}

KnownHosts KnownHosts::parse(const std::string& text) {
  KnownHosts known;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    known.lines_.push_back(line);
    KnownHostEntry entry;
    if (parse_entry(line, number, entry)) known.entries_.push_back(std::move(entry));
  }
  return known;
}

Expected<KnownHosts> KnownHosts::load(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 && errno == ENOENT) return KnownHosts{};
  auto text = read_file(path);
  if (!text) return text.error();
  return parse(*text);
}

HostKeyVerdict KnownHosts::check(const std::string& name, const std::string& key_type,
                                 const std::string& key_base64) const {
  HostKeyVerdict verdict;
  bool found = false;
  for (const auto& entry : entries_) {
    if (entry.marker == "@cert-authority" || !entry.matches(name)) continue;
    bool same_key = entry.key_type == key_type && entry.key_base64 == key_base64;
    if (entry.marker == "@revoked") {
      if (same_key) return {HostKeyMatch::changed, &entry, true};
      continue;
    }
    if (same_key) {
      found = true;
      continue;
    }
    if (entry.marker.empty() &&
        (!verdict.conflicting ||
         (entry.key_type == key_type && verdict.conflicting->key_type != key_type)))
      verdict.conflicting = &entry;  // a same-type entry is the one to show
  }
  if (found) return {HostKeyMatch::known, nullptr, false};
  verdict.match = verdict.conflicting ? HostKeyMatch::changed : HostKeyMatch::unknown;
  return verdict;
}

std::vector<std::string> KnownHosts::key_types_for(const std::string& name) const {
  std::vector<std::string> types;
  for (const auto& entry : entries_)
    if (entry.marker.empty() && entry.matches(name)) types.push_back(entry.key_type);
  return types;
}

void KnownHosts::add(const std::string& name, const std::string& key_type,
                     const std::string& key_base64) {
  std::string line = name + " " + key_type + " " + key_base64;
  lines_.push_back(line);
  KnownHostEntry entry;
  parse_entry(line, static_cast<int>(lines_.size()), entry);
  entries_.push_back(std::move(entry));
}

std::string KnownHosts::text() const {
  std::string out;
  for (const auto& line : lines_) out += line + "\n";
  return out;
}

KnownHostsStore::KnownHostsStore(std::string path, bool accept_new, Notice notice)
    : path_(std::move(path)), accept_new_(accept_new), notice_(std::move(notice)) {}

std::vector<std::string> KnownHostsStore::key_types_for(const std::string& address, int port) {
  std::lock_guard lock(mutex_);
  auto known = KnownHosts::load(path_);
  if (!known) return {};
  return known->key_types_for(known_hosts_name(address, port));
}

std::string TrustedHostKey::message() const {
  return label + ": trusting new host key " + key_type + " " + fingerprint + " on first use (as asked); recorded in " +
         known_hosts;
}

Remote<void> KnownHostsStore::verify(const std::string& host, const std::string& label, const std::string& address, int port,
                                     const std::string& key_type, const std::string& key_base64) {
  std::lock_guard lock(mutex_);
  // Re-read every time: another xftctl may have added keys since we started.
  auto known = KnownHosts::load(path_);
  if (!known)
    return RemoteError{Failure::other, label + ": cannot read known_hosts: " + known.error().message};
  std::string name = known_hosts_name(address, port);
  HostKeyVerdict verdict = known->check(name, key_type, key_base64);
  std::string offered = key_type + " " + fingerprint_or_placeholder(key_type, key_base64);

  if (verdict.match == HostKeyMatch::known) return {};
  if (verdict.match == HostKeyMatch::changed) {
    const KnownHostEntry& old = *verdict.conflicting;
    std::string where = path_ + ":" + std::to_string(old.line);
    if (verdict.revoked)
      return RemoteError{Failure::host_key_changed,
                         label + ": host key " + offered + " is marked @revoked at " + where +
                             "; refusing to connect"};
    return RemoteError{
        Failure::host_key_changed,
        label + ": HOST KEY CHANGED: the server offers " + offered + " but " + where + " holds " +
            old.key_type + " " + fingerprint_or_placeholder(old.key_type, old.key_base64) +
            "; this can be a man-in-the-middle attack and no flag overrides it; if the host was "
            "reinstalled, delete line " + std::to_string(old.line) + " of " + path_ +
            " and rerun with --accept-new-host-keys"};
  }
  if (!accept_new_)
    return RemoteError{Failure::host_key_unknown,
                       label + ": host key unknown: " + offered + " is not in " + path_ +
                           "; check the fingerprint, then rerun with --accept-new-host-keys to trust it"};

  known->add(name, key_type, key_base64);
  auto parent = make_parent_directory(path_);
  auto written = parent ? write_file_atomic(path_, known->text(), 0644) : parent;
  if (!written)
    return RemoteError{Failure::other, label + ": cannot record the host key: " + written.error().message};
  if (notice_) notice_({host, label, key_type, fingerprint_or_placeholder(key_type, key_base64), path_});
  return {};
}

}  // namespace xft::remote
