// SHA-256 through OpenSSL's EVP interface (SHA-NI where the CPU has it), for
// proving generated files bit-exact against published digests and for sync's
// change detection, without shelling out to sha256sum.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/expected.h"

struct evp_md_ctx_st;

namespace xft {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::string hex_digest();  // finishes the hash; call once

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> context_;
};

std::string sha256_hex(std::string_view data);
// Streams the file; an error names the path.
Expected<std::string> sha256_file(const std::string& path);

}  // namespace xft
