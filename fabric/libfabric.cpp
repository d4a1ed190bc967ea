#include "fabric/libfabric.h"

#include <dlfcn.h>

#include <string>

namespace xft::fabric {
namespace {

template <class F>
bool bind(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(::dlsym(library, name));
  return slot != nullptr;
}

Expected<const Libfabric*> open_libfabric() {
  static Libfabric api;
  void* library = ::dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = ::dlerror();
    return make_error(std::string("cannot load libfabric.so.1: ") + (why ? why : "not found") +
                      " (install libfabric1, or put the provider's libfabric on LD_LIBRARY_PATH)");
  }
  const bool complete = bind(library, "fi_getinfo", api.getinfo) && bind(library, "fi_freeinfo", api.freeinfo) &&
                        bind(library, "fi_dupinfo", api.dupinfo) && bind(library, "fi_fabric", api.fabric) &&
                        bind(library, "fi_strerror", api.strerror) && bind(library, "fi_tostr", api.tostr) &&
                        bind(library, "fi_version", api.version);
  if (!complete) return make_error("libfabric.so.1 lacks fi_getinfo/fi_fabric/...: not a libfabric 1.x library");
  return &api;
}

}  // namespace

Expected<const Libfabric*> libfabric() {
  static const Expected<const Libfabric*> loaded = open_libfabric();
  return loaded;
}

}  // namespace xft::fabric
