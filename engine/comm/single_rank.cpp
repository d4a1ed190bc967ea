#include <cstring>

#include "engine/comm/communicator.h"

namespace xft::engine {

void SingleRankCommunicator::allgather(const void* in, size_t bytes, void* out) {
  if (bytes != 0 && in != out) std::memmove(out, in, bytes);
}

}  // namespace xft::engine
