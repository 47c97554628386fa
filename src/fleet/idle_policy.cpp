#include "tessera/fleet/idle_policy.h"

#include <fmt/format.h>

#include <cmath>

#include "tessera/fleet/hybrid_histogram_policy.h"
#include "tessera/fleet/keep_alive_policy.h"

namespace tessera::fleet {

Result<std::shared_ptr<const IdlePolicy>> make_idle_policy(const IdlePolicySettings& settings) {
  if (settings.kind == "always-on") return std::shared_ptr<const IdlePolicy>(
      std::make_shared<FixedKeepAlivePolicy>(FixedKeepAlivePolicy::always_on()));
  if (!std::isfinite(settings.keep_alive_s) || settings.keep_alive_s < 0 ||
      settings.keep_alive_s > 1e9) {
    return invalid_argument(
        fmt::format("keep-alive {} s must be a number of seconds >= 0", settings.keep_alive_s));
  }
  const auto keep_alive_ns = static_cast<int64_t>(settings.keep_alive_s * 1e9);
  if (settings.kind == "fixed") {
    return std::shared_ptr<const IdlePolicy>(std::make_shared<FixedKeepAlivePolicy>(keep_alive_ns));
  }
  if (settings.kind == "adaptive") {
    HybridHistogramOptions o;
    o.fallback_keep_alive_ns = keep_alive_ns;
    return std::shared_ptr<const IdlePolicy>(std::make_shared<HybridHistogramPolicy>(o));
  }
  return invalid_argument(fmt::format(
      "idle policy '{}' is not one of fixed, adaptive, always-on", settings.kind));
}

}  // namespace tessera::fleet
