// RenderBudget: the wall time and the memory one render may spend, enforced from inside the
// interpreter. Memory is counted over every live value the render made: a string, list or dict
// charges its bytes when it is built and gives them back when its last reference goes (values
// share their storage, so a copy costs nothing), and each scope a loop or macro call opens is
// charged for the rest of the render. Time is a deadline on an injected Clock, checked at every
// loop iteration and call, every few expressions, and within long operations (searching,
// joining, comparing big strings); a cancel flag (the server's shutdown) is checked with it.
// Exceeding either throws jinja::Error(kLimit), which the render returns as kResourceExhausted.
// Values built outside a render (the caller's context, the template's literals) are not
// charged. Thread-safety: one budget per render, used by the thread that renders; current() is
// per thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tessera/base/clock.h"

namespace tessera::jinja {

// The largest single string or list an operation builds ("x" * 10**9 is refused, not allocated).
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;

class RenderBudget {
 public:
  // `max_bytes` of live values; `time_limit_ns` from now on `clock` (<= 0: no limit); `cancel`
  // (may be null) ends the render when set. `clock` (non-null) must outlive the budget.
  RenderBudget(size_t max_bytes, const Clock* clock, int64_t time_limit_ns,
               const std::atomic<bool>* cancel);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // Counts `bytes` as live; throws kLimit (counting nothing) when they do not fit.
  void charge(size_t bytes);
  // Gives back bytes charged earlier. Never throws.
  void release(size_t bytes) noexcept;
  // Throws kLimit when a value of `bytes` could not be charged now (checked before building it).
  void check_room(size_t bytes) const;
  // Throws kLimit past the deadline or once cancelled.
  void check_time();
  // Notes `units` of work (bytes scanned, items compared) and checks the time once enough
  // accumulated since the last check, so a long operation stops near the deadline.
  void work(size_t units);

  size_t live_bytes() const { return live_; }
  size_t peak_bytes() const { return peak_; }
  size_t max_bytes() const { return max_bytes_; }

  // The budget of the render running on this thread, or null outside one.
  static RenderBudget* current();

  // Makes `budget` this thread's current() until destroyed (then restores the previous one).
  class Use {
   public:
    explicit Use(RenderBudget* budget);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    RenderBudget* previous_;
  };

 private:
  size_t max_bytes_;
  const Clock* clock_;
  int64_t time_limit_ns_;
  int64_t deadline_ns_;
  const std::atomic<bool>* cancel_;
  size_t live_ = 0;
  size_t peak_ = 0;
  size_t pending_work_ = 0;
};

// Helpers over this thread's current budget; without one (no render running) they only apply
// kMaxValueBytes. check_value_size throws kLimit for a value past kMaxValueBytes or past what
// the budget has left; note_work calls work().
void check_value_size(size_t bytes);
void note_work(size_t units);

}  // namespace tessera::jinja
