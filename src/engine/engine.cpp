#include "tessera/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "tessera/base/log.h"
#include "tessera/engine/drafter.h"
#include "tessera/engine/kv_manager.h"
#include "tessera/engine/model_drafter.h"
#include "tessera/engine/ngram_drafter.h"
#include "tessera/engine/scheduler.h"
#include "tessera/engine/sequence.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/engine/step_runner.h"

namespace tessera::engine {

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

std::string_view spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::kNone: return "none";
    case SpecMethod::kNgram: return "ngram";
    case SpecMethod::kDraftModel: return "draft";
  }
  return "unknown";
}

Result<SpecMethod> parse_spec_method(std::string_view s) {
  if (s == "none" || s == "off" || s.empty()) return SpecMethod::kNone;
  if (s == "ngram") return SpecMethod::kNgram;
  if (s == "draft") return SpecMethod::kDraftModel;
  return invalid_argument(
      fmt::format("unknown speculation method '{}' (choose none, ngram or draft)", s));
}

namespace {

// Fills `top` with the k most likely tokens of `logits` as log-probabilities (ties: lower id).
void top_logprobs(std::span<const float> logits, float log_z, int32_t k,
                  std::vector<TokenLogprob>& top) {
  top.clear();
  if (k <= 0) return;
  std::vector<std::pair<float, int32_t>> best;  // min-heap of the k largest
  auto worse = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    const std::pair<float, int32_t> c{logits[static_cast<size_t>(i)], i};
    if (static_cast<int32_t>(best.size()) < k) {
      best.push_back(c);
      std::push_heap(best.begin(), best.end(), worse);
    } else if (worse(c, best.front())) {
      std::pop_heap(best.begin(), best.end(), worse);
      best.back() = c;
      std::push_heap(best.begin(), best.end(), worse);
    }
  }
  std::sort_heap(best.begin(), best.end(), worse);
  for (const auto& [v, id] : best) top.push_back({id, v - log_z});
}

float log_sum_exp(std::span<const float> x) {
  float max = -INFINITY;
  for (float v : x) max = std::max(max, v);
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v - max));
  return max + static_cast<float>(std::log(sum));
}

SchedulerOptions scheduler_options(const EngineOptions& o) {
  SchedulerOptions s;
  s.max_running = o.max_running;
  s.max_batch_tokens = o.max_batch_tokens;
  s.ctx_size = o.ctx_size;
  s.spec_max_rows = o.spec.max_rows;
  return s;
}

}  // namespace

struct Engine::Impl {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  EngineOptions opt;
  const Clock* clock;
  std::unique_ptr<ThreadPool> pool;  // null when sharing opt.device
  DeviceScheduler::ClientId device_id = -1;
  KvManager kv;
  Scheduler sched;
  StepRunner runner;
  NgramDrafter ngram;
  std::unique_ptr<ModelDrafter> draft_model;  // null without SpecOptions::draft_model

  // Shared with submitters, under mu.
  mutable std::mutex mu;
  std::condition_variable cv;       // wakes the scheduler thread
  std::condition_variable idle_cv;  // wakes drain()
  std::deque<std::unique_ptr<Sequence>> inbox;
  std::vector<RequestId> cancels;
  // LoRA adapters: changes waiting for the scheduler thread (which alone touches the model), the
  // ids requests may name, and how many unfinished requests use each.
  struct AdapterOp {
    int32_t id;
    std::shared_ptr<const model::LoraAdapter> adapter;
    std::promise<Status> done;
  };
  std::vector<std::unique_ptr<AdapterOp>> adapter_ops;
  // Embedding inputs waiting for the scheduler thread.
  struct EmbedOp {
    std::vector<int32_t> tokens;
    Pooling pooling;
    Engine::EmbedCallback done;
  };
  std::vector<EmbedOp> embed_ops;
  std::set<int32_t> adapters;
  std::map<int32_t, int64_t> adapter_users;
  bool accepting = true;
  bool stopping = false;
  RequestId next_id = 1;
  int64_t n_in_flight = 0;  // submitted and not yet finished
  int64_t n_waiting = 0;    // inbox + scheduler's waiting queue, for the queue limit
  std::thread thread;

