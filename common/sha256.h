// SHA-256 (FIPS 180-4), for proving generated files bit-exact against
// published digests without shelling out to sha256sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/expected.h"

namespace xft {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::string hex_digest();  // finishes the hash; call once

 private:
  void compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t block_[64];
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);
// Streams the file; an error names the path.
Expected<std::string> sha256_file(const std::string& path);

}  // namespace xft
