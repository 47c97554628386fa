// The scheduler and KV manager without a model: admission, token and KV budgets, preemption,
// draft allowances and their lookahead blocks, rollback of rejected drafts, and that only
// verified tokens are published to the prefix cache.
#include "tessera/engine/scheduler.h"

#include <gtest/gtest.h>

#include "tessera/engine/kv_manager.h"

namespace tessera::engine {
namespace scheduler_test {

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.architecture = "llama";
  c.n_vocab = 512;
  c.dim = 8;
  c.n_layers = 1;
  c.n_heads = 1;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.ffn_dim = 16;
  c.context_length = 64;
  return c;
}

struct Fixture {
  explicit Fixture(int32_t n_blocks, int32_t max_running = 4, int32_t budget = 512,
                   int32_t spec_max_rows = 1000, int64_t ctx = 64) {
    opt.max_running = max_running;
    opt.block_size = 4;
    opt.n_blocks = n_blocks;
    opt.ctx_size = ctx;
    opt.max_batch_tokens = budget;
    const KvPoolSize size = size_kv_pool(tiny_config(), opt).value();
    kv = std::make_unique<KvManager>(KvManager::create(tiny_config(), opt, size).value());
    SchedulerOptions so;
    so.max_running = max_running;
    so.max_batch_tokens = budget;
    so.ctx_size = ctx;
    so.spec_max_rows = spec_max_rows;
    sched = std::make_unique<Scheduler>(so, *kv);
  }
  Sequence* add(RequestId id, int n_prompt, int32_t spec_k = 0, int32_t max_tokens = 100,
               int32_t priority = 0) {
    Request r;
    r.priority = priority;
    for (int i = 0; i < n_prompt; ++i) r.prompt.push_back(10 + static_cast<int32_t>(id) * 7 + i);
    r.max_tokens = max_tokens;
    auto s = std::make_unique<Sequence>(id, std::move(r), nullptr, 0);
    s->spec_k = spec_k;
    Sequence* p = s.get();
    sched->enqueue(std::move(s));
    return p;
  }
  // What the engine does after a step: rows ran; `accepted` drafts and one new token appended.
  void complete(const ScheduledSeq& e, int32_t accepted) {
    Sequence& s = *e.seq;
    s.n_computed += e.n_rows;
    if (!e.samples) return;
    for (int32_t j = 0; j <= accepted; ++j) {
      if (j > 0) ++s.n_computed;
      s.tokens.push_back(300 + j);
    }
    kv->publish_verified(s);
    kv->rollback(s);
  }
  // Schedules and completes steps (no drafts accepted) until one preempts, for up to 20 steps;
  // returns that step's plan (its `preempted` empty if none did).
  StepPlan decode_until_preemption() {
    StepPlan p;
    for (int step = 0; step < 20 && p.preempted.empty(); ++step) {
      p = sched->schedule();
      for (const ScheduledSeq& e : p.seqs) complete(e, 0);
    }
    return p;
  }
  // Releases and retires the running sequences that reached max_tokens; returns their ids.
  std::vector<RequestId> finish_done() {
    std::vector<Sequence*> done;
    std::vector<RequestId> ids;
    for (const auto& s : sched->running()) {
      if (s->n_generated() >= s->request.max_tokens) {
        kv->release(*s);
        done.push_back(s.get());
        ids.push_back(s->id);
      }
    }
    sched->retire(done);
    return ids;
  }
  EngineOptions opt;
  std::unique_ptr<KvManager> kv;
  std::unique_ptr<Scheduler> sched;
};

TEST(KvPoolSize, OneRuleForEngineAndFleet) {
  EngineOptions o;
  o.max_running = 3;
  o.block_size = 16;
  o.ctx_size = 100;
  const KvPoolSize s = size_kv_pool(tiny_config(), o).value();
  EXPECT_EQ(s.blocks_per_seq, 7);
  EXPECT_EQ(s.n_blocks, 21);
  EXPECT_EQ(s.block_bytes, 2 * 1 * 16 * 8 * 2);  // K and V, 1 layer, 16 positions, 8 f16
  EXPECT_EQ(s.bytes(), 21 * s.block_bytes);
  o.n_blocks = 5;
  EXPECT_EQ(size_kv_pool(tiny_config(), o).status().code(), ErrorCode::kInvalidArgument);
  o.n_blocks = 0;
  o.ctx_size = 0;  // the model's context
  EXPECT_EQ(size_kv_pool(tiny_config(), o).value().ctx_size, 64);
}

TEST(KvPoolSize, AMemoryBudgetCapsThePoolAndMustHoldOneSequence) {
  EngineOptions o;
  o.max_running = 256;
  o.block_size = 16;
  o.ctx_size = 64;  // 4 blocks of 512 bytes per sequence; 1024 blocks for 256 of them
  o.kv_memory_bytes = 100 * 512 + 100;
  KvPoolSize s = size_kv_pool(tiny_config(), o).value();
  EXPECT_EQ(s.block_bytes, 512);
  EXPECT_EQ(s.n_blocks, 100);
  EXPECT_LE(s.bytes(), o.kv_memory_bytes);
  o.kv_memory_bytes = int64_t{1} << 40;  // more than 256 full contexts need: no more is taken
  EXPECT_EQ(size_kv_pool(tiny_config(), o).value().n_blocks, 1024);
  o.kv_memory_bytes = 3 * 512;  // 48 positions < 64
  const Status st = size_kv_pool(tiny_config(), o).status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("fewer than one sequence of 64"), std::string::npos) << st.message();
  o.kv_memory_bytes = 3 * 512;
  o.n_blocks = 8;  // explicit blocks win over the budget
  EXPECT_EQ(size_kv_pool(tiny_config(), o).value().n_blocks, 8);
}

