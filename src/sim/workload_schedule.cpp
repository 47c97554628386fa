#include "tessera/sim/workload_schedule.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace tessera::sim {

namespace {

bool parse_double(const std::string& s, double* out) {
  try {
    size_t n = 0;
    *out = std::stod(s, &n);
    return n == s.size() && std::isfinite(*out);
  } catch (...) {
    return false;
  }
}

bool parse_int(const std::string& s, int32_t* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<std::unique_ptr<Workload>> make_schedule_workload(const std::string& path,
                                                        double duration_s) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read the schedule " + path);
  std::vector<WorkloadModel> models;
  std::map<std::string, int32_t> index;
  std::vector<SimRequest> requests;
  std::string line;
  int64_t line_no = 0;
  double last = 0.0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || (line_no == 1 && line.rfind("model,", 0) == 0)) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    auto bad = [&](const std::string& why) {
      return Status(ErrorCode::kCorruptData,
                    fmt::format("{}:{}: {} (expected model,t_s,input_tokens,output_tokens)", path,
                                line_no, why));
    };
    if (f.size() != 4) return bad(fmt::format("{} columns", f.size()));
    double t = 0.0;
    SimRequest r;
    if (!parse_double(f[1], &t) || t < 0) return bad("t_s '" + f[1] + "' is not a time >= 0");
    if (t < last) return bad("times go backwards");
    if (!parse_int(f[2], &r.input_tokens) || r.input_tokens < 1 || !parse_int(f[3], &r.output_tokens) ||
        r.output_tokens < 1) {
      return bad("lengths must be integers >= 1");
    }
    last = t;
    auto [it, added] = index.try_emplace(f[0], static_cast<int32_t>(models.size()));
    if (added) {
      WorkloadModel m;
      m.name = f[0];
      m.source = path;
      models.push_back(m);
    }
    r.model = it->second;
    r.t_ns = static_cast<int64_t>(std::llround(t * 1e9));
    requests.push_back(r);
  }
  if (models.empty()) return Status(ErrorCode::kCorruptData, path + ": no requests");
  const double span = duration_s > 0 ? duration_s : last + 1.0;
  // Rates per model over the span (peaks by 10-minute windows, or the span when shorter).
  const double window = std::min(600.0, span);
  std::vector<std::map<int64_t, int64_t>> per_window(models.size());
  for (const SimRequest& r : requests) {
    ++per_window[static_cast<size_t>(r.model)][static_cast<int64_t>(r.t_ns * 1e-9 / window)];
    models[static_cast<size_t>(r.model)].expected_requests += 1;
  }
  for (size_t m = 0; m < models.size(); ++m) {
    models[m].mean_rps = models[m].expected_requests / span;
    for (const auto& [w, n] : per_window[m]) {
      models[m].peak_rps = std::max(models[m].peak_rps, static_cast<double>(n) / window);
    }
  }
  const std::string description =
      fmt::format("schedule {}: {} models, {} requests over {:.0f} s", path, models.size(),
                  requests.size(), span);
  return make_in_memory_workload(std::move(models), std::move(requests), span, description);
}

}  // namespace tessera::sim
