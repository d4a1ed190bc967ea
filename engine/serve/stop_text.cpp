#include "engine/serve/stop_text.h"

#include <algorithm>

namespace xft::engine::serve {

std::string StopText::push(std::string_view text) {
  if (stopped_) return "";
  held_ += text;
  size_t first = std::string::npos;
  for (const auto& stop : stops_) first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest tail that a stop string starts with.
  size_t keep = 0;
  for (const auto& stop : stops_) {
    for (size_t k = std::min(stop.size() - 1, held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, stop, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopText::flush() {
  std::string out = stopped_ ? "" : held_;
  held_.clear();
  return out;
}

}  // namespace xft::engine::serve
