#include "common/sha256.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(xft::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(xft::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(xft::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(xft::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ChunkingDoesNotMatter) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += char(i * 7 + 3);
  std::string whole = xft::sha256_hex(data);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 127u}) {
    xft::Sha256 hash;
    for (size_t at = 0; at < data.size(); at += chunk) hash.update(data.substr(at, chunk));
    EXPECT_EQ(hash.hex_digest(), whole) << chunk;
  }
}

TEST(Sha256, File) {
  auto path = std::filesystem::temp_directory_path() / ("xft-sha-" + std::to_string(::getpid()));
  std::ofstream(path) << "abc";
  EXPECT_EQ(*xft::sha256_file(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
  EXPECT_EQ(xft::sha256_file(path).error().message, "cannot open " + path.string() + ": No such file or directory");
}

}  // namespace
