// Clock: the injected source of time (LevelDB's Env idea). Production code asks a Clock, never
// std::chrono::steady_clock directly, so tests and the simulator can run in virtual time.
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <cstdint>

namespace tessera {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds since an arbitrary epoch.
  virtual int64_t now_ns() const = 0;
  double now_s() const { return static_cast<double>(now_ns()) * 1e-9; }
};

// The process-wide real monotonic clock. Never null; lives for the whole program.
Clock* real_clock();

// A clock that only moves when told to; for tests and the simulator.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t now_ns() const override { return now_; }
  void advance_ns(int64_t dt) { now_ += dt; }
  void set_ns(int64_t t) { now_ = t; }

 private:
  int64_t now_;
};

}  // namespace tessera
