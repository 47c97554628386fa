#include "tessera/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "tessera/base/log.h"
#include "tessera/engine/kv_manager.h"
#include "tessera/engine/output_processor.h"
#include "tessera/engine/scheduler.h"
#include "tessera/engine/sequence.h"
#include "tessera/engine/speculation.h"
#include "tessera/engine/step_runner.h"

namespace tessera::engine {

namespace {

SchedulerOptions scheduler_options(const EngineOptions& o) {
  SchedulerOptions s;
  s.max_running = o.max_running;
  s.max_batch_tokens = o.max_batch_tokens;
  s.ctx_size = o.ctx_size;
  s.spec_max_rows = o.spec.max_rows;
  return s;
}

// The earliest deadline of the planned sequences (see EngineOptions::ttft_slo_ns).
int64_t batch_deadline_ns(const StepPlan& plan, const EngineOptions& opt) {
  int64_t d = -1;
  for (const ScheduledSeq& e : plan.seqs) {
    const Sequence& s = *e.seq;
    const int64_t due = s.last_token_ns < 0 ? s.submit_ns + opt.ttft_slo_ns
                                            : s.last_token_ns + opt.tpot_slo_ns;
    if (d < 0 || due < d) d = due;
  }
  return d;
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
  StepRunner runner;  // runs the model: steps, adapter changes, embeddings
  Speculator spec;
  OutputProcessor output;

  // Shared with submitters, under mu.
  mutable std::mutex mu;
  std::condition_variable cv;       // wakes the scheduler thread
  std::condition_variable idle_cv;  // wakes drain()
  std::deque<std::unique_ptr<Sequence>> inbox;
  std::vector<RequestId> cancels;
  bool accepting = true;
  bool stopping = false;
  RequestId next_id = 1;
  int64_t n_in_flight = 0;  // submitted and not yet finished
  int64_t n_waiting = 0;    // inbox + scheduler's waiting queue, for the queue limit
  std::thread thread;

  mutable std::mutex stats_mu;
  EngineStats stats;

  Impl(std::shared_ptr<model::Model> m, std::shared_ptr<const model::Tokenizer> t,
       const EngineOptions& o, const Clock* c, KvManager k, Speculator sp)
      : model(std::move(m)),
        tokenizer(std::move(t)),
        opt(o),
        clock(c),
        pool(o.device ? nullptr : std::make_unique<ThreadPool>(o.n_threads)),
        kv(std::move(k)),
        sched(scheduler_options(o), kv),
        runner(*model, kv.cache(),
               {o.max_batch_tokens, o.ctx_size, pool.get(), [this] { wake(); }}, c),
        spec(std::move(sp)),
        output(*tokenizer, o.ctx_size) {
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

  // Wakes the scheduler thread for work queued outside mu (the runner's ModelOps): taking mu
  // first means the thread is either before its wait predicate, which sees the work, or waiting.
  void wake() {
    { std::lock_guard lk(mu); }
    cv.notify_one();
  }

  void send(Sequence& s, Event&& e) {
    if (s.sink) s.sink(std::move(e));
  }

  void finish(Sequence& s, FinishReason reason, Status error = Status::ok()) {
    FinishEvent f = output.finish(s, reason, std::move(error), clock->now_ns());
    kv.release(s);
    spec.finished(s);
    send(s, Event{s.id, std::move(f)});
    s.sink = nullptr;
    runner.ops().release_adapter(s.request.adapter_id);
    std::lock_guard lk(mu);
    if (--n_in_flight == 0) idle_cv.notify_all();
  }

  void sync_waiting() {
    std::lock_guard lk(mu);
    n_waiting = static_cast<int64_t>(inbox.size() + sched.waiting().size());
  }

  void take_inbox() {
    std::vector<RequestId> cancel_ids;
    {
      std::lock_guard lk(mu);
      while (!inbox.empty()) {
        sched.enqueue(std::move(inbox.front()));
        inbox.pop_front();
      }
      cancel_ids.swap(cancels);
    }
    runner.ops().run();  // between steps: no forward pass is reading the model now
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
      spec.admitted(*s);
      std::lock_guard lk(stats_mu);
      stats.prefix_queries += (static_cast<int64_t>(s->tokens.size()) - 1) / opt.block_size;
      stats.prefix_hits += s->n_computed / opt.block_size;  // cached blocks taken at admission
      stats.prompt_tokens += s->n_prompt;
    }
    for (Sequence* s : plan.preempted) spec.preempted(*s);
    if (!plan.preempted.empty()) {
      std::lock_guard lk(stats_mu);
      stats.preemptions += static_cast<int64_t>(plan.preempted.size());
    }
    sync_waiting();
  }

  // Appends one verified token to s and posts its events; returns true when s has finished.
  // `row` is the token's logits row within this step's decision (for logprobs).
  bool emit(Sequence& s, int32_t t, int32_t row) {
    s.tokens.push_back(t);
    kv.publish_verified(s);
    s.last_token_ns = clock->now_ns();
    if (s.first_token_ns < 0) s.first_token_ns = s.last_token_ns;
    {
      // The constraint's counters are published with the token, before its event is sent: a
      // client that has seen every token then reads counters that include them (serve bench's
      // constraint cost per token); at the end of the step they were one step late.
      std::lock_guard lk(stats_mu);
      ++stats.generated_tokens;
      stats.constraint_ns = runner.constraint_time().ns;
      stats.constrained_tokens = runner.constraint_time().n_tokens;
    }
    const std::span<const float> raw =
        s.request.n_logprobs >= 0 ? runner.raw_row(row) : std::span<const float>();
    OutputProcessor::TokenOutput out = output.on_token(s, t, raw);
    if (out.event) send(s, Event{s.id, std::move(*out.event)});
    if (!out.finish) return false;
    finish(s, *out.finish);
    return true;
  }

  // Decides s's new tokens (a sample, or its accepted drafts and the target's token after them),
  // emits them in order and hands the verification back to the speculator; returns true when s
  // has finished. Position bookkeeping: before, s's pending token ran at n_computed - 1; draft j
  // (accepted) ran at n_computed + j, so each accepted draft's K/V is valid once the token after
  // it is known.
  bool decide_and_emit(size_t i, Sequence& s) {
    const VerifyResult v = runner.decide(i, s.request.n_logprobs >= 0, output.budget(s));
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
    kv.rollback(s);  // the lookahead blocks of rejected drafts
    spec.verified(s, n_drafted, v.n_accepted);
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
    if (opt.device) lease = opt.device->acquire(device_id, batch_deadline_ns(plan, opt));
    ThreadPool* const p = opt.device ? lease.pool() : pool.get();
    spec.propose(plan, static_cast<int64_t>(sched.running().size()), p);
    runner.build(plan.seqs);
    const auto n_rows = static_cast<int64_t>(runner.batch().size());
    if (opt.device) lease.note_rows(runner.n_prompt_rows(), n_rows - runner.n_prompt_rows());
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
    update_stats(n_rows);
    return true;
  }

  void update_stats(int64_t rows) {
    std::lock_guard lk(stats_mu);
    stats.running = static_cast<int64_t>(sched.running().size());
    stats.kv_blocks_used = kv.allocator().n_referenced();
    stats.kv_blocks_cached = kv.allocator().n_cached();
    stats.constraint_ns = runner.constraint_time().ns;
    stats.constrained_tokens = runner.constraint_time().n_tokens;
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
        return stopping || !inbox.empty() || !cancels.empty() || runner.ops().pending();
      });
    }
  }

  void cancel_all() {
    runner.ops().close();
    take_inbox();
    for (std::unique_ptr<Sequence>& s : sched.take_all()) finish(*s, FinishReason::kCancelled);
    sync_waiting();
    update_stats(0);
  }
};

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
  TS_RETURN_IF_ERROR(Speculator::validate(o.spec));
  if (o.n_blocks == 0 && o.kv_memory_bytes == 0) {
    // On a device, the share of the device's free memory (its weights are already there).
    const int64_t device_free = model->device_free_bytes();
    o.kv_memory_bytes =
        device_free >= 0
            ? std::max<int64_t>(1, kv_memory_share(device_free, 0, kDefaultKvMemoryShare))
            : default_kv_memory_bytes(static_cast<int64_t>(model->file().tensor_bytes()));
  }
  TS_ASSIGN_OR_RETURN(const KvPoolSize size, size_kv_pool(c, o));
  o.ctx_size = size.ctx_size;
  o.n_blocks = static_cast<int32_t>(size.n_blocks);
  TS_ASSIGN_OR_RETURN(KvManager kv, KvManager::create(c, o, size));
  TS_RETURN_IF_ERROR(model->attach_cache(kv.cache()));
  TS_ASSIGN_OR_RETURN(Speculator spec,
                      Speculator::create(o.spec, *tokenizer, static_cast<int32_t>(c.n_vocab),
                                         o.max_running, o.ctx_size, o.kv_dtype));
  auto impl = std::make_unique<Impl>(std::move(model), std::move(tokenizer), o,
                                     clock ? clock : real_clock(), std::move(kv), std::move(spec));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard lk(impl_->mu);
  if (impl_->thread.joinable() || impl_->stopping) return;
  impl_->runner.ops().start();  // adapter changes and embeddings now wait for the thread
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
      (!request.structured->schema == !request.structured->grammar || !request.structured->vocab ||
       request.structured->vocab->n_vocab() > c.n_vocab)) {
    return invalid_argument("structured output needs one schema or grammar and a vocabulary no "
                            "larger than the model's");
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
    TS_RETURN_IF_ERROR(m.runner.ops().acquire_adapter(adapter));
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
  return impl_->runner.ops().set_adapter(id, std::move(adapter));
}

void Engine::embed(std::vector<int32_t> tokens, Pooling pooling, EmbedCallback done) {
  {
    std::lock_guard lk(impl_->mu);
    if (!impl_->accepting) {
      return done(Status(ErrorCode::kUnavailable, "the engine is shutting down"));
    }
  }
  impl_->runner.ops().embed(std::move(tokens), pooling, std::move(done));
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
