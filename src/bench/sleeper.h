// Sleeper: how the harness's issuing thread waits for a scheduled moment on its Clock. The real
// one sleeps and then spins the last stretch (send times are what the benchmark controls, so
// they should be accurate to microseconds); the fake one moves a FakeClock forward, so tests run
// whole schedules in virtual time. Thread-safety: one issuing thread per Sleeper.
#pragma once

#include <cstdint>

#include "tessera/base/clock.h"

namespace tessera::bench {

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual const Clock& clock() const = 0;
  // Returns once clock().now_ns() >= t_ns (at once if that moment has passed).
  virtual void sleep_until_ns(int64_t t_ns) = 0;
};

// Sleeps on the real monotonic clock (real_clock()).
class RealSleeper final : public Sleeper {
 public:
  const Clock& clock() const override { return *real_clock(); }
  void sleep_until_ns(int64_t t_ns) override;
};

// Jumps `clock` forward to each requested moment. `clock` must outlive this.
class FakeSleeper final : public Sleeper {
 public:
  explicit FakeSleeper(FakeClock* clock) : clock_(clock) {}
  const Clock& clock() const override { return *clock_; }
  void sleep_until_ns(int64_t t_ns) override {
    if (clock_->now_ns() < t_ns) clock_->set_ns(t_ns);
  }

 private:
  FakeClock* clock_;
};

}  // namespace tessera::bench
