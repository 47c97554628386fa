#include "tessera/cluster/replica_router.h"

#include <fmt/format.h>

namespace tessera::cluster {

Result<RoutingPolicy> routing_policy_from_name(const std::string& name) {
  if (name == "prefix") return RoutingPolicy::kPrefix;
  if (name == "least-loaded") return RoutingPolicy::kLeastLoaded;
  if (name == "round-robin") return RoutingPolicy::kRoundRobin;
  return invalid_argument(
      fmt::format("unknown routing policy '{}': expected prefix, least-loaded or round-robin", name));
}

std::string_view routing_policy_name(RoutingPolicy policy) {
  switch (policy) {
    case RoutingPolicy::kPrefix: return "prefix";
    case RoutingPolicy::kLeastLoaded: return "least-loaded";
    case RoutingPolicy::kRoundRobin: return "round-robin";
  }
  return "round-robin";
}

ReplicaRouter::ReplicaRouter(RouterOptions options, int32_t models) : o_(options) {
  for (int32_t i = 0; i < models; ++i) {
    models_.push_back(PerModel{PrefixAffinity(o_.prefix_block_chars), 0, fleet::SloWindow(o_.slo_window)});
  }
}

RouteChoice ReplicaRouter::choose(int32_t model, std::string_view text,
                                  std::span<fleet::ReplicaSlotView> slots, int64_t now_ns) {
  PerModel& pm = models_[static_cast<size_t>(model)];
  RouteChoice out;
  const bool missing = pm.slo.missing(now_ns);
  out.slo_capped = missing;
  match_.assign(slots.size(), 0);
  if (o_.routing == RoutingPolicy::kPrefix) pm.affinity.match(text, match_);
  for (size_t k = 0; k < slots.size(); ++k) slots[k].affinity = match_[k];
  const fleet::RoutingRule rule{fleet::slo_replica_cap(o_.replica_cap, missing),
                                o_.routing == RoutingPolicy::kRoundRobin, fleet::ReplicaSpread::kSpread};
  out.replica = fleet::route_replica(slots, rule, &pm.rr_next);
  if (out.replica < 0) return out;
  out.affinity = match_[static_cast<size_t>(out.replica)] > 0;
  pm.affinity.record(text, out.replica);
  return out;
}

void ReplicaRouter::answered(int32_t model, int64_t at_ns, bool slo_met) {
  models_[static_cast<size_t>(model)].slo.record(at_ns, slo_met);
}

void ReplicaRouter::forget(int32_t model, int32_t replica) {
  models_[static_cast<size_t>(model)].affinity.forget(replica);
}

bool ReplicaRouter::slo_pressure(int32_t model, int64_t now_ns) const {
  return models_[static_cast<size_t>(model)].slo.missing(now_ns);
}

}  // namespace tessera::cluster
