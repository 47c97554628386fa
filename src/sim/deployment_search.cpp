#include "tessera/sim/deployment_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/base/rng.h"
#include "tessera/bench/arrival.h"

namespace tessera::sim {

ReplicaLimits ServingConfig::limits() const {
  ReplicaLimits l;
  l.max_running = max_running;
  l.max_batch_tokens = max_batch_tokens;
  l.kv_capacity_tokens = cost ? std::max<int64_t>(1, cost->kv_capacity_tokens()) : 1;
  return l;
}

namespace {

struct ProbeResult {
  double ttft_p99_s = 0.0;
  double tpot_mean_s = 0.0;
  double in_flight = 0.0;  // mean requests in flight (sum of latencies / span)
};

ProbeResult probe_rate(const CostModel& cost, const ReplicaLimits& limits,
                       const LengthSampler& lengths, double rate, const ProbeOptions& probe) {
  ReplicaSim r(cost, limits);
  Rng rng(probe.seed);
  struct Req {
    int64_t arrive = 0, first = -1;
    int32_t out = 1;
  };
  std::vector<Req> reqs(static_cast<size_t>(probe.requests));
  std::vector<ReplicaEvent> events;
  double t = 0.0;
  std::vector<double> ttft;
  double tpot_sum = 0.0;
  int64_t tpot_n = 0;
  double latency_sum = 0.0;
  int64_t last_finish = 0;
  auto handle = [&] {
    for (const ReplicaEvent& e : events) {
      Req& q = reqs[e.id];
      if (e.kind == ReplicaEvent::kFirstToken) {
        q.first = e.t_ns;
        ttft.push_back(static_cast<double>(q.first - q.arrive) * 1e-9);
      } else {
        latency_sum += static_cast<double>(e.t_ns - q.arrive) * 1e-9;
        last_finish = std::max(last_finish, e.t_ns);
        if (q.out > 1) {
          tpot_sum += static_cast<double>(e.t_ns - q.first) * 1e-9 / (q.out - 1);
          ++tpot_n;
        }
      }
    }
    events.clear();
  };
  for (size_t i = 0; i < reqs.size(); ++i) {
    // Gamma gaps with mean 1/rate and CV probe.cv (shape 1/cv^2).
    const double shape = 1.0 / (probe.cv * probe.cv);
    t += (probe.cv == 1.0 ? bench::draw_exponential(rng) : bench::draw_gamma(shape, rng) / shape) / rate;
    const auto now = static_cast<int64_t>(t * 1e9);
    while (r.next_event_ns() <= now) {
      r.advance(r.next_event_ns(), events);
      handle();
    }
    const RequestLengths len = lengths.draw(rng);
    reqs[i].arrive = now;
    reqs[i].out = len.output_tokens;
    r.add(i, now, len.input_tokens, len.output_tokens);
  }
  while (r.next_event_ns() != ReplicaSim::kNever) {
    r.advance(r.next_event_ns(), events);
    handle();
  }
  ProbeResult p;
  if (!ttft.empty()) {
    const size_t k = std::min(ttft.size() - 1, static_cast<size_t>(std::ceil(0.99 * ttft.size())) - 1);
    std::nth_element(ttft.begin(), ttft.begin() + static_cast<std::ptrdiff_t>(k), ttft.end());
    p.ttft_p99_s = ttft[k];
  }
  p.tpot_mean_s = tpot_n > 0 ? tpot_sum / static_cast<double>(tpot_n) : 0.0;
  p.in_flight = last_finish > 0 ? latency_sum / (static_cast<double>(last_finish) * 1e-9) : 0.0;
  return p;
}

bool meets(const ProbeResult& p, const SloTargets& slo) {
  return p.ttft_p99_s * 1e9 <= static_cast<double>(slo.ttft_ns) &&
         p.tpot_mean_s * 1e9 <= static_cast<double>(slo.tpot_ns);
}

}  // namespace

double replica_capacity_rps(const CostModel& cost, const ReplicaLimits& limits,
                            const LengthSampler& lengths, const SloTargets& slo,
                            const ProbeOptions& probe, double* in_flight) {
  // A rate so low that requests never overlap: if that misses, nothing meets the SLO.
  double lo = 1e-3;
  if (!meets(probe_rate(cost, limits, lengths, lo, probe), slo)) return 0.0;
  double hi = 1.0;
  while (meets(probe_rate(cost, limits, lengths, hi, probe), slo) && hi < 1e6) {
    lo = hi;
    hi *= 2.0;
  }
  for (int i = 0; i < probe.bisection_steps; ++i) {
    const double mid = std::sqrt(lo * hi);
    if (meets(probe_rate(cost, limits, lengths, mid, probe), slo)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (in_flight != nullptr) {
    *in_flight = std::max(1.0, probe_rate(cost, limits, lengths, lo, probe).in_flight);
  }
  return lo;
}

Result<std::vector<ServingConfig>> search_configs(const ModelShape& shape,
                                                  const AcceleratorSpec& accelerator,
                                                  const LengthSampler& lengths,
                                                  const SloTargets& slo,
                                                  const std::vector<int32_t>& tps,
                                                  const std::vector<int32_t>& batch_limits,
                                                  const ProbeOptions& probe) {
  std::vector<ServingConfig> out;
  for (int32_t tp : tps) {
    RooflineOptions ro;
    ro.tp = tp;
    auto cost = make_roofline_cost(shape, accelerator, ro);
    if (!cost.is_ok()) continue;  // does not fit at this tp
    std::shared_ptr<const CostModel> c(std::move(cost).value());
    for (int32_t b : batch_limits) {
      ServingConfig sc;
      sc.tp = tp;
      sc.max_running = b;
      sc.cost = c;
      sc.capacity_rps = replica_capacity_rps(*c, sc.limits(), lengths, slo, probe, &sc.target_in_flight);
      if (sc.capacity_rps > 0) out.push_back(std::move(sc));
    }
  }
  if (out.empty()) {
    return invalid_argument(fmt::format("{} on {}: no tensor-parallel degree and batch limit meets "
                                        "the SLO (TTFT p99 {:.2f} s, TPOT {:.0f} ms)",
                                        shape.name, accelerator.name, slo.ttft_ns * 1e-9,
                                        slo.tpot_ns * 1e-6));
  }
  std::stable_sort(out.begin(), out.end(), [](const ServingConfig& a, const ServingConfig& b) {
    return a.tp / a.capacity_rps < b.tp / b.capacity_rps;
  });
  return out;
}

Result<ServingConfig> naive_config(const ModelShape& shape, const AcceleratorSpec& accelerator,
                                   const LengthSampler& lengths, const SloTargets& slo,
                                   const ProbeOptions& probe) {
  for (int32_t tp : {1, 2, 4, 8, 16}) {
    RooflineOptions ro;
    ro.tp = tp;
    auto cost = make_roofline_cost(shape, accelerator, ro);
    if (!cost.is_ok()) continue;
    ServingConfig sc;
    sc.tp = tp;
    sc.max_running = 256;
    sc.cost = std::shared_ptr<const CostModel>(std::move(cost).value());
    sc.capacity_rps =
        replica_capacity_rps(*sc.cost, sc.limits(), lengths, slo, probe, &sc.target_in_flight);
    if (sc.capacity_rps <= 0) {
      return invalid_argument(fmt::format("{} on {} at tp {}: a lone request misses the SLO",
                                          shape.name, accelerator.name, tp));
    }
    return sc;
  }
  return invalid_argument(fmt::format("{} does not fit 16 {} accelerators", shape.name,
                                      accelerator.name));
}

int32_t replicas_for(const ServingConfig& config, double peak_rps) {
  if (config.capacity_rps <= 0) return 1;
  return std::max<int32_t>(1, static_cast<int32_t>(std::ceil(peak_rps / config.capacity_rps - 1e-9)));
}

Deployment cheapest_deployment(const std::vector<ServingConfig>& candidates, double peak_rps) {
  Deployment best;
  bool have = false;
  for (const ServingConfig& c : candidates) {
    Deployment d{c, replicas_for(c, peak_rps)};
    if (!have || d.accelerators() < best.accelerators() ||
        (d.accelerators() == best.accelerators() && d.replicas < best.replicas)) {
      best = d;
      have = true;
    }
  }
  return best;
}

}  // namespace tessera::sim
