#include "tessera/engine/scheduler.h"

#include <algorithm>

#include "tessera/engine/batch_policy.h"

namespace tessera::engine {

std::unique_ptr<Sequence> Scheduler::remove(RequestId id, bool* was_waiting) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->id == id) {
      std::unique_ptr<Sequence> s = std::move(*it);
      waiting_.erase(it);
      *was_waiting = true;
      return s;
    }
  }
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if ((*it)->id == id) {
      std::unique_ptr<Sequence> s = std::move(*it);
      running_.erase(it);
      *was_waiting = false;
      return s;
    }
  }
  return nullptr;
}

void Scheduler::enqueue(std::unique_ptr<Sequence> s) {
  const int32_t p = s->request.priority;
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [p](const auto& w) { return w->request.priority < p; });
  waiting_.insert(it, std::move(s));
}

void Scheduler::admit(StepPlan& plan) {
  if (waiting_.empty()) return;
  // Blocks the running sequences still need for the tokens they hold (prompts are prefilled
  // chunk by chunk; their blocks are claimed at admission all the same). One block of growth is
  // kept per running sequence so admission does not force preemption.
  Admission room;
  room.cap = running_cap({opt_.max_running, opt_.max_batch_tokens});
  room.n_running = static_cast<int64_t>(running_.size());
  room.kv_reserve_per_running = 1;
  for (const auto& r : running_) {
    room.kv_claimed += kv_.blocks_to_grow(*r, static_cast<int64_t>(r->tokens.size()));
  }
  while (!waiting_.empty() && room.has_room() && kv_.has_free_slot()) {
    Sequence& s = *waiting_.front();
    kv_.take_cached_prefix(s);
    const int64_t needed = kv_.blocks_to_grow(s, static_cast<int64_t>(s.tokens.size()));
    room.kv_available = kv_.n_available();
    if (!room.fits(needed)) {
      kv_.drop_blocks(s);
      break;
    }
    room.take(needed);
    if (!s.admitted_before) plan.admitted.push_back(&s);
    kv_.assign_slot(s);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

void Scheduler::preempt_last(StepPlan& plan) {
  // The lowest priority; among those, the most recently admitted.
  auto victim = running_.end() - 1;
  for (auto it = running_.end(); it != running_.begin();) {
    --it;
    if ((*it)->request.priority < (*victim)->request.priority) victim = it;
  }
  std::unique_ptr<Sequence> s = std::move(*victim);
  running_.erase(victim);
  kv_.release(*s);
  plan.preempted.push_back(s.get());
  // Back ahead of the waiting sequences of its priority (it was admitted before them).
  const int32_t p = s->request.priority;
  auto at = std::find_if(waiting_.begin(), waiting_.end(),
                         [p](const auto& w) { return w->request.priority <= p; });
  waiting_.insert(at, std::move(s));
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  admit(plan);
  int64_t budget = 0;
  while (!running_.empty()) {
    plan.seqs.clear();
    std::vector<int64_t> pending;
    pending.reserve(running_.size());
    for (const auto& s : running_) pending.push_back(s->n_pending());
    for (const BatchRow& row : compose_rows(pending, opt_.max_batch_tokens, &budget)) {
      plan.seqs.push_back({running_[row.index].get(), row.rows, 0, row.rows == pending[row.index]});
    }
    int64_t need = 0;
    for (const ScheduledSeq& e : plan.seqs) {
      need += kv_.blocks_to_grow(*e.seq, e.seq->n_computed + e.n_rows);
    }
    if (need <= kv_.n_available() || running_.size() <= 1) break;
    preempt_last(plan);
  }
  for (const ScheduledSeq& e : plan.seqs) kv_.grow(*e.seq, e.seq->n_computed + e.n_rows);
  grant_drafts(plan, budget);
  return plan;
}

void Scheduler::grant_drafts(StepPlan& plan, int64_t budget) {
  int64_t n_decoding = 0;
  for (const ScheduledSeq& e : plan.seqs) n_decoding += e.n_rows == 1 && e.samples ? 1 : 0;
  // The rows under the cap, shared evenly: one stream drafts up to its spec_k, many draft less,
  // and past the cap nobody drafts (the step is then compute-bound: extra rows cost more than
  // the tokens they win).
  const int64_t share = n_decoding > 0 ? (opt_.spec_max_rows - n_decoding) / n_decoding : 0;
  if (share <= 0) return;
  for (ScheduledSeq& e : plan.seqs) {
    Sequence& s = *e.seq;
    if (budget <= 0) break;
    if (e.n_rows != 1 || !e.samples || s.spec_k <= 0) continue;
    const auto n_tokens = static_cast<int64_t>(s.tokens.size());
    // Draft rows sit at positions n_tokens .. n_tokens + k - 1 (< ctx_size); all k accepted plus
    // the token after them must not pass max_tokens.
    int64_t k = std::min<int64_t>({s.spec_k, share, budget, opt_.ctx_size - n_tokens,
                                   s.request.max_tokens - s.n_generated() - 1});
    while (k > 0 && kv_.blocks_to_grow(s, n_tokens + k) > kv_.n_available()) --k;
    if (k <= 0) continue;
    kv_.grow(s, n_tokens + k);
    e.n_draft_max = static_cast<int32_t>(k);
    budget -= k;
  }
}

void Scheduler::retire(const std::vector<Sequence*>& done) {
  if (done.empty()) return;
  std::erase_if(running_, [&](const std::unique_ptr<Sequence>& s) {
    return std::find(done.begin(), done.end(), s.get()) != done.end();
  });
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_all() {
  std::vector<std::unique_ptr<Sequence>> all;
  while (!running_.empty()) {
    all.push_back(std::move(running_.back()));
    running_.pop_back();
  }
  while (!waiting_.empty()) {
    all.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return all;
}

}  // namespace tessera::engine
