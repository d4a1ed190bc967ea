#include "engine/tokenizer/token_index.h"

namespace xft::engine {

int32_t TokenIndex::build(const std::vector<std::string>& tokens) {
  tokens_ = &tokens;
  size_t capacity = 16;
  while (capacity < tokens.size() * 2) capacity *= 2;
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  count_ = 0;
  for (int32_t id = 0; id < static_cast<int32_t>(tokens.size()); ++id) {
    const std::string& bytes = tokens[id];
    if (bytes.empty()) continue;
    const uint64_t h = hash(bytes);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{tag, id};
        ++count_;
        break;
      }
      if (s.tag == tag && tokens[s.id] == bytes) return id;
    }
  }
  return -1;
}

}  // namespace xft::engine
