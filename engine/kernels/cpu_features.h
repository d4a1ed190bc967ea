// What the CPU can do, detected once at run time (cpuid + xgetbv), and which
// kernel family is active. The library is compiled for baseline x86-64: every
// AVX2/AVX-512 kernel lives in its own file with __attribute__((target)), so
// one binary runs everywhere and picks its kernels here.
#pragma once

#include <string>

namespace xft::engine {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  bool avx512_fp16 = false;
};

// Detected once; the OS must have enabled the register state (XCR0) for a
// feature to count, so a VM that hides AVX-512 state reports no AVX-512.
const CpuFeatures& cpu_features();

// "avx2 fma f16c avx512f ..." for logs and `xftctl` diagnostics.
std::string describe(const CpuFeatures& features);

// Kernel families, ordered: a higher one may use every lower one.
enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

// The best family this CPU supports: avx512 needs F+BW+VL+DQ, avx2 needs AVX2+FMA+F16C.
Isa best_isa();

// The family kernels use: best_isa() lowered by env XFT_ISA=scalar|avx2|avx512
// (read on first use) or by set_active_isa(). Never higher than best_isa().
Isa active_isa();

// Forces a family (clamped to best_isa()); tests use it to run every path.
// Objects that pack data per family (Linear) pick theirs when constructed.
void set_active_isa(Isa isa);

const char* isa_name(Isa isa);

// Parses "scalar", "avx2", "avx512"; false when the text is none of them.
bool parse_isa(const std::string& text, Isa* isa);

// Feature checks that combine the active family with single instructions.
inline bool use_avx512() { return active_isa() >= Isa::avx512; }
inline bool use_avx2() { return active_isa() >= Isa::avx2; }
bool use_avx512_bf16();  // avx512 family and vdpbf16ps, unless turned off below
bool use_avx512_vnni();  // avx512 family and vpdpbusd

// Turns vdpbf16ps off (or back on) for kernels picked from now on, so tests
// reach the AVX-512F kernels that an AVX512-BF16 machine otherwise never runs.
void set_avx512_bf16_allowed(bool allowed);

}  // namespace xft::engine