  mutable std::mutex stats_mu;
  EngineStats stats;

  Impl(std::shared_ptr<model::Model> m, std::shared_ptr<const model::Tokenizer> t,
       const EngineOptions& o, const Clock* c, KvManager k, std::unique_ptr<ModelDrafter> dm)
      : model(std::move(m)),
        tokenizer(std::move(t)),
        opt(o),
        clock(c),
        pool(o.device ? nullptr : std::make_unique<ThreadPool>(o.n_threads)),
        kv(std::move(k)),
        sched(scheduler_options(o), kv),
        runner(*model, kv.cache()),
        ngram(o.spec.ngram_min, o.spec.ngram_max),
        draft_model(std::move(dm)) {
    if (opt.device) device_id = opt.device->add_client(opt.device_client, opt.device_weight);
    stats.kv_blocks_total = kv.allocator().n_blocks();
  }
  ~Impl() { leave_device(); }

  // Deregisters from the shared device once the scheduler thread is gone. Done by stop(), not
  // only by the destructor: whoever drops the last reference to a stopped engine may do so late,
  // and a resumed model's new engine registers under the same name meanwhile.
  void leave_device() {
    DeviceScheduler::ClientId id;
    {
      std::lock_guard lk(mu);
      id = std::exchange(device_id, -1);
    }
    if (opt.device && id >= 0) opt.device->remove_client(id);
  }

  // The drafter a request speculates with, or null (see SpecMode).
  Drafter* drafter_for(const Request& r) {
    SpecMethod m = opt.spec.method;
    if (r.speculative == SpecMode::kOff || r.structured) return nullptr;
    if (r.speculative == SpecMode::kOn && m == SpecMethod::kNone) m = SpecMethod::kNgram;
    switch (m) {
      case SpecMethod::kNone: return nullptr;
      case SpecMethod::kNgram: return &ngram;
      case SpecMethod::kDraftModel: return draft_model.get();
    }
    return nullptr;
  }

  // The earliest deadline of the planned sequences (see EngineOptions::ttft_slo_ns).
  int64_t batch_deadline_ns(const StepPlan& plan) const {
    int64_t d = -1;
    for (const ScheduledSeq& e : plan.seqs) {
      const Sequence& s = *e.seq;
      const int64_t due = s.last_token_ns < 0 ? s.submit_ns + opt.ttft_slo_ns
                                              : s.last_token_ns + opt.tpot_slo_ns;
      if (d < 0 || due < d) d = due;
    }
    return d;
  }

  void send(Sequence& s, Event&& e) {
    if (s.sink) s.sink(std::move(e));
  }

  void finish(Sequence& s, FinishReason reason, Status error = Status::ok()) {
    FinishEvent f;
    f.reason = reason;
    if (reason == FinishReason::kStop || reason == FinishReason::kLength) f.text = s.text.finish();
    f.usage = {s.n_prompt, std::max(0, s.n_generated()), s.n_cached};
    const int64_t now = clock->now_ns();
    const auto since = [&](int64_t t) { return t < 0 ? 0.0 : static_cast<double>(t - s.submit_ns) * 1e-9; };
    f.timings = {since(s.first_scheduled_ns), since(s.first_token_ns), since(now)};
    f.error = std::move(error);
    kv.release(s);
    if (Drafter* d = drafter_for(s.request)) d->forget(s);
    send(s, Event{s.id, std::move(f)});
    s.sink = nullptr;
    std::lock_guard lk(mu);
    if (s.request.adapter_id >= 0 && --adapter_users[s.request.adapter_id] == 0) {
      adapter_users.erase(s.request.adapter_id);
    }
    if (--n_in_flight == 0) idle_cv.notify_all();
  }

  void sync_waiting() {
    std::lock_guard lk(mu);
    n_waiting = static_cast<int64_t>(inbox.size() + sched.waiting().size());
  }

