// EventQueue: the simulator's one event loop order: a min-heap of events by (time, insertion
// sequence), so events at the same instant run in the order they were scheduled: deterministic
// tie-breaking, no dependence on heap internals.
// Thread-safety: none (one owner thread).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace tessera::sim {

struct SimEvent {
  int64_t t_ns = 0;
  uint64_t seq = 0;
  uint8_t kind = 0;
  int32_t a = 0;
  int64_t b = 0;
};

class EventQueue {
 public:
  void push(int64_t t_ns, uint8_t kind, int32_t a, int64_t b = 0) {
    heap_.push(SimEvent{t_ns, next_seq_++, kind, a, b});
  }
  bool empty() const { return heap_.empty(); }
  const SimEvent& top() const { return heap_.top(); }
  SimEvent pop() {
    SimEvent e = heap_.top();
    heap_.pop();
    return e;
  }
  size_t size() const { return heap_.size(); }
  uint64_t pushed() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const SimEvent& x, const SimEvent& y) const {
      return x.t_ns != y.t_ns ? x.t_ns > y.t_ns : x.seq > y.seq;
    }
  };
  std::priority_queue<SimEvent, std::vector<SimEvent>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace tessera::sim
