// What every kernel test shares: running a check on each ISA path this CPU has.
#pragma once

#include <vector>

#include "engine/kernels/amx_linear.h"
#include "engine/kernels/cpu_features.h"

namespace xft::engine {

// Forces a kernel ISA's vector kernels for the lifetime of the scope, then
// restores the previous ISA and AMX mode: AMX is off inside, so on an AMX
// host these tests still check the AVX-512/AVX2/scalar kernels (the AMX
// kernels have their own tests, kernels_amx_*_test.cpp).
class IsaScope {
 public:
  explicit IsaScope(Isa isa) : saved_(active_isa()), saved_amx_(amx_mode()) {
    set_active_isa(isa);
    set_amx_mode(AmxMode::off);
  }
  ~IsaScope() {
    set_active_isa(saved_);
    set_amx_mode(saved_amx_);
  }

 private:
  Isa saved_;
  AmxMode saved_amx_;
};

inline std::vector<Isa> available_isas() {
  std::vector<Isa> isas{Isa::scalar};
  if (best_isa() >= Isa::avx2) isas.push_back(Isa::avx2);
  if (best_isa() >= Isa::avx512) isas.push_back(Isa::avx512);
  return isas;
}

}  // namespace xft::engine
