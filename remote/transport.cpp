#include "remote/transport.h"

namespace xft::remote {

const char* failure_name(Failure failure) {
  switch (failure) {
    case Failure::unreachable: return "unreachable";
    case Failure::auth_failed: return "auth failed";
    case Failure::host_key_unknown: return "host key unknown";
    case Failure::host_key_changed: return "host key changed";
    case Failure::timeout: return "timeout";
    case Failure::other: return "failed";
  }
  return "failed";
}

}  // namespace xft::remote
