#include "tessera/kernels/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TESSERA_X86 1
#endif

namespace tessera::kernels {
namespace {

#ifdef TESSERA_X86
// XCR0 through xgetbv; inline asm so this file needs no -mxsave.
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool bit(uint32_t reg, int b) { return (reg >> b) & 1u; }

CpuFeatures detect() {
  CpuFeatures f;
  uint32_t a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const uint32_t max_leaf = a;
  if (max_leaf < 1) return f;
  __cpuid_count(1, 0, a, b, c, d);
  const bool osxsave = bit(c, 27);
  const bool avx = bit(c, 28);
  const bool fma = bit(c, 12);
  const bool f16c = bit(c, 29);
  if (!osxsave || !avx) return f;  // without OS-enabled AVX no VEX/EVEX instruction may run
  const uint64_t xcr0 = read_xcr0();
  // XMM (bit 1) and YMM (bit 2) state saved by the OS: required for any 256-bit code.
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  // Plus opmask (5), upper halves of ZMM0-15 (6) and ZMM16-31 (7) for AVX-512.
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;
  if (!os_avx) return f;
  f.fma = fma;
  f.f16c = f16c;
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const uint32_t max_subleaf = a;
  f.avx2 = bit(b, 5);
  if (os_avx512) {
    f.avx512f = bit(b, 16);
    f.avx512bw = bit(b, 30);
    f.avx512vl = bit(b, 31);
    f.avx512_vnni = bit(c, 11);
    f.avx512_vbmi = bit(c, 1);
    f.avx512_vbmi2 = bit(c, 6);
  }
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = bit(a, 4);
    if (os_avx512) f.avx512_bf16 = bit(a, 5);
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string cpu_flags_string() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_vbmi, "avx512_vbmi");
  add(f.avx512_vbmi2, "avx512_vbmi2");
  add(f.avx_vnni, "avx_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  return s.empty() ? "none" : s;
}

}  // namespace tessera::kernels
