#include "engine/kernels/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>

namespace xft::engine {
namespace {

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

unsigned long long xgetbv0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool bit(unsigned value, int index) { return (value >> index) & 1u; }

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 1) return f;
  const CpuidRegs l1 = cpuid(1, 0);
  const bool osxsave = bit(l1.ecx, 27);
  const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  // XMM|YMM state for AVX; opmask|ZMM_Hi256|Hi16_ZMM for AVX-512; tile cfg+data for AMX.
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  const bool avx = bit(l1.ecx, 28) && os_avx;
  f.fma = avx && bit(l1.ecx, 12);
  f.f16c = avx && bit(l1.ecx, 29);
  if (max_leaf < 7) return f;
  const CpuidRegs l7 = cpuid(7, 0);
  const CpuidRegs l7s1 = cpuid(7, 1);
  f.avx2 = avx && bit(l7.ebx, 5);
  f.avx512f = os_avx512 && bit(l7.ebx, 16);
  f.avx512dq = f.avx512f && bit(l7.ebx, 17);
  f.avx512bw = f.avx512f && bit(l7.ebx, 30);
  f.avx512vl = f.avx512f && bit(l7.ebx, 31);
  f.avx512_vnni = f.avx512f && bit(l7.ecx, 11);
  f.avx512_fp16 = f.avx512f && bit(l7.edx, 23);
  f.avx512_bf16 = f.avx512f && bit(l7s1.eax, 5);
  f.avx_vnni = avx && bit(l7s1.eax, 4);
  f.amx_bf16 = os_amx && bit(l7.edx, 22);
  f.amx_tile = os_amx && bit(l7.edx, 24);
  f.amx_int8 = os_amx && bit(l7.edx, 25);
  return f;
}

Isa detect_best(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c) return Isa::avx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::avx2;
  return Isa::scalar;
}

std::atomic<int>& active_slot() {
  static std::atomic<int> slot{[] {
    Isa isa = best_isa();
    if (const char* env = std::getenv("XFT_ISA")) {
      Isa wanted;
      if (parse_isa(env, &wanted) && wanted < isa) isa = wanted;
    }
    return static_cast<int>(isa);
  }()};
  return slot;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string describe(const CpuFeatures& f) {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx_vnni, "avx_vnni");
  add(f.avx512_fp16, "avx512_fp16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_bf16, "amx_bf16");
  add(f.amx_int8, "amx_int8");
  return out;
}

Isa best_isa() {
  static const Isa best = detect_best(cpu_features());
  return best;
}

Isa active_isa() { return static_cast<Isa>(active_slot().load(std::memory_order_relaxed)); }

void set_active_isa(Isa isa) {
  if (isa > best_isa()) isa = best_isa();
  active_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "unknown";
}

bool parse_isa(const std::string& text, Isa* isa) {
  if (text == "scalar") *isa = Isa::scalar;
  else if (text == "avx2") *isa = Isa::avx2;
  else if (text == "avx512") *isa = Isa::avx512;
  else return false;
  return true;
}

namespace {
std::atomic<bool>& avx512_bf16_allowed() {
  static std::atomic<bool> allowed{true};
  return allowed;
}
}  // namespace

void set_avx512_bf16_allowed(bool allowed) { avx512_bf16_allowed().store(allowed, std::memory_order_relaxed); }

bool use_avx512_bf16() {
  return use_avx512() && cpu_features().avx512_bf16 && avx512_bf16_allowed().load(std::memory_order_relaxed);
}
bool use_avx512_vnni() { return use_avx512() && cpu_features().avx512_vnni; }

}  // namespace xft::engine
