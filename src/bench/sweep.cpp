#include "tessera/bench/sweep.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace tessera::bench {

Result<std::vector<double>> parse_series(std::string_view text) {
  std::vector<double> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string part(text.substr(pos, end - pos));
    pos = end + 1;
    char* stop = nullptr;
    const double v = std::strtod(part.c_str(), &stop);
    if (part.empty() || *stop != '\0' || !(v > 0) || std::isnan(v)) {
      return invalid_argument("bad value '" + part + "' in '" + std::string(text) +
                              "': expected comma-separated numbers > 0, e.g. 1,2,4,8");
    }
    out.push_back(v);
  }
  return out;
}

int first_breaking_point(const std::vector<ServeMetrics>& points, double min_attainment) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].slo_attainment < min_attainment) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace tessera::bench