  void take_inbox() {
    std::vector<RequestId> cancel_ids;
    std::vector<std::unique_ptr<AdapterOp>> ops;
    std::vector<EmbedOp> embeds;
    bool stopped = false;
    {
      std::lock_guard lk(mu);
      embeds.swap(embed_ops);
      stopped = stopping;
      while (!inbox.empty()) {
        sched.enqueue(std::move(inbox.front()));
        inbox.pop_front();
      }
      cancel_ids.swap(cancels);
      ops.swap(adapter_ops);
    }
    // Between steps: no forward pass is reading the model's adapters now.
    for (auto& op : ops) op->done.set_value(model->set_adapter(op->id, std::move(op->adapter)));
    for (EmbedOp& e : embeds) {
      if (stopped) {
        e.done(Status(ErrorCode::kUnavailable, "the engine is stopping"));
        continue;
      }
      e.done(compute_embedding(*model, e.tokens, e.pooling, opt.max_batch_tokens, pool.get()));
    }
    for (RequestId id : cancel_ids) {
      bool was_waiting = false;
      std::unique_ptr<Sequence> s = sched.remove(id, &was_waiting);
      if (s) finish(*s, FinishReason::kCancelled);
    }
  }

  void on_planned(const StepPlan& plan) {
    for (Sequence* s : plan.admitted) {
      s->admitted_before = true;
      s->n_cached = static_cast<int32_t>(s->n_computed);
      s->first_scheduled_ns = clock->now_ns();
      if (drafter_for(s->request) != nullptr) s->spec_k = opt.spec.max_draft;
      std::lock_guard lk(stats_mu);
      stats.prefix_queries += (static_cast<int64_t>(s->tokens.size()) - 1) / opt.block_size;
      stats.prefix_hits += s->n_computed / opt.block_size;  // cached blocks taken at admission
      stats.prompt_tokens += s->n_prompt;
    }
    for (Sequence* s : plan.preempted) {
      if (Drafter* d = drafter_for(s->request)) d->forget(*s);
      s->draft.clear();
      s->draft_q.clear();
    }
    if (!plan.preempted.empty()) {
      std::lock_guard lk(stats_mu);
      stats.preemptions += static_cast<int64_t>(plan.preempted.size());
    }
    sync_waiting();
  }

  // Lets the draft model run this step's prompt chunks of the sequences it will draft for, while
  // the running batch is small enough that they would get drafts (SpecOptions::max_rows); a
  // sequence that starts drafting later catches up then.
  void prefill_drafts(const StepPlan& plan, ThreadPool* p) {
    if (!draft_model) return;
    if (2 * static_cast<int64_t>(sched.running().size()) > opt.spec.max_rows) return;
    std::vector<Drafter::PrefillChunk> chunks;
    for (const ScheduledSeq& e : plan.seqs) {
      if (e.n_rows > 1 && drafter_for(e.seq->request) == draft_model.get()) {
        chunks.push_back({e.seq, e.seq->n_computed, e.seq->n_computed + e.n_rows});
      }
    }
    if (chunks.empty()) return;
    if (const Status st = draft_model->prefill(chunks, p); !st.is_ok()) {
      log_warn("engine: the draft model's prefill failed: {}", st.to_string());
    }
  }

  // Asks each drafter for the sequences the plan allows drafts; a drafter that fails leaves its
  // sequences without drafts this step.
  void propose_drafts(const StepPlan& plan, ThreadPool* p) {
    std::vector<DraftRequest> by_ngram;
    std::vector<DraftRequest> by_model;
    for (const ScheduledSeq& e : plan.seqs) {
      e.seq->draft.clear();
      e.seq->draft_q.clear();
      if (e.n_draft_max <= 0) continue;
      Drafter* d = drafter_for(e.seq->request);
      if (d == &ngram) by_ngram.push_back({e.seq, e.n_draft_max});
      if (d != nullptr && d == draft_model.get()) by_model.push_back({e.seq, e.n_draft_max});
    }
    const auto run = [&](Drafter& d, const std::vector<DraftRequest>& reqs) {
      if (reqs.empty()) return;
      const Status st = d.propose(reqs, p);
      if (st.is_ok()) return;
      log_warn("engine: {} drafter failed, stepping without drafts: {}", d.name(), st.to_string());
      for (const DraftRequest& r : reqs) {
        r.seq->draft.clear();
        r.seq->draft_q.clear();
        d.forget(*r.seq);
      }
    };
    run(ngram, by_ngram);
    if (draft_model) run(*draft_model, by_model);
  }

