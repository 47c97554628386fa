#include "tessera/bench/metric_sums.h"

#include <string>

namespace tessera::bench {

namespace metric_sums {

// The value at the end of a sample line, or nullopt.
std::optional<double> sample_value(std::string_view line) {
  const size_t sp = line.find_last_of(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const std::string v(line.substr(sp + 1));
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used != v.size()) return std::nullopt;
    return d;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace metric_sums

std::optional<double> sum_metric_family(std::string_view text, std::string_view family) {
  double sum = 0;
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    if (!line.starts_with(family) || line.size() <= family.size() ||
        (line[family.size()] != '{' && line[family.size()] != ' ')) {
      continue;
    }
    if (const std::optional<double> v = metric_sums::sample_value(line)) {
      sum += *v;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return sum;
}

}  // namespace tessera::bench