TEST(KvPoolSize, TheDefaultBudgetIsAShareOfWhatTheWeightsLeave) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_EQ(kv_memory_share(10 * kGiB, 2 * kGiB, 0.5), 4 * kGiB);
  EXPECT_EQ(kv_memory_share(10 * kGiB, 0, 0.25), 10 * kGiB / 4);
  EXPECT_EQ(kv_memory_share(kGiB, 2 * kGiB, 0.5), 0);  // the weights do not fit: nothing
  EXPECT_GT(available_memory_bytes(), 0);               // /proc/meminfo on Linux
}

TEST(Scheduler, AdmitsWhileTheKvPoolHoldsPromptsNotUpToASlotCount) {
  Fixture f(/*n_blocks=*/40, /*max_running=*/256);  // blocks of 4 positions
  for (RequestId id = 1; id <= 30; ++id) f.add(id, 7);  // 2 blocks each
  StepPlan p = f.sched->schedule();
  // With k running, the next is admitted while its 2 blocks plus one block of growth per running
  // sequence fit in the 40 - 2k left: 2 + k <= 40 - 2k, so k = 0..12 are admitted: 13.
  EXPECT_EQ(p.admitted.size(), 13u);
  EXPECT_EQ(p.seqs.size(), 13u);
  EXPECT_EQ(f.sched->waiting().size(), 17u);
  EXPECT_GE(f.kv->n_available(), static_cast<int32_t>(f.sched->running().size()) - 1);
  EXPECT_TRUE(p.preempted.empty());
  for (size_t i = 0; i < p.admitted.size(); ++i) EXPECT_EQ(p.admitted[i]->id, i + 1);  // FCFS
}

TEST(Scheduler, RunningSequencesNeverOutnumberTheTokenBudget) {
  Fixture f(256, 256, /*budget=*/8);
  for (RequestId id = 1; id <= 20; ++id) f.add(id, 1, 0, /*max_tokens=*/3);
  int64_t finished = 0;
  for (int step = 0; step < 100 && finished < 20; ++step) {
    StepPlan p = f.sched->schedule();
    EXPECT_LE(f.sched->running().size(), 8u);
    EXPECT_EQ(p.seqs.size(), f.sched->running().size());  // every running one gets its row
    int64_t rows = 0;
    for (const ScheduledSeq& e : p.seqs) rows += e.n_rows;
    EXPECT_LE(rows, 8);
    for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
    finished += static_cast<int64_t>(f.finish_done().size());
  }
  EXPECT_EQ(finished, 20);
}

TEST(Scheduler, FirstComeFirstServedWithinPriority) {
  Fixture f(64, 2);
  f.add(1, 3, 0, 100, /*priority=*/0);
  f.add(2, 3, 0, 100, 5);
  f.add(3, 3, 0, 100, 0);
  f.add(4, 3, 0, 100, 5);
  f.add(5, 3, 0, 100, -1);
  StepPlan p = f.sched->schedule();
  ASSERT_EQ(p.admitted.size(), 2u);
  EXPECT_EQ(p.admitted[0]->id, 2u);
  EXPECT_EQ(p.admitted[1]->id, 4u);
  std::vector<RequestId> order;
  for (const auto& w : f.sched->waiting()) order.push_back(w->id);
  EXPECT_EQ(order, (std::vector<RequestId>{1, 3, 5}));
}

