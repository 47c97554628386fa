#include "tessera/model/arch_traits.h"

#include <fmt/format.h>

namespace tessera::model {

Result<std::vector<int64_t>> read_sliding_window(const Metadata& m, const std::string& arch,
                                                 int64_t n_layers) {
  const std::string key = arch + ".attention.sliding_window";
  if (!m.contains(key)) return std::vector<int64_t>{};
  TS_ASSIGN_OR_RETURN(int64_t w, m.get_int(key));
  if (w < 1 || w > (int64_t{1} << 24)) {
    return corrupt_data(fmt::format("{} is {}, expected a value in [1, 2^24]", key, w));
  }
  return std::vector<int64_t>(static_cast<size_t>(n_layers), w);
}

Result<std::vector<int64_t>> interleaved_windows(const Metadata& m, const std::string& arch,
                                                 int64_t n_layers, int64_t window,
                                                 int64_t default_period) {
  const std::string key = arch + ".attention.sliding_window_pattern";
  int64_t period = default_period;
  if (const GgufValue* v = m.find(key)) {
    if (v->as_array().is_ok()) {
      return unsupported(fmt::format("{} as a per-layer array is not supported", key));
    }
    TS_ASSIGN_OR_RETURN(period, v->as_int());
  }
  if (period < 0 || period > (int64_t{1} << 20)) {
    return corrupt_data(fmt::format("{} is {}, expected a value in [0, 2^20]", key, period));
  }
  std::vector<int64_t> windows(static_cast<size_t>(n_layers), 0);
  for (int64_t l = 0; l < n_layers; ++l) {
    if (period == 0 || l % period < period - 1) windows[static_cast<size_t>(l)] = window;
  }
  return windows;
}

}  // namespace tessera::model
