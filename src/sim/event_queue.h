// EventQueue: the simulator's one event loop order: a min-heap of events by (time, insertion
// sequence), so events at the same instant run in the order they were scheduled: deterministic
// tie-breaking, no dependence on heap internals.
// Thread-safety: none (one owner thread).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::sim {

struct SimEvent {
  int64_t t_ns = 0;
  uint64_t seq = 0;  // insertion order: ties at one instant run first-scheduled first
  int32_t a = 0;
  int32_t b = 0;
  uint8_t kind = 0;
};

// A 4-ary heap in one array: half the depth of a binary heap and a node's children in two cache
// lines, which is what a queue of ~10^5 pending events (one per busy replica and per node with a
// timer) spends its time on.
class EventQueue {
 public:
  void push(int64_t t_ns, uint8_t kind, int32_t a, int32_t b = 0) {
    heap_.push_back(SimEvent{t_ns, next_seq_++, a, b, kind});
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  SimEvent pop() {
    SimEvent e = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    return e;
  }

 private:
  static bool before(const SimEvent& x, const SimEvent& y) {
    return x.t_ns != y.t_ns ? x.t_ns < y.t_ns : x.seq < y.seq;
  }
  void sift_up(size_t i) {
    const SimEvent e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void sift_down(size_t i) {
    const SimEvent e = heap_[i];
    const size_t n = heap_.size();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c) {
        if (before(heap_[c], heap_[best])) best = c;
      }
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  std::vector<SimEvent> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace tessera::sim