TEST(Scheduler, PreemptsTheLowestPriorityFirst) {
  Fixture f(16, 4);  // as PreemptsTheMostRecentlyAdmitted..., but the older one matters less
  Sequence* a = f.add(1, 30, 0, 100, /*priority=*/-1);
  Sequence* b = f.add(2, 25, 0, 100, 0);
  StepPlan p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
  p = f.decode_until_preemption();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], a);
  EXPECT_EQ(f.sched->running().front().get(), b);
  EXPECT_EQ(f.sched->waiting().front().get(), a);
}

TEST(Scheduler, EverySequenceFinishesUnderKvPressureInArrivalOrder) {
  // 24 blocks of 4 = 96 positions; twelve sequences of 10 + 20 positions want 96 blocks.
  Fixture f(24, 256, 16);
  for (RequestId id = 1; id <= 12; ++id) f.add(id, 10, 0, /*max_tokens=*/20);
  std::vector<RequestId> finished;
  int64_t preemptions = 0;
  for (int step = 0; step < 2000 && finished.size() < 12; ++step) {
    StepPlan p = f.sched->schedule();
    preemptions += static_cast<int64_t>(p.preempted.size());
    ASSERT_FALSE(p.seqs.empty()) << "step " << step << " ran nothing";
    for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
    for (RequestId id : f.finish_done()) finished.push_back(id);
  }
  ASSERT_EQ(finished.size(), 12u);
  for (size_t i = 1; i < finished.size(); ++i) EXPECT_LT(finished[i - 1], finished[i]);
  EXPECT_GT(preemptions, 0);  // the pool was short: some were preempted, none starved
  EXPECT_EQ(f.kv->n_available(), 24);
}

TEST(Scheduler, DecodeRowsFirstThenPrefillChunksUnderTheTokenBudget) {
  Fixture f(64, 4, 10);
  Sequence* a = f.add(1, 3);
  StepPlan p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].n_rows, 3);
  EXPECT_EQ(p.admitted.size(), 1u);
  f.complete(p.seqs[0], 0);
  Sequence* b = f.add(2, 20);
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].seq, a);  // decode first
  EXPECT_EQ(p.seqs[0].n_rows, 1);
  EXPECT_EQ(p.seqs[1].seq, b);
  EXPECT_EQ(p.seqs[1].n_rows, 9);  // the rest of the budget
  EXPECT_FALSE(p.seqs[1].samples);
}

TEST(Scheduler, AdmitsInArrivalOrderUpToTheSlotLimit) {
  Fixture f(64, 2);
  for (RequestId id = 1; id <= 4; ++id) f.add(id, 3);
  StepPlan p = f.sched->schedule();
  ASSERT_EQ(p.admitted.size(), 2u);
  EXPECT_EQ(p.admitted[0]->id, 1u);
  EXPECT_EQ(p.admitted[1]->id, 2u);
  EXPECT_EQ(f.sched->waiting().size(), 2u);
  bool was_waiting = false;
  auto s = f.sched->remove(1, &was_waiting);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(was_waiting);
  f.kv->release(*s);
  p = f.sched->schedule();
  ASSERT_EQ(p.admitted.size(), 1u);
  EXPECT_EQ(p.admitted[0]->id, 3u);  // FCFS: the oldest waiting one
}

TEST(Scheduler, PreemptsTheMostRecentlyAdmittedWhenThePoolRunsDry) {
  Fixture f(16, 4);  // 16 blocks of 4 = 64 positions: one full context
  Sequence* a = f.add(1, 30);
  Sequence* b = f.add(2, 25);
  StepPlan p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);  // 8 + 7 blocks
  for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
  // Each decodes until a needs a block the pool no longer has.
  p = f.decode_until_preemption();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], b);
  EXPECT_EQ(b->n_computed, 0);
  EXPECT_TRUE(b->blocks.empty());
  EXPECT_EQ(b->slot, -1);
  EXPECT_EQ(f.sched->waiting().front().get(), b);
  EXPECT_EQ(f.sched->running().front().get(), a);
}

