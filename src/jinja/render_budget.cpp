#include "tessera/jinja/render_budget.h"

#include <string>

#include "tessera/jinja/error.h"

namespace tessera::jinja {
namespace {

thread_local RenderBudget* t_current = nullptr;

// Work units between two reads of the clock: about a millisecond of scanning.
constexpr size_t kWorkPerCheck = size_t{1} << 20;

std::string mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

RenderBudget::RenderBudget(size_t max_bytes, const Clock* clock, int64_t time_limit_ns,
                           const std::atomic<bool>* cancel)
    : max_bytes_(max_bytes),
      clock_(clock),
      time_limit_ns_(time_limit_ns),
      deadline_ns_(time_limit_ns > 0 ? clock->now_ns() + time_limit_ns : 0),
      cancel_(cancel) {}

RenderBudget::~RenderBudget() = default;

void RenderBudget::charge(size_t bytes) {
  if (bytes > max_bytes_ - live_) {
    throw Error(ErrorKind::kLimit, "the render's values would hold more than " + mib(max_bytes_) +
                                       " (its memory budget)");
  }
  live_ += bytes;
  if (live_ > peak_) peak_ = live_;
}

void RenderBudget::release(size_t bytes) noexcept { live_ -= bytes < live_ ? bytes : live_; }

void RenderBudget::check_room(size_t bytes) const {
  if (bytes > max_bytes_ - live_) {
    throw Error(ErrorKind::kLimit, "a value of " + mib(bytes) + " does not fit the render's " +
                                       mib(max_bytes_) + " memory budget (" + mib(live_) +
                                       " in use)");
  }
}

void RenderBudget::check_time() {
  pending_work_ = 0;
  if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
    throw Error(ErrorKind::kLimit, "the render was cancelled (the server is shutting down)");
  }
  if (deadline_ns_ > 0 && clock_->now_ns() > deadline_ns_) {
    throw Error(ErrorKind::kLimit, "the render ran past its time limit of " +
                                       std::to_string(time_limit_ns_ / 1'000'000) + " ms");
  }
}

void RenderBudget::work(size_t units) {
  pending_work_ += units;
  if (pending_work_ >= kWorkPerCheck) check_time();
}

RenderBudget* RenderBudget::current() { return t_current; }

RenderBudget::Use::Use(RenderBudget* budget) : previous_(t_current) { t_current = budget; }
RenderBudget::Use::~Use() { t_current = previous_; }

void check_value_size(size_t bytes) {
  if (bytes > kMaxValueBytes) {
    throw Error(ErrorKind::kLimit, "a value past " + std::to_string(kMaxValueBytes) + " bytes");
  }
  if (RenderBudget* b = t_current) b->check_room(bytes);
}

void note_work(size_t units) {
  if (RenderBudget* b = t_current) b->work(units);
}

}  // namespace tessera::jinja
