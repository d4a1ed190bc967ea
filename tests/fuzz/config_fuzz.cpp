// libFuzzer target: config.json parsing never crashes, and what it accepts is
// a shape the engine can size buffers from.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/checkpoint/config.h"
#include "engine/checkpoint/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto config = xft::engine::parse_config(text, "config.json");
  if (config) {
    const auto& c = *config;
    if (c.hidden <= 0 || c.layers <= 0 || c.heads <= 0 || c.kv_heads <= 0 || c.head_dim <= 0 ||
        c.intermediate <= 0 || c.vocab <= 0 || c.heads % c.kv_heads != 0) {
      __builtin_trap();
    }
    // Listing the tensors must be cheap enough for any accepted layer count.
    if (c.layers <= 256) (void)xft::engine::expected_tensors(c);
  }
  return 0;
}
