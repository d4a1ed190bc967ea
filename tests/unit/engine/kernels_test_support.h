// What every kernel test shares: running a check on each ISA path this CPU has.
#pragma once

#include <vector>

#include "engine/kernels/amx_linear.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear_internal.h"

namespace xft::engine {

// Forces a kernel ISA's vector kernels for the lifetime of the scope, then
// restores the previous ISA and AMX mode: AMX is off inside, so on an AMX
// host these tests still check the AVX-512/AVX2/scalar kernels (the AMX
// kernels have their own tests, kernels_amx_*_test.cpp).
class IsaScope {
 public:
  // avx512_bf16 false: vdpbf16ps off too, for the AVX-512F kernels.
  explicit IsaScope(Isa isa, bool avx512_bf16 = true) : saved_(active_isa()), saved_amx_(amx_mode()) {
    set_active_isa(isa);
    set_amx_mode(AmxMode::off);
    set_avx512_bf16_allowed(avx512_bf16);
  }
  ~IsaScope() {
    set_active_isa(saved_);
    set_amx_mode(saved_amx_);
    set_avx512_bf16_allowed(true);
  }

 private:
  Isa saved_;
  AmxMode saved_amx_;
};

// Packs int4 for one AVX-512 decode kernel (Int4Dot) for the scope's lifetime.
class Int4DotScope {
 public:
  explicit Int4DotScope(Int4Dot dot) : saved_(int4_dot()) { set_int4_dot(dot); }
  ~Int4DotScope() { set_int4_dot(saved_); }

 private:
  Int4Dot saved_;
};

// The int4 decode kernels to pack for under an ISA scope: on AVX-512 with
// VNNI and BF16 both (Int4Dot), else the one the CPU has (the choice does not
// matter below AVX-512).
inline std::vector<Int4Dot> available_int4_dots(Isa isa) {
  if (isa >= Isa::avx512 && cpu_features().avx512_vnni && cpu_features().avx512_bf16) {
    return {Int4Dot::vnni, Int4Dot::bf16};
  }
  return {cpu_features().avx512_bf16 && !cpu_features().avx512_vnni ? Int4Dot::bf16 : Int4Dot::vnni};
}

inline std::vector<Isa> available_isas() {
  std::vector<Isa> isas{Isa::scalar};
  if (best_isa() >= Isa::avx2) isas.push_back(Isa::avx2);
  if (best_isa() >= Isa::avx512) isas.push_back(Isa::avx512);
  return isas;
}

// A decode path to test: an ISA family, and whether vdpbf16ps is used in it.
struct KernelPath {
  Isa isa = Isa::scalar;
  bool avx512_bf16 = false;
};

// Every path this CPU can run: each ISA family, and on an AVX512-BF16 CPU
// the AVX-512 family both with vdpbf16ps and without (AVX-512F alone).
inline std::vector<KernelPath> available_kernel_paths() {
  std::vector<KernelPath> paths;
  for (Isa isa : available_isas()) paths.push_back({isa, false});
  if (best_isa() >= Isa::avx512 && cpu_features().avx512_bf16) paths.push_back({Isa::avx512, true});
  return paths;
}

}  // namespace xft::engine
