#include "tessera/base/clock.h"

#include <chrono>

namespace tessera {
namespace {
class RealClock final : public Clock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};
}  // namespace

Clock* real_clock() {
  static RealClock clock;
  return &clock;
}

}  // namespace tessera
