// The description every benchmark record carries: what ran where (commit, compiler, build type,
// CPU model and SIMD flags, kernel ISA chosen, threads). Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::bench {

// CPU model name from /proc/cpuinfo ("unknown" when unreadable).
std::string cpu_model_name();
// The SIMD-relevant flags the CPU reports (avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni
// avx_vnni avx512_bf16), space separated.
std::string cpu_simd_flags();

nlohmann::json describe_environment(int threads);

}  // namespace tessera::bench
