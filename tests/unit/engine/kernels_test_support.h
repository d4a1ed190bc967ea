// What every kernel test shares: running a check on each ISA path this CPU has.
#pragma once

#include <vector>

#include "engine/kernels/cpu_features.h"

namespace xft::engine {

// Forces a kernel ISA for the lifetime of the scope, then restores the previous one.
class IsaScope {
 public:
  explicit IsaScope(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~IsaScope() { set_active_isa(saved_); }

 private:
  Isa saved_;
};

inline std::vector<Isa> available_isas() {
  std::vector<Isa> isas{Isa::scalar};
  if (best_isa() >= Isa::avx2) isas.push_back(Isa::avx2);
  if (best_isa() >= Isa::avx512) isas.push_back(Isa::avx512);
  return isas;
}

}  // namespace xft::engine