  // Appends one verified token to s and posts its event; returns true when s has finished.
  // `row` is the token's logits row within this step's decision (for logprobs).
  bool emit(Sequence& s, int32_t t, int32_t row) {
    s.tokens.push_back(t);
    kv.publish_verified(s);
    s.last_token_ns = clock->now_ns();
    if (s.first_token_ns < 0) s.first_token_ns = s.last_token_ns;
    {
      std::lock_guard lk(stats_mu);
      ++stats.generated_tokens;
    }
    if (!s.request.ignore_eos && tokenizer->is_end_of_generation(t)) {
      finish(s, FinishReason::kStop);
      return true;
    }
    TokenEvent ev;
    ev.token = t;
    ev.piece = tokenizer->token_to_piece(t);
    if (const int32_t k = s.request.n_logprobs; k >= 0) {
      const std::span<const float> raw = runner.raw_row(row);
      const float log_z = log_sum_exp(raw);
      top_logprobs(raw, log_z, k, ev.top);
      ev.logprob = raw[static_cast<size_t>(t)] - log_z;
    }
    ev.text = s.text.push(ev.piece);
    // A structured output whose value is closed is done (only whitespace could follow).
    const bool stopped = s.text.stopped() || (s.constraint && s.constraint->closed());
    send(s, Event{s.id, std::move(ev)});
    if (stopped) {
      finish(s, FinishReason::kStop);
      return true;
    }
    if (s.n_generated() >= s.request.max_tokens ||
        static_cast<int64_t>(s.tokens.size()) >= opt.ctx_size) {
      finish(s, FinishReason::kLength);
      return true;
    }
    return false;
  }

  // Decides s's new tokens (sample, or verify its drafts) and emits them in order; returns true
  // when s has finished. Position bookkeeping: before, s's pending token ran at n_computed - 1;
  // draft j (accepted) ran at n_computed + j, so each accepted draft's K/V is valid once the
  // token after it is known.
  bool decide_and_emit(size_t i, Sequence& s) {
    // Tokens s may still emit (max_tokens or the context, whichever ends first): structured
    // output keeps its value completable within them.
    const int64_t budget =
        std::min<int64_t>(s.request.max_tokens - s.n_generated(),
                          opt.ctx_size - static_cast<int64_t>(s.tokens.size()));
    const VerifyResult v = runner.decide(i, s.request.n_logprobs >= 0, budget);
    const auto n_drafted = static_cast<int32_t>(s.draft.size());
    if (n_drafted > 0) {
      std::lock_guard lk(stats_mu);
      stats.spec_draft_tokens += n_drafted;
      stats.spec_accepted_tokens += v.n_accepted;
      ++stats.spec_accepted_histogram[static_cast<size_t>(std::min(v.n_accepted, kMaxDraftTokens))];
    }
    for (int32_t j = 0; j <= v.n_accepted; ++j) {
      if (j > 0) ++s.n_computed;
      const int32_t t = j < v.n_accepted ? s.draft[static_cast<size_t>(j)] : v.next;
      if (emit(s, t, j)) return true;
    }
    kv.rollback(s);
    if (Drafter* d = drafter_for(s.request)) {
      d->verified(s);
      adapt_draft_length(s, n_drafted, v.n_accepted, opt.spec.max_draft);
    }
    s.draft.clear();
    s.draft_q.clear();
    return false;
  }

