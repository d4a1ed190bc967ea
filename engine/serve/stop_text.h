// OpenAI's `stop` strings on streamed text: text is released only once it can
// no longer be the start of a stop string, and everything from the first
// match on is dropped, so a client never sees part of a stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xft::engine::serve {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Appends decoded text; returns what may be sent now.
  std::string push(std::string_view text);
  // End of generation: whatever was held back (nothing after a match).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace xft::engine::serve
