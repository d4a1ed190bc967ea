#include "engine/serve/api_key.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace xft::engine::serve {

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

bool keys_equal(std::string_view a, std::string_view b) {
  unsigned char da[SHA256_DIGEST_LENGTH];
  unsigned char db[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db);
  return CRYPTO_memcmp(da, db, sizeof da) == 0;
}

std::string bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  static constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || !space(authorization[kScheme.size()])) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return "";
  }
  return std::string(trim(authorization.substr(kScheme.size())));
}

Expected<std::string> read_api_key_file(const std::string& path) {
  const std::string flag = "--api-key-file " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error(flag + ": " + std::strerror(errno));
  if (st.st_mode & (S_IRGRP | S_IROTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(flag + ": other users can read it (mode " + mode + "); run: chmod 600 " + path);
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return make_error(flag + ": cannot read a key from its first line");
  while (!line.empty() && space(line.back())) line.pop_back();
  if (line.empty()) return make_error(flag + ": its first line is empty");
  return line;
}

}  // namespace xft::engine::serve
