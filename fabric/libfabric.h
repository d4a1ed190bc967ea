// libfabric's exported entry points, opened with dlopen the first time a
// ping-pong needs them instead of linked into the binary. Linked, libfabric.so.1
// brings its PSM providers' libraries (libpsm2, libinfinipath) into every
// xftctl process, and their constructors calibrate the CPU clock by sleeping:
// about 0.2 s added to every command and every rank start, fabric or not.
// The rest of libfabric's API (fi_domain, fi_endpoint, fi_tsend, ...) is
// inline calls through the objects these return, so it needs nothing here.
#pragma once

#include <rdma/fabric.h>

#include "common/expected.h"

namespace xft::fabric {

struct Libfabric {
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;  // dupinfo(nullptr) is fi_allocinfo()
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
  decltype(&::fi_tostr) tostr = nullptr;
  decltype(&::fi_version) version = nullptr;
};

// libfabric.so.1 as the dynamic loader finds it (LD_LIBRARY_PATH first, so
// EFA's own library where the pair worker was started with it), loaded once
// per process; or the loader's reason it could not be.
Expected<const Libfabric*> libfabric();

}  // namespace xft::fabric
