#include "tessera/sim/iteration_replica.h"

#include <algorithm>
#include <cmath>

#include "tessera/base/check.h"

namespace tessera::sim {

IterationReplica::IterationReplica(const CostModel& cost, const ReplicaLimits& limits,
                                   int64_t ttft_ns, int64_t tpot_ns)
    : cost_(cost), limits_(limits), ttft_ns_(ttft_ns), tpot_ns_(tpot_ns) {
  TS_CHECK_MSG(limits.max_running >= 1 && limits.max_batch_tokens >= 1 &&
                   limits.kv_capacity_tokens >= 1 && ttft_ns >= 0 && tpot_ns >= 0,
               "IterationReplica needs max_running, max_batch_tokens, kv_capacity_tokens >= 1");
}

void IterationReplica::add(uint64_t id, int64_t now_ns, int32_t input_tokens,
                           int32_t output_tokens, int32_t cached_tokens) {
  Request r{take_in(limits_, id, input_tokens, output_tokens, cached_tokens,
                    "IterationReplica::add")};
  r.added_ns = now_ns;
  waiting_.push_back(r);
}

engine::Admission IterationReplica::admission() const {
  const int64_t cap = engine::running_cap({limits_.max_running, limits_.max_batch_tokens});
  return replica_admission(limits_, cap, static_cast<int64_t>(running_.size()), kv_used_);
}

bool IterationReplica::has_work() const {
  if (!running_.empty()) return true;
  const engine::Admission room = admission();
  return !waiting_.empty() && room.has_room() && room.fits(waiting_.front().claim);
}

IterationReplica::Plan IterationReplica::plan() {
  TS_CHECK_MSG(!planned_, "IterationReplica::plan: a plan is pending");
  engine::Admission room = admission();
  while (!waiting_.empty() && room.has_room() && room.fits(waiting_.front().claim)) {
    room.take(waiting_.front().claim);
    kv_used_ += waiting_.front().claim;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  TS_CHECK_MSG(!running_.empty(), "IterationReplica::plan: nothing to run");
  Plan p;
  StepWork w;
  // The engine's composition: decode rows first, then the prompts, oldest first.
  std::vector<int64_t> pending;
  pending.reserve(running_.size());
  for (Request& r : running_) {
    r.rows = 0;
    pending.push_back(r.prefill_left > 0 ? r.prefill_left : 1);
  }
  for (const engine::BatchRow& row : engine::compose_rows(pending, limits_.max_batch_tokens)) {
    Request& r = running_[row.index];
    r.rows = static_cast<int32_t>(row.rows);
    if (r.prefill_left == 0) {
      ++w.decode_rows;
      w.context_tokens += static_cast<int64_t>(r.input) + r.generated;
      w.kv_read_tokens += static_cast<int64_t>(r.input) + r.generated;
    } else {
      const int64_t c = row.rows;
      w.prefill_tokens += r.rows;
      w.context_tokens += c * r.position + c * (c + 1) / 2;
      w.kv_read_tokens += r.position + c;
    }
  }
  for (const Request& r : running_) {
    if (r.rows == 0) continue;
    const int64_t due = r.last_token_ns < 0 ? r.added_ns + ttft_ns_ : r.last_token_ns + tpot_ns_;
    if (p.deadline_ns < 0 || due < p.deadline_ns) p.deadline_ns = due;
  }
  p.duration_ns = std::max<int64_t>(1, std::llround(cost_.step_s(w) * 1e9));
  p.prefill_tokens = w.prefill_tokens;
  p.decode_rows = w.decode_rows;
  planned_ = true;
  plan_ns_ = p.duration_ns;
  return p;
}

void IterationReplica::finish(int64_t end_ns, std::vector<ReplicaEvent>& out, int64_t ran_ns) {
  TS_CHECK_MSG(planned_, "IterationReplica::finish: no plan pending");
  planned_ = false;
  busy_ns_ += ran_ns >= 0 ? ran_ns : plan_ns_;
  ++iterations_;
  std::vector<uint64_t> finished;
  for (Request& r : running_) {
    if (r.rows == 0) continue;
    if (r.prefill_left > 0) {
      r.prefill_left -= r.rows;
      r.position += r.rows;
      if (r.prefill_left > 0) continue;
      out.push_back({r.id, ReplicaEvent::kFirstToken, end_ns});
    }
    ++r.generated;
    r.last_token_ns = end_ns;
    if (r.generated >= r.output) finished.push_back(r.id);
  }
  for (uint64_t id : finished) out.push_back({id, ReplicaEvent::kFinish, end_ns});
  auto done = [&](const Request& r) { return r.rows > 0 && r.prefill_left == 0 && r.generated >= r.output; };
  for (const Request& r : running_) {
    if (done(r)) kv_used_ -= r.claim;
  }
  running_.erase(std::remove_if(running_.begin(), running_.end(), done), running_.end());
  for (Request& r : running_) r.rows = 0;
}

std::vector<IterationReplica::BatchEntry> IterationReplica::batch() const {
  std::vector<BatchEntry> out;
  out.reserve(running_.size());
  for (const Request& r : running_) out.push_back({r.id, planned_ ? r.rows : 0});
  return out;
}

}  // namespace tessera::sim