  bool step() {
    take_inbox();
    const StepPlan plan = sched.schedule();
    on_planned(plan);
    if (plan.seqs.empty()) {
      update_stats(0);
      return false;
    }
    // Sharing the device: hold it for drafting, the forward pass and the sampling after it.
    DeviceScheduler::Lease lease;
    if (opt.device) lease = opt.device->acquire(device_id, batch_deadline_ns(plan));
    ThreadPool* const p = opt.device ? lease.pool() : pool.get();
    prefill_drafts(plan, p);
    propose_drafts(plan, p);
    runner.build(plan.seqs);
    if (opt.device) {
      int64_t prompt_rows = 0;
      for (const ScheduledSeq& e : plan.seqs) {
        if (e.seq->n_computed < e.seq->n_prompt) prompt_rows += e.n_rows;
      }
      lease.note_rows(prompt_rows, static_cast<int64_t>(runner.batch().size()) - prompt_rows);
    }
    const Status st = runner.forward(p);
    std::vector<Sequence*> done;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const ScheduledSeq& e = plan.seqs[i];
      Sequence& s = *e.seq;
      if (!st.is_ok()) {
        finish(s, FinishReason::kError, st);
        done.push_back(&s);
        continue;
      }
      s.n_computed += e.n_rows;
      kv.publish_verified(s);
      if (e.samples && decide_and_emit(i, s)) done.push_back(&s);
    }
    lease.release();
    if (!st.is_ok()) log_warn("engine: forward step failed: {}", st.to_string());
    sched.retire(done);
    update_stats(runner.batch().size());
    return true;
  }

  void update_stats(int64_t rows) {
    std::lock_guard lk(stats_mu);
    stats.running = static_cast<int64_t>(sched.running().size());
    stats.kv_blocks_used = kv.allocator().n_referenced();
    stats.kv_blocks_cached = kv.allocator().n_cached();
    if (rows > 0) {
      ++stats.iterations;
      stats.last_batch_rows = rows;
    }
  }

  void loop() {
    while (true) {
      {
        std::lock_guard lk(mu);
        if (stopping) break;
      }
      if (step()) continue;
      std::unique_lock lk(mu);
      cv.wait(lk, [&] {
        return stopping || !inbox.empty() || !cancels.empty() || !adapter_ops.empty() ||
               !embed_ops.empty();
      });
    }
  }

  void cancel_all() {
    take_inbox();
    for (std::unique_ptr<Sequence>& s : sched.take_all()) finish(*s, FinishReason::kCancelled);
    sync_waiting();
    update_stats(0);
  }
};