TEST(Scheduler, GrantsDraftsFromLeftoverBudgetAndBlocksOnly) {
  Fixture f(64, 4, 6);
  Sequence* a = f.add(1, 3, /*spec_k=*/4);
  StepPlan p = f.sched->schedule();
  EXPECT_EQ(p.seqs[0].n_draft_max, 0);  // prefill: no drafts
  f.complete(p.seqs[0], 0);
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].n_draft_max, 4);
  // Lookahead blocks for the drafts are held: positions 0..3 + 4 drafts = 8 positions = 2 blocks.
  EXPECT_EQ(a->blocks.size(), 2u);
  // Two drafts accepted: 4 + 1 + 2 verified tokens; the lookahead block past them is released.
  f.complete(p.seqs[0], 2);
  EXPECT_EQ(a->n_computed, 6);
  EXPECT_EQ(a->tokens.size(), 7u);
  EXPECT_EQ(a->blocks.size(), 2u);
  // Budget: a second sequence prefilling takes the budget first, no drafts left for a.
  Fixture g(64, 4, 6);
  Sequence* x = g.add(1, 2, 4);
  p = g.sched->schedule();
  g.complete(p.seqs[0], 0);
  g.add(2, 10);
  p = g.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].seq, x);
  EXPECT_EQ(p.seqs[0].n_draft_max, 0);
  EXPECT_EQ(p.seqs[1].n_rows, 5);
}

TEST(Scheduler, DraftsNeverCausePreemptionAndShrinkToTheBlocksLeft) {
  Fixture f(3, 1, 512, 8, /*ctx=*/12);  // 3 blocks of 4: one 12-position sequence
  Sequence* a = f.add(1, 3, 8, 8);
  StepPlan p = f.sched->schedule();
  f.complete(p.seqs[0], 0);
  p = f.sched->schedule();
  // 4 tokens; drafts limited by max_tokens (8 - 1 generated - 1 = 6), by the context and the
  // blocks (12 - 4 = 8): 6, in two lookahead blocks.
  EXPECT_EQ(p.seqs[0].n_draft_max, 6);
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_EQ(a->blocks.size(), 3u);
  f.complete(p.seqs[0], 0);
  EXPECT_EQ(a->n_computed, 4);
  EXPECT_EQ(a->blocks.size(), 1u);  // both lookahead blocks released
}

TEST(Scheduler, DraftRowsAreSharedUnderTheRowCapAndStopPastIt) {
  Fixture f(128, 8, 512, /*spec_max_rows=*/5);
  for (RequestId id = 1; id <= 3; ++id) f.add(id, 2, 4);
  StepPlan p = f.sched->schedule();
  for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 3u);
  for (const ScheduledSeq& e : p.seqs) EXPECT_EQ(e.n_draft_max, 0);
  // Sequence 3 leaves after the step: complete the others first (its entry dangles once removed).
  for (const ScheduledSeq& e : p.seqs) {
    if (e.seq->id != 3) f.complete(e, 0);
  }
  bool was_waiting = false;
  f.kv->release(*f.sched->remove(3, &was_waiting));
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  for (const ScheduledSeq& e : p.seqs) EXPECT_EQ(e.n_draft_max, 1);  // (5 - 2) / 2 each
  for (const ScheduledSeq& e : p.seqs) f.complete(e, 0);
  f.kv->release(*f.sched->remove(2, &was_waiting));
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].n_draft_max, 4);  // spec_k 4 < 5 - 1
}

TEST(KvManager, PublishesOnlyVerifiedBlocks) {
  Fixture f(64, 1);
  Sequence* a = f.add(1, 3, 8);
  StepPlan p = f.sched->schedule();
  f.complete(p.seqs[0], 0);  // tokens: 3 prompt + 1; n_computed 3
  p = f.sched->schedule();
  ASSERT_EQ(p.seqs[0].n_draft_max, 8);
  // Nothing accepted: the draft rows ran at positions 4..11, but n_computed is 4, so no block is
  // published, although two blocks' positions were written.
  f.complete(p.seqs[0], 0);
  EXPECT_EQ(a->n_computed, 4);
  EXPECT_EQ(a->block_hashes.size(), 1u);  // positions 0..3: verified
  EXPECT_EQ(a->blocks.size(), 1u);
  EXPECT_EQ(f.kv->allocator().n_referenced(), 1);
  bool was_waiting = false;
  auto s = f.sched->remove(1, &was_waiting);
  f.kv->release(*s);
  EXPECT_EQ(f.kv->allocator().n_referenced(), 0);
  EXPECT_EQ(f.kv->allocator().n_cached(), 1);
}

}  // namespace scheduler_test
}  // namespace tessera::engine
