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

}  // namespace tessera::model
