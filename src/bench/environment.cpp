#include "tessera/bench/environment.h"

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tessera/base/build_info.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::bench {
namespace {
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "";
}
}  // namespace

std::string cpu_model_name() {
  std::string s = cpuinfo_field("model name");
  return s.empty() ? "unknown" : s;
}

std::string cpu_simd_flags() {
  static const std::set<std::string> kInteresting = {
      "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
      "avx512_bf16"};
  std::istringstream flags(cpuinfo_field("flags"));
  std::string f, out;
  while (flags >> f) {
    if (kInteresting.count(f)) out += (out.empty() ? "" : " ") + f;
  }
  return out;
}

nlohmann::json describe_environment(int threads) {
  const BuildInfo& b = build_info();
  return {{"tessera_version", b.version},
          {"commit", b.commit},
          {"compiler", b.compiler},
          {"build_type", b.build_type},
          {"sanitizers", b.sanitizers},
          {"cpu", cpu_model_name()},
          {"cpu_flags", cpu_simd_flags()},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"kernel_isa", kernels::kernel_table().isa},
          {"threads", threads}};
}

}  // namespace tessera::bench
