// libFuzzer target: the safetensors header parser must turn any bytes into
// either a validated header or an error, never a crash, hang or overread.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The input is the whole file; the header length inside it is attacker-chosen.
  std::string file(reinterpret_cast<const char*>(data), size);
  auto header = xft::engine::parse_safetensors_header(file, file.size(), "fuzz.safetensors");
  if (header) {
    // What the parser accepted must describe bytes that really are in the file.
    uint64_t data_size = file.size() - header->data_start;
    for (const auto& tensor : header->tensors) {
      if (tensor.end > data_size || tensor.begin > tensor.end) __builtin_trap();
    }
  }
  return 0;
}