namespace {

Status validate_spec(const SpecOptions& s) {
  if (s.max_draft < 1 || s.max_draft > kMaxDraftTokens) {
    return invalid_argument(
        fmt::format("draft tokens per step must be in [1, {}], got {}", kMaxDraftTokens, s.max_draft));
  }
  if (s.max_rows < 0) return invalid_argument("the speculation row limit must be >= 0");
  if (s.ngram_min < 1 || s.ngram_min > s.ngram_max || s.ngram_max > 16) {
    return invalid_argument(fmt::format(
        "n-gram sizes must satisfy 1 <= min <= max <= 16, got {}..{}", s.ngram_min, s.ngram_max));
  }
  if (s.method == SpecMethod::kDraftModel && !s.draft_model) {
    return invalid_argument("speculation with a draft model needs a draft model (--draft-model)");
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(std::shared_ptr<model::Model> model,
                                               std::shared_ptr<const model::Tokenizer> tokenizer,
                                               const EngineOptions& options, const Clock* clock) {
  if (!model || !tokenizer) return invalid_argument("engine needs a model and a tokenizer");
  EngineOptions o = options;
  const model::ModelConfig& c = model->config();
  if (o.device) o.n_threads = o.device->n_threads();
  if (o.n_threads <= 0) o.n_threads = hardware_threads();
  if (o.device_weight <= 0.0) return invalid_argument("device weight (priority) must be > 0");
  if (o.max_waiting < 0) return invalid_argument("max_waiting must be >= 0");
  if (o.max_batch_tokens < 1) return invalid_argument("max_batch_tokens must be >= 1");
  TS_RETURN_IF_ERROR(validate_spec(o.spec));
  if (o.n_blocks == 0 && o.kv_memory_bytes == 0) {
    o.kv_memory_bytes =
        default_kv_memory_bytes(static_cast<int64_t>(model->file().tensor_bytes()));
  }
  TS_ASSIGN_OR_RETURN(const KvPoolSize size, size_kv_pool(c, o));
  o.ctx_size = size.ctx_size;
  o.n_blocks = static_cast<int32_t>(size.n_blocks);
  TS_ASSIGN_OR_RETURN(KvManager kv, KvManager::create(c, o, size));
  std::unique_ptr<ModelDrafter> drafter;
  if (o.spec.draft_model) {
    if (o.spec.draft_tokenizer) {
      TS_RETURN_IF_ERROR(check_same_vocabulary(*tokenizer, *o.spec.draft_tokenizer));
    }
    TS_ASSIGN_OR_RETURN(drafter, ModelDrafter::create(o.spec.draft_model, c.n_vocab,
                                                      o.max_running, o.ctx_size, o.kv_dtype));
  }
  auto impl = std::make_unique<Impl>(std::move(model), std::move(tokenizer), o,
                                     clock ? clock : real_clock(), std::move(kv),
                                     std::move(drafter));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard lk(impl_->mu);
  if (impl_->thread.joinable() || impl_->stopping) return;
  impl_->thread = std::thread([this] { impl_->loop(); });
}

void Engine::stop() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stopping = true;
    impl_->accepting = false;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->cancel_all();
  impl_->leave_device();
}

bool Engine::drain(std::chrono::milliseconds timeout) {
  bool all_done = false;
  {
    std::unique_lock lk(impl_->mu);
    impl_->accepting = false;
    all_done = impl_->idle_cv.wait_for(lk, timeout, [&] { return impl_->n_in_flight == 0; });
  }
  stop();
  return all_done;
}

Result<RequestId> Engine::submit(Request request, EventSink sink) {
  Impl& m = *impl_;
  const model::ModelConfig& c = m.model->config();
  if (request.prompt.empty()) return invalid_argument("the prompt has no tokens");
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= c.n_vocab) {
      return invalid_argument(
          fmt::format("prompt token id {} is outside the vocabulary [0, {})", t, c.n_vocab));
    }
  }
  if (static_cast<int64_t>(request.prompt.size()) >= m.opt.ctx_size) {
    return out_of_range(fmt::format(
        "the prompt has {} tokens; the context holds {} (prompt plus at least one new token)",
        request.prompt.size(), m.opt.ctx_size));
  }
  if (request.max_tokens < 1) return invalid_argument("max_tokens must be at least 1");
  if (request.n_logprobs < -1 || request.n_logprobs > kMaxTopLogprobs) {
    return invalid_argument(
        fmt::format("top logprobs must be between 0 and {}", kMaxTopLogprobs));
  }
  TS_RETURN_IF_ERROR(request.sampling.validate());
  for (const auto& [t, bias] : request.sampling.logit_bias) {
    if (t >= c.n_vocab) {
      return invalid_argument(
          fmt::format("logit_bias token id {} is outside the vocabulary [0, {})", t, c.n_vocab));
    }
  }
  if (request.structured &&
      (!request.structured->schema || !request.structured->vocab ||
       request.structured->vocab->n_vocab() > c.n_vocab)) {
    return invalid_argument("structured output was built for a larger vocabulary than the model's");
  }
  const int32_t adapter = request.adapter_id;
  const int64_t now = m.clock->now_ns();
  RequestId id = 0;
  {
    std::lock_guard lk(m.mu);
    if (!m.accepting) return Status(ErrorCode::kUnavailable, "the engine is shutting down");
    if (m.n_waiting >= m.opt.max_waiting) {
      return resource_exhausted(
          fmt::format("the queue is full ({} requests waiting); retry later", m.n_waiting));
    }
    if (adapter >= 0 && m.adapters.count(adapter) == 0) {
      return invalid_argument(fmt::format("adapter id {} is not loaded", adapter));
    }
    if (adapter >= 0) ++m.adapter_users[adapter];
    id = m.next_id++;
    m.inbox.push_back(std::make_unique<Sequence>(id, std::move(request), std::move(sink), now));
    ++m.n_waiting;
    ++m.n_in_flight;
  }
  m.cv.notify_one();
  return id;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard lk(impl_->mu);
    impl_->cancels.push_back(id);
  }
  impl_->cv.notify_one();
}

