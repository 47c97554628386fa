#include "tessera/sim/workload.h"

#include <algorithm>
#include <cmath>

#include "tessera/base/check.h"

namespace tessera::sim {

Workload::~Workload() = default;

uint64_t stream_seed(uint64_t seed, uint64_t index) {
  const auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(seed ^ mix(index));
}

WorkloadSummary summarize(Workload& workload, double window_s) {
  TS_CHECK(window_s > 0.0);
  WorkloadSummary s;
  s.duration_s = workload.duration_s();
  const size_t n_models = workload.models().size();
  s.per_model.assign(n_models, 0);
  s.peak_rps.assign(n_models, 0.0);
  // Per model: the window being counted and its count so far; a window closes when the model's
  // next request falls in a later one, and once more at the end.
  std::vector<int64_t> window(n_models, -1);
  std::vector<int64_t> in_window(n_models, 0);
  const auto close = [&](size_t m) {
    s.peak_rps[m] = std::max(s.peak_rps[m], static_cast<double>(in_window[m]) / window_s);
  };
  const double window_ns = window_s * 1e9;
  SimRequest r;
  SimRequest prev;
  while (workload.next(r)) {
    TS_CHECK_MSG(r.model >= 0 && static_cast<size_t>(r.model) < n_models,
                 "request for a model the workload does not list");
    if (s.requests > 0 &&
        (r.t_ns < prev.t_ns || (r.t_ns == prev.t_ns && r.model < prev.model))) {
      s.ordered = false;
    }
    if (s.requests == 0) s.first_t_ns = r.t_ns;
    s.last_t_ns = r.t_ns;
    ++s.requests;
    s.input_tokens += r.input_tokens;
    s.output_tokens += r.output_tokens;
    s.prefix_tokens += r.prefix_tokens;
    const size_t m = static_cast<size_t>(r.model);
    ++s.per_model[m];
    const auto w = static_cast<int64_t>(std::floor(static_cast<double>(r.t_ns) / window_ns));
    if (w != window[m]) {
      close(m);
      window[m] = w;
      in_window[m] = 0;
    }
    ++in_window[m];
    prev = r;
  }
  for (size_t m = 0; m < n_models; ++m) close(m);
  return s;
}

namespace {

class InMemoryWorkload final : public Workload {
 public:
  InMemoryWorkload(std::vector<WorkloadModel> models, std::vector<SimRequest> requests,
                double duration_s, std::string description)
      : models_(std::move(models)),
        requests_(std::move(requests)),
        duration_s_(duration_s),
        description_(std::move(description)) {}

  const std::vector<WorkloadModel>& models() const override { return models_; }
  double duration_s() const override { return duration_s_; }
  std::string describe() const override { return description_; }
  bool next(SimRequest& out) override {
    if (pos_ == requests_.size()) return false;
    out = requests_[pos_++];
    return true;
  }

 private:
  std::vector<WorkloadModel> models_;
  std::vector<SimRequest> requests_;
  double duration_s_;
  std::string description_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_in_memory_workload(std::vector<WorkloadModel> models,
                                                  std::vector<SimRequest> requests,
                                                  double duration_s, std::string description) {
  return std::make_unique<InMemoryWorkload>(std::move(models), std::move(requests), duration_s,
                                            std::move(description));
}

}  // namespace tessera::sim
