#include "tessera/sim/replica_sim.h"

#include <algorithm>
#include <cmath>

#include "tessera/base/check.h"

namespace tessera::sim {

ReplicaSim::ReplicaSim(const CostModel& cost, const ReplicaLimits& limits)
    : cost_(cost), limits_(limits) {
  TS_CHECK_MSG(limits.max_running >= 1 && limits.max_batch_tokens >= 1 &&
                   limits.kv_capacity_tokens >= 1,
               "ReplicaLimits need max_running, max_batch_tokens and kv_capacity_tokens >= 1");
}

int64_t ReplicaSim::step_ns(int32_t prefill, int32_t decode_rows, int64_t context,
                            int64_t kv_read) const {
  const double s = cost_.step_s(StepWork{prefill, decode_rows, context, kv_read});
  return std::max<int64_t>(1, std::llround(s * 1e9));
}

uint32_t ReplicaSim::new_slot() {
  if (!free_slots_.empty()) {
    const uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void ReplicaSim::add(uint64_t id, int64_t now_ns, int32_t input_tokens, int32_t output_tokens,
                     int32_t cached_tokens) {
  const ReplicaRequest in =
      take_in(limits_, id, input_tokens, output_tokens, cached_tokens, "ReplicaSim::add");
  TS_CHECK_MSG(now_ns >= now_ns_, "ReplicaSim::add: time went backwards");
  run_until(now_ns);

  const uint32_t slot = new_slot();
  Request& r = slots_[slot];
  r = Request{in};
  waiting_.push_back(slot);

  if (!active_) {
    clock_ns_ = now_ns;  // idle: the first iteration starts now
    plan();
    return;
  }
  if (waiting_.size() != 1 || !can_admit_head()) return;  // admitted at a later boundary
  // Admissible at the first boundary >= now: cut the segment there (j identical iterations
  // done), unless that boundary is the segment's end anyway.
  const int64_t elapsed = now_ns - clock_ns_;
  const int64_t j = n_full_ > 0 ? (elapsed + step_ns_ - 1) / step_ns_ : (elapsed > 0 ? 1 : 0);
  if (j < n_full_ || (j == n_full_ && tail_chunk_ > 0)) cut_segment(j);
}

bool ReplicaSim::can_admit_head() const {
  if (waiting_.empty()) return false;
  // Capped by max_running alone (replica_sim.h).
  const engine::Admission room =
      replica_admission(limits_, limits_.max_running, n_running_, kv_used_);
  return room.has_room() && room.fits(slots_[waiting_.front()].claim);
}

void ReplicaSim::admit() {
  while (can_admit_head()) {
    const uint32_t slot = waiting_.front();
    waiting_.pop_front();
    Request& r = slots_[slot];
    r.seq = next_seq_++;
    kv_used_ += r.claim;
    ++n_running_;
    prefilling_.push_back(slot);
  }
}

void ReplicaSim::plan() {
  admit();
  active_ = n_running_ > 0;
  if (!active_) return;
  const int32_t d = static_cast<int32_t>(decoding_.size());
  const int64_t k_finish = decoding_.empty() ? kNever : decoding_.top().finish_at - decode_counter_;
  const int32_t budget = limits_.max_batch_tokens - d;
  chunk_ = 0;
  tail_chunk_ = 0;
  tail_step_ns_ = 0;
  completes_prefill_ = false;
  int64_t position = 0;
  if (!prefilling_.empty() && budget > 0) {
    const Request& p = slots_[prefilling_.front()];
    position = p.position;
    const int64_t left = p.prefill_left;
    const int64_t k_prefill = (left + budget - 1) / budget;
    if (k_finish < k_prefill) {
      n_full_ = k_finish;  // a decode row finishes first; every chunk is full
      chunk_ = budget;
    } else {
      completes_prefill_ = true;
      n_full_ = left / budget;
      chunk_ = n_full_ > 0 ? budget : 0;
      tail_chunk_ = static_cast<int32_t>(left % budget);
    }
  } else {
    TS_CHECK_MSG(k_finish != kNever, "ReplicaSim: requests running but nothing to do");
    n_full_ = k_finish;
  }
  // Context of the identical iterations grows by d + chunk^2 per iteration (KV read: d + chunk);
  // take the middle iteration's.
  const int64_t chunk = chunk_;
  const int64_t decode_ctx = decode_ctx_base_ + d * decode_counter_;
  const int64_t ctx0 = decode_ctx + chunk * position + chunk * (chunk + 1) / 2;
  const int64_t read0 = decode_ctx + (chunk > 0 ? position + chunk : 0);
  const int64_t half = n_full_ > 0 ? n_full_ - 1 : 0;
  step_ns_ = n_full_ > 0 ? step_ns(chunk_, d, ctx0 + (d + chunk * chunk) * half / 2,
                                   read0 + (d + chunk) * half / 2)
                         : 0;
  if (tail_chunk_ > 0) {
    const int64_t t = tail_chunk_;
    const int64_t pos = position + n_full_ * chunk;
    const int64_t dctx = decode_ctx_base_ + d * (decode_counter_ + n_full_);
    tail_step_ns_ = step_ns(tail_chunk_, d, dctx + t * pos + t * (t + 1) / 2, dctx + pos + t);
  }
  seg_end_ns_ = clock_ns_ + n_full_ * step_ns_ + tail_step_ns_;
}

void ReplicaSim::finish_segment() {
  const int64_t n_iter = n_full_ + (tail_chunk_ > 0 ? 1 : 0);
  busy_ns_ += seg_end_ns_ - clock_ns_;
  iterations_ += n_iter;
  decode_counter_ += n_iter;
  clock_ns_ = seg_end_ns_;
  const int64_t t = seg_end_ns_;
  auto release = [&](uint32_t slot) {
    kv_used_ -= slots_[slot].claim;
    --n_running_;
    free_slots_.push_back(slot);
  };
  if (chunk_ > 0 || tail_chunk_ > 0) {
    const uint32_t slot = prefilling_.front();
    Request& p = slots_[slot];
    const int64_t done = n_full_ * chunk_ + tail_chunk_;
    p.prefill_left -= static_cast<int32_t>(done);
    p.position += done;
    if (completes_prefill_) {
      TS_CHECK(p.prefill_left == 0);
      prefilling_.pop_front();
      ready_.push_back({p.id, ReplicaEvent::kFirstToken, t});
      if (p.output == 1) {
        ready_.push_back({p.id, ReplicaEvent::kFinish, t});
        release(slot);
      } else {
        p.finish_at = decode_counter_ + p.output - 1;
        decode_ctx_base_ += static_cast<int64_t>(p.input) + p.output - p.finish_at;
        decoding_.push({p.finish_at, p.seq, slot});
      }
    }
  }
  while (!decoding_.empty() && decoding_.top().finish_at == decode_counter_) {
    const DecodeKey k = decoding_.top();
    decoding_.pop();
    const Request& r = slots_[k.slot];
    decode_ctx_base_ -= static_cast<int64_t>(r.input) + r.output - r.finish_at;
    ready_.push_back({r.id, ReplicaEvent::kFinish, t});
    release(k.slot);
  }
  plan();
}

void ReplicaSim::cut_segment(int64_t j) {
  const int64_t elapsed = j * step_ns_;
  busy_ns_ += elapsed;
  iterations_ += j;
  decode_counter_ += j;
  clock_ns_ += elapsed;
  if (chunk_ > 0 && j > 0) {
    Request& p = slots_[prefilling_.front()];
    p.prefill_left -= static_cast<int32_t>(j * chunk_);
    p.position += j * chunk_;
  }
  plan();
}

void ReplicaSim::reprice(int64_t now_ns) {
  TS_CHECK_MSG(now_ns >= now_ns_, "ReplicaSim::reprice: time went backwards");
  run_until(now_ns);
  if (!active_ || n_full_ == 0) return;
  // The boundary that ends the iteration running at now_ns (an iteration starting exactly at
  // now_ns is re-priced too).
  const int64_t elapsed = now_ns - clock_ns_;
  const int64_t j = (elapsed + step_ns_ - 1) / step_ns_;
  if (j < n_full_ || (j == n_full_ && tail_chunk_ > 0)) cut_segment(j);
}

void ReplicaSim::run_until(int64_t t_ns) {
  while (active_ && seg_end_ns_ <= t_ns) finish_segment();
  now_ns_ = t_ns == kNever ? clock_ns_ : std::max(now_ns_, t_ns);
}

void ReplicaSim::advance(int64_t t_ns, std::vector<ReplicaEvent>& out) {
  TS_CHECK_MSG(t_ns >= now_ns_, "ReplicaSim::advance: time went backwards");
  run_until(t_ns);
  out.insert(out.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

double ReplicaSim::busy_s() const {
  const int64_t partial = active_ ? std::max<int64_t>(0, now_ns_ - clock_ns_) : 0;
  return static_cast<double>(busy_ns_ + partial) * 1e-9;
}

}  // namespace tessera::sim
