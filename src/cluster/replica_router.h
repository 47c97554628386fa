// ReplicaRouter: the cluster router's choice of a replica slot for one request, apart from the
// HTTP handling (cluster_controller.cpp). Per model it keeps the prefix affinity index (which slot
// was sent which prompt prefixes), the round-robin cursor and the SLO window (the model's recent
// answers), and applies the rules shared with the simulator (fleet/replica_routing.h): the cap
// halved while the model misses its TTFT SLO, round-robin or choose_replica.
// Thread-safety: none; the owner serializes calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/cluster/prefix_affinity.h"
#include "tessera/fleet/replica_routing.h"

namespace tessera::cluster {

enum class RoutingPolicy : uint8_t { kPrefix, kLeastLoaded, kRoundRobin };
Result<RoutingPolicy> routing_policy_from_name(const std::string& name);  // prefix|least-loaded|round-robin
std::string_view routing_policy_name(RoutingPolicy policy);

struct RouterOptions {
  RoutingPolicy routing = RoutingPolicy::kPrefix;
  int32_t replica_cap = 4;
  int32_t slo_window = 16;  // 0: the cap is never halved
  size_t prefix_block_chars = 64;
};

struct RouteChoice {
  int32_t replica = -1;     // index into the model's slots
  bool slo_capped = false;  // the cap was halved by SLO misses
  bool affinity = false;    // the replica holds part of the request's prefix
};

class ReplicaRouter {
 public:
  ReplicaRouter(RouterOptions options, int32_t models);

  // Picks one of model `model`'s slots (`slots`: their state and in-flight count; affinity is
  // filled in here) for a request whose prefix text is `text`, and records it as sent there.
  RouteChoice choose(int32_t model, std::string_view text, std::span<fleet::ReplicaSlotView> slots,
                     int64_t now_ns);
  // A replica answered at `at_ns`, its first byte within the TTFT SLO or not.
  void answered(int32_t model, int64_t at_ns, bool slo_met);
  // The replica went down: its cache is gone.
  void forget(int32_t model, int32_t replica);
  bool slo_pressure(int32_t model, int64_t now_ns) const;

 private:
  struct PerModel {
    PrefixAffinity affinity;
    size_t rr_next = 0;
    fleet::SloWindow slo;
  };
  RouterOptions o_;
  std::vector<PerModel> models_;
  std::vector<int32_t> match_;  // choose()'s scratch
};

}  // namespace tessera::cluster
