#include "tessera/bench/sleeper.h"

#include <chrono>
#include <thread>

namespace tessera::bench {

void RealSleeper::sleep_until_ns(int64_t t_ns) {
  // The kernel wakes a sleeper up to ~100 us late; sleep to just short of the moment, then
  // yield-spin the rest.
  constexpr int64_t kSpinNs = 60'000;
  for (;;) {
    const int64_t left = t_ns - clock().now_ns();
    if (left <= 0) return;
    if (left > kSpinNs) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - kSpinNs));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace tessera::bench
