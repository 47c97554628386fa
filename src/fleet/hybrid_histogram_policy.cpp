#include "tessera/fleet/hybrid_histogram_policy.h"

#include <algorithm>
#include <optional>
#include <cmath>

#include <fmt/format.h>

#include "tessera/base/check.h"

namespace tessera::fleet {

HybridHistogramPolicy::HybridHistogramPolicy(const HybridHistogramOptions& options)
    : options_(options) {
  TS_CHECK(options_.head_percentile > 0.0 && options_.head_percentile <= options_.tail_percentile &&
           options_.tail_percentile <= 1.0);
  TS_CHECK(options_.margin >= 0.0 && options_.margin < 1.0);
  TS_CHECK(options_.fallback_keep_alive_ns >= 0);
}

HybridWindows HybridHistogramPolicy::windows(const ModelActivity* activity) const {
  HybridWindows w;
  w.keep_alive_ns = options_.fallback_keep_alive_ns;
  if (activity == nullptr) {
    w.reason = "no history";
    return w;
  }
  const IdleTimeHistogram& h = activity->idle;
  if (h.total() < options_.min_samples) {
    w.reason = fmt::format("{} idle times < {}", h.total(), options_.min_samples);
    return w;
  }
  const double oob = static_cast<double>(h.out_of_bounds()) / static_cast<double>(h.total());
  if (oob > options_.max_out_of_bounds_fraction) {
    w.reason = fmt::format("{:.0f}% of idle times beyond the histogram", oob * 100.0);
    return w;
  }
  const double cv = h.bin_count_cv();
  if (cv < options_.cv_threshold) {
    w.reason = fmt::format("bin-count CV {:.2f} < {:.2f}", cv, options_.cv_threshold);
    return w;
  }
  const int32_t head = h.percentile_bin(options_.head_percentile);
  const int32_t tail = h.percentile_bin(options_.tail_percentile);
  const double width = static_cast<double>(h.bin_width_ns());
  w.representative = true;
  // Rounded down / up to whole nanoseconds, ignoring the last bits of floating-point error
  // (13 s x 1.1 must be 14.3 s, not 14.3 s + 1 ns).
  constexpr double kSlackNs = 1e-3;
  w.prewarm_ns =
      static_cast<int64_t>(std::floor(head * width * (1.0 - options_.margin) + kSlackNs));
  w.keep_alive_ns =
      static_cast<int64_t>(std::ceil((tail + 1) * width * (1.0 + options_.margin) - kSlackNs));
  w.reason = fmt::format("histogram: head bin {}, tail bin {}, CV {:.2f}", head, tail, cv);
  return w;
}

std::optional<HybridHistogramPolicy::IdleModel> HybridHistogramPolicy::idle_model(
    const ModelView& m, const ActivityTracker& activity) const {
  if (m.pinned) return std::nullopt;
  const bool active = m.state == ModelState::kActive;
  const bool away = m.state == ModelState::kSuspended || m.state == ModelState::kEvicted;
  if (!active && !away) return std::nullopt;
  const ModelActivity* a = activity_of(m, activity);
  if (a != nullptr && a->busy()) return std::nullopt;
  // The idle period starts at the last completion (not at a pre-warm), else at the state entry.
  const int64_t start = (a != nullptr && a->idle_since_ns >= 0) ? a->idle_since_ns
                                                                 : m.state_since_ns;
  return IdleModel{active, start, windows(a)};
}

std::vector<Decision> HybridHistogramPolicy::decide(const FleetView& view,
                                                    const ActivityTracker& activity) const {
  std::vector<Decision> out;
  for (const ModelView& m : view.models) {
    const std::optional<IdleModel> im = idle_model(m, activity);
    if (!im) continue;
    const HybridWindows& w = im->windows;
    const int64_t idle = std::max<int64_t>(0, view.now_ns - im->start_ns);
    if (im->active) {
      if (idle >= w.keep_alive_ns) {
        out.push_back({Action::kSuspend, m.name,
                       fmt::format("idle {:.3f} s >= keep-alive {:.3f} s ({})", idle * 1e-9,
                                   w.keep_alive_ns * 1e-9, w.reason)});
      } else if (w.prewarm_ns > 0 && idle < w.prewarm_ns) {
        out.push_back({Action::kSuspend, m.name,
                       fmt::format("idle {:.3f} s, next request expected after {:.3f} s ({})",
                                   idle * 1e-9, w.prewarm_ns * 1e-9, w.reason)});
      }
    } else if (w.prewarm_ns > 0 && idle >= w.prewarm_ns && idle < w.keep_alive_ns) {
      out.push_back({Action::kPrewarm, m.name,
                     fmt::format("idle {:.3f} s in pre-warm window [{:.3f}, {:.3f}) s ({})",
                                 idle * 1e-9, w.prewarm_ns * 1e-9, w.keep_alive_ns * 1e-9,
                                 w.reason)});
    }
  }
  return out;
}

int64_t HybridHistogramPolicy::next_decision_ns(const FleetView& view,
                                                const ActivityTracker& activity) const {
  int64_t next = kNever;
  for (const ModelView& m : view.models) {
    const std::optional<IdleModel> im = idle_model(m, activity);
    if (!im) continue;
    const HybridWindows& w = im->windows;
    const int64_t start = im->start_ns;
    int64_t at = kNever;
    if (im->active) {
      at = (w.prewarm_ns > 0 && view.now_ns - start < w.prewarm_ns) ? view.now_ns
                                                                    : start + w.keep_alive_ns;
    } else if (w.prewarm_ns > 0 && view.now_ns - start < w.prewarm_ns) {
      at = start + w.prewarm_ns;
    }
    next = std::min(next, std::max(at, view.now_ns));
  }
  return next;
}

}  // namespace tessera::fleet