bool Engine::step() { return impl_->step(); }

Status Engine::set_adapter(int32_t id, std::shared_ptr<const model::LoraAdapter> adapter) {
  Impl& m = *impl_;
  std::future<Status> done;
  {
    std::lock_guard lk(m.mu);
    if (m.stopping) return Status(ErrorCode::kUnavailable, "the engine is stopped");
    if (adapter == nullptr) {
      const auto users = m.adapter_users.find(id);
      if (users != m.adapter_users.end()) {
        return Status(ErrorCode::kUnavailable,
                      fmt::format("adapter id {} is in use by {} unfinished request(s)", id,
                                  users->second));
      }
      m.adapters.erase(id);  // from now on new requests naming it are refused
    }
    if (!m.thread.joinable()) {  // no scheduler thread: the model is ours to change
      Status st = m.model->set_adapter(id, adapter);
      if (st.is_ok() && adapter != nullptr) m.adapters.insert(id);
      return st;
    }
    auto op = std::make_unique<Impl::AdapterOp>();
    op->id = id;
    op->adapter = adapter;
    done = op->done.get_future();
    m.adapter_ops.push_back(std::move(op));
  }
  m.cv.notify_one();
  Status st = done.get();
  if (st.is_ok() && adapter != nullptr) {
    std::lock_guard lk(m.mu);
    m.adapters.insert(id);
  }
  return st;
}

void Engine::embed(std::vector<int32_t> tokens, Pooling pooling, EmbedCallback done) {
  Impl& m = *impl_;
  const model::ModelConfig& c = m.model->config();
  if (tokens.empty()) return done(invalid_argument("nothing to embed: the input has no tokens"));
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.n_vocab) {
      return done(invalid_argument(
          fmt::format("token id {} is outside the vocabulary [0, {})", t, c.n_vocab)));
    }
  }
  if (static_cast<int64_t>(tokens.size()) > m.opt.ctx_size) {
    return done(invalid_argument(fmt::format("the input has {} tokens; at most {} (the context)",
                                             tokens.size(), m.opt.ctx_size)));
  }
  {
    std::lock_guard lk(m.mu);
    if (!m.accepting || m.stopping) {
      return done(Status(ErrorCode::kUnavailable, "the engine is shutting down"));
    }
    if (m.thread.joinable()) {
      m.embed_ops.push_back({std::move(tokens), pooling, std::move(done)});
      m.cv.notify_one();
      return;
    }
  }
  // No scheduler thread: the model is the caller's to run (as step() assumes).
  done(compute_embedding(*m.model, tokens, pooling, m.opt.max_batch_tokens, m.pool.get()));
}

KvBlockFormat Engine::kv_block_format() const { return impl_->kv.block_format(); }

Result<PrefixBlockSet> Engine::export_prefix_cache(int64_t max_bytes,
                                                   const BlockStorage& storage) const {
  {
    std::lock_guard lk(impl_->mu);
    TS_CHECK(!impl_->thread.joinable());  // not running
  }
  return impl_->kv.export_prefix_cache(max_bytes, storage);
}

Result<int64_t> Engine::import_prefix_cache(const PrefixBlockSet& set,
                                            std::span<const std::byte> bytes) {
  {
    std::lock_guard lk(impl_->mu);
    TS_CHECK(!impl_->thread.joinable());  // not started
  }
  Result<int64_t> taken = impl_->kv.import_prefix_cache(set, bytes);
  impl_->update_stats(0);
  return taken;
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lk(impl_->stats_mu);
    s = impl_->stats;
  }
  std::lock_guard lk(impl_->mu);
  s.waiting = impl_->n_waiting;
  return s;
}

const model::ModelConfig& Engine::config() const { return impl_->model->config(); }
const model::Tokenizer& Engine::tokenizer() const { return *impl_->tokenizer; }
const EngineOptions& Engine::options() const { return impl_->opt; }

}  // namespace tessera::engine
