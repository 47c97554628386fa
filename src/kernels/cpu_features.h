// CpuFeatures: which x86 SIMD extensions this CPU has *and* the OS has enabled (CPUID feature
// bits checked together with XCR0 via xgetbv, so AVX/AVX-512 state saving is confirmed). The
// kernel table's dispatch reads it once at start-up; benchmark records print cpu_flags_string().
// On non-x86 builds every flag is false. Thread-safety: cpu_features() is computed once (a
// function-local static) and is safe to call from any thread.
#pragma once

#include <string>

namespace tessera::kernels {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_vbmi = false;   // vpermb, vpmultishiftqb (Ice Lake, Zen 4): the 2:4 gather kernel
  bool avx512_vbmi2 = false;  // vpexpandb/w, vpcompressb/w (Ice Lake, Zen 4); reported only
  bool avx_vnni = false;  // VEX-encoded VNNI on 256-bit registers (Alder Lake, Zen 5)
  bool avx512_bf16 = false;

  // The set the AVX2 kernels were compiled for (-mavx2 -mfma -mf16c).
  bool has_avx2_set() const { return avx2 && fma && f16c; }
  // The set the AVX-512 kernels were compiled for (-mavx512f -mavx512bw -mavx512vl -mavx512vnni,
  // on top of the AVX2 set).
  bool has_avx512_set() const {
    return has_avx2_set() && avx512f && avx512bw && avx512vl && avx512_vnni;
  }
};

// The running CPU's features (usable ones only). Computed on first call.
const CpuFeatures& cpu_features();

// Space-separated names of the usable features, e.g. "avx2 fma f16c avx512f ...", or "none".
std::string cpu_flags_string();

}  // namespace tessera::kernels
