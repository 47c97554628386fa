#include "tessera/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "tessera/base/log.h"
#include "tessera/engine/block_allocator.h"
#include "tessera/engine/sequence.h"

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

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

}  // namespace

struct Engine::Impl {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  EngineOptions opt;
  const Clock* clock;
  std::unique_ptr<ThreadPool> pool;  // null when sharing opt.device
  DeviceScheduler::ClientId device_id = -1;
  model::KvCache kv;
  BlockAllocator blocks;

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
  int64_t n_waiting = 0;    // inbox + waiting, for the queue limit
  std::thread thread;

  // Scheduler thread only.
  std::deque<std::unique_ptr<Sequence>> waiting;
  std::vector<std::unique_ptr<Sequence>> running;  // in admission order
  std::vector<int32_t> free_slots;
  model::Batch batch;
  std::vector<float> logits;
  std::vector<float> raw_row;
  struct Scheduled {
    Sequence* seq;
    int64_t n_rows;
    int64_t logits_row;  // -1: none
  };
  std::vector<Scheduled> scheduled;

  mutable std::mutex stats_mu;
  EngineStats stats;

  Impl(std::shared_ptr<model::Model> m, std::shared_ptr<const model::Tokenizer> t,
       const EngineOptions& o, const Clock* c, model::KvCache k)
      : model(std::move(m)),
        tokenizer(std::move(t)),
        opt(o),
        clock(c),
        pool(o.device ? nullptr : std::make_unique<ThreadPool>(o.n_threads)),
        kv(std::move(k)),
        blocks(o.n_blocks) {
    if (opt.device) device_id = opt.device->add_client(opt.device_client, opt.device_weight);
    for (int32_t s = opt.max_running - 1; s >= 0; --s) free_slots.push_back(s);
    logits.resize(static_cast<size_t>(opt.max_running) *
                  static_cast<size_t>(model->config().n_vocab));
    stats.kv_blocks_total = opt.n_blocks;
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

  // The earliest deadline of the scheduled sequences (see EngineOptions::ttft_slo_ns).
  int64_t batch_deadline_ns() const {
    int64_t d = -1;
    for (const Scheduled& e : scheduled) {
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

  // Drops s's block references, last block first: the prefix cache then evicts a prompt's tail
  // before its head (a head serves every prompt that shares it; a tail without it is never found).
  void release_blocks(Sequence& s) {
    for (auto b = s.blocks.rbegin(); b != s.blocks.rend(); ++b) blocks.release(*b);
    s.blocks.clear();
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
    release_blocks(s);
    if (s.slot >= 0) {
      free_slots.push_back(s.slot);
      kv.set_block_table(s.slot, {});
      s.slot = -1;
    }
    send(s, Event{s.id, std::move(f)});
    s.sink = nullptr;
    std::lock_guard lk(mu);
    if (--n_in_flight == 0) idle_cv.notify_all();
  }

  void take_inbox() {
    std::vector<RequestId> cancel_ids;
    {
      std::lock_guard lk(mu);
      while (!inbox.empty()) {
        waiting.push_back(std::move(inbox.front()));
        inbox.pop_front();
      }
      cancel_ids.swap(cancels);
    }
    for (RequestId id : cancel_ids) cancel_now(id);
  }

  void cancel_now(RequestId id) {
    for (auto it = waiting.begin(); it != waiting.end(); ++it) {
      if ((*it)->id == id) {
        std::unique_ptr<Sequence> s = std::move(*it);
        waiting.erase(it);
        {
          std::lock_guard lk(mu);
          --n_waiting;
        }
        finish(*s, FinishReason::kCancelled);
        return;
      }
    }
    for (auto it = running.begin(); it != running.end(); ++it) {
      if ((*it)->id == id) {
        std::unique_ptr<Sequence> s = std::move(*it);
        running.erase(it);
        finish(*s, FinishReason::kCancelled);
        return;
      }
    }
  }

  // Takes references to the cached blocks of s's longest cached prefix. The last token is never
  // covered (it must run to produce logits), so shared blocks are only ever read.
  void take_cached_prefix(Sequence& s) {
    if (!opt.prefix_cache) return;
    const int64_t bs = opt.block_size;
    const int64_t n_full = (static_cast<int64_t>(s.tokens.size()) - 1) / bs;
    uint64_t parent = 0;
    for (int64_t i = 0; i < n_full; ++i) {
      std::span<const int32_t> toks(s.tokens.data() + i * bs, static_cast<size_t>(bs));
      const uint64_t h = chain_block_hash(parent, toks, s.request.adapter_id);
      std::optional<int32_t> b = blocks.lookup(h, parent, toks);
      if (!b) break;
      s.blocks.push_back(*b);
      s.block_hashes.push_back(h);
      parent = h;
    }
    s.n_computed = static_cast<int64_t>(s.blocks.size()) * bs;
  }

  void admit() {
    while (!waiting.empty() && static_cast<int32_t>(running.size()) < opt.max_running) {
      Sequence& s = *waiting.front();
      take_cached_prefix(s);
      const int64_t needed =
          ceil_div(static_cast<int64_t>(s.tokens.size()), opt.block_size) -
          static_cast<int64_t>(s.blocks.size());
      // Keep one block of growth per running sequence so admission does not force preemption.
      if (needed + static_cast<int64_t>(running.size()) > blocks.n_available() &&
          !running.empty()) {
        release_blocks(s);
        s.block_hashes.clear();
        s.n_computed = 0;
        break;
      }
      if (!s.admitted_before) {
        s.admitted_before = true;
        s.n_cached = static_cast<int32_t>(s.n_computed);
        s.first_scheduled_ns = clock->now_ns();
        std::lock_guard lk(stats_mu);
        stats.prefix_queries += (static_cast<int64_t>(s.tokens.size()) - 1) / opt.block_size;
        stats.prefix_hits += static_cast<int64_t>(s.blocks.size());
        stats.prompt_tokens += s.n_prompt;
      }
      s.slot = free_slots.back();
      free_slots.pop_back();
      running.push_back(std::move(waiting.front()));
      waiting.pop_front();
      std::lock_guard lk(mu);
      --n_waiting;
    }
  }

  // Returns s to the front of the queue with its cache references dropped; it will recompute
  // (its published blocks usually survive in the prefix cache and make that cheap).
  void preempt_last() {
    std::unique_ptr<Sequence> s = std::move(running.back());
    running.pop_back();
    release_blocks(*s);
    s->block_hashes.clear();
    s->n_computed = 0;
    kv.set_block_table(s->slot, {});
    free_slots.push_back(s->slot);
    s->slot = -1;
    waiting.push_front(std::move(s));
    {
      std::lock_guard lk(mu);
      ++n_waiting;
    }
    std::lock_guard lk(stats_mu);
    ++stats.preemptions;
  }

  // Chooses rows per running sequence: decode tokens first (one each), then prefill chunks in
  // admission order, under the token budget; then makes sure their blocks exist, preempting the
  // most recently admitted sequence when the pool runs dry.
  void plan() {
    while (true) {
      scheduled.clear();
      int64_t budget = opt.max_batch_tokens;
      for (auto& s : running) {
        if (s->n_pending() == 1 && budget > 0) {
          scheduled.push_back({s.get(), 1, -1});
          --budget;
        }
      }
      for (auto& s : running) {
        if (s->n_pending() > 1 && budget > 0) {
          const int64_t n = std::min(s->n_pending(), budget);
          scheduled.push_back({s.get(), n, -1});
          budget -= n;
        }
      }
      int64_t need = 0;
      for (const Scheduled& e : scheduled) {
        need += std::max<int64_t>(
            0, ceil_div(e.seq->n_computed + e.n_rows, opt.block_size) -
                   static_cast<int64_t>(e.seq->blocks.size()));
      }
      if (need <= blocks.n_available() || running.size() <= 1) break;
      preempt_last();
    }
    for (const Scheduled& e : scheduled) {
      Sequence& s = *e.seq;
      const int64_t n_blocks = ceil_div(s.n_computed + e.n_rows, opt.block_size);
      while (static_cast<int64_t>(s.blocks.size()) < n_blocks) {
        std::optional<int32_t> b = blocks.allocate();
        TS_CHECK_MSG(b.has_value(), "KV pool smaller than one sequence's context");
        s.blocks.push_back(*b);
      }
      kv.set_block_table(s.slot, s.blocks);
    }
  }

  void build_batch() {
    batch.clear();
    int64_t n_logits = 0;
    for (Scheduled& e : scheduled) {
      Sequence& s = *e.seq;
      const bool last = s.n_computed + e.n_rows == static_cast<int64_t>(s.tokens.size());
      for (int64_t i = 0; i < e.n_rows; ++i) {
        const int64_t pos = s.n_computed + i;
        batch.add(s.tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos), s.slot,
                  last && i + 1 == e.n_rows, s.request.adapter_id);
      }
      e.logits_row = last ? n_logits++ : -1;
    }
  }

  void publish_full_blocks(Sequence& s) {
    if (!opt.prefix_cache) return;
    const int64_t bs = opt.block_size;
    const int64_t n_full = s.n_computed / bs;
    for (int64_t i = static_cast<int64_t>(s.block_hashes.size()); i < n_full; ++i) {
      const uint64_t parent = i == 0 ? 0 : s.block_hashes[static_cast<size_t>(i - 1)];
      std::span<const int32_t> toks(s.tokens.data() + i * bs, static_cast<size_t>(bs));
      const uint64_t h = chain_block_hash(parent, toks, s.request.adapter_id);
      blocks.publish(s.blocks[static_cast<size_t>(i)], h, parent, toks);
      s.block_hashes.push_back(h);
    }
  }

  // Samples the next token of `s` from its logits row; returns true when `s` has finished.
  bool sample(Sequence& s, std::span<float> row) {
    TokenEvent ev;
    const int32_t k = s.request.n_logprobs;
    float log_z = 0.0f;
    if (k >= 0) {
      log_z = log_sum_exp(row);
      top_logprobs(row, log_z, k, ev.top);
      raw_row.assign(row.begin(), row.end());
    }
    const int32_t t = s.sampler.sample(row, s.tokens);
    s.last_token_ns = clock->now_ns();
    if (s.first_token_ns < 0) s.first_token_ns = s.last_token_ns;
    s.tokens.push_back(t);
    {
      std::lock_guard lk(stats_mu);
      ++stats.generated_tokens;
    }
    if (!s.request.ignore_eos && tokenizer->is_end_of_generation(t)) {
      finish(s, FinishReason::kStop);
      return true;
    }
    ev.token = t;
    ev.piece = tokenizer->token_to_piece(t);
    if (k >= 0) ev.logprob = raw_row[static_cast<size_t>(t)] - log_z;
    ev.text = s.text.push(ev.piece);
    const bool stopped = s.text.stopped();
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

  bool step() {
    take_inbox();
    admit();
    if (running.empty()) {
      update_stats(0);
      return false;
    }
    plan();
    build_batch();
    const int64_t n_vocab = model->config().n_vocab;
    // Sharing the device: hold it for the forward pass and the sampling after it.
    DeviceScheduler::Lease lease;
    if (opt.device) lease = opt.device->acquire(device_id, batch_deadline_ns());
    ThreadPool* const p = opt.device ? lease.pool() : pool.get();
    const Status st = model->forward(batch, kv, logits, p);
    std::vector<Sequence*> done;
    for (const Scheduled& e : scheduled) {
      Sequence& s = *e.seq;
      if (!st.is_ok()) {
        finish(s, FinishReason::kError, st);
        done.push_back(&s);
        continue;
      }
      s.n_computed += e.n_rows;
      publish_full_blocks(s);
      if (e.logits_row >= 0 &&
          sample(s, std::span<float>(logits.data() + e.logits_row * n_vocab,
                                     static_cast<size_t>(n_vocab)))) {
        done.push_back(&s);
      }
    }
    lease.release();
    if (!st.is_ok()) log_warn("engine: forward step failed: {}", st.to_string());
    std::erase_if(running, [&](const std::unique_ptr<Sequence>& s) {
      return std::find(done.begin(), done.end(), s.get()) != done.end();
    });
    update_stats(batch.size());
    return true;
  }

  void update_stats(int64_t rows) {
    std::lock_guard lk(stats_mu);
    stats.running = static_cast<int64_t>(running.size());
    stats.kv_blocks_used = blocks.n_referenced();
    stats.kv_blocks_cached = blocks.n_cached();
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
      cv.wait(lk, [&] { return stopping || !inbox.empty() || !cancels.empty(); });
    }
  }

  void cancel_all() {
    take_inbox();
    while (!running.empty()) {
      std::unique_ptr<Sequence> s = std::move(running.back());
      running.pop_back();
      finish(*s, FinishReason::kCancelled);
    }
    while (!waiting.empty()) {
      std::unique_ptr<Sequence> s = std::move(waiting.front());
      waiting.pop_front();
      {
        std::lock_guard lk(mu);
        --n_waiting;
      }
      finish(*s, FinishReason::kCancelled);
    }
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
  if (o.ctx_size <= 0) o.ctx_size = c.context_length;
  if (o.ctx_size <= 1) return invalid_argument("context size must be at least 2 positions");
  if (o.max_running < 1) return invalid_argument("max_running (parallel slots) must be >= 1");
  if (o.max_waiting < 0) return invalid_argument("max_waiting must be >= 0");
  if (o.block_size < 1 || o.block_size > 4096) {
    return invalid_argument(fmt::format("block size {} is outside [1, 4096]", o.block_size));
  }
  if (o.max_batch_tokens < 1) return invalid_argument("max_batch_tokens must be >= 1");
  const int64_t per_seq = ceil_div(o.ctx_size, o.block_size);
  if (o.n_blocks <= 0) {
    const int64_t n = per_seq * o.max_running;
    if (n > (int64_t{1} << 30)) return resource_exhausted("KV pool would need too many blocks");
    o.n_blocks = static_cast<int32_t>(n);
  }
  if (o.n_blocks < per_seq) {
    return invalid_argument(fmt::format(
        "{} KV blocks of {} positions cannot hold one sequence of {} positions (need {})",
        o.n_blocks, o.block_size, o.ctx_size, per_seq));
  }
  TS_ASSIGN_OR_RETURN(model::KvCache kv, model::KvCache::create_paged(c, o.max_running, o.n_blocks,
                                                                      o.block_size, o.kv_dtype));
  auto impl = std::make_unique<Impl>(std::move(model), std::move(tokenizer), o,
                                     clock ? clock : real_clock(), std::move(kv));
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
  const int64_t now = m.clock->now_ns();
  RequestId id = 0;
  {
    std::lock_guard lk(m.mu);
    if (!m.accepting) return Status(ErrorCode::kUnavailable, "the engine is shutting down");
    if (m.n_waiting >= m.opt.max_waiting) {
      return resource_exhausted(
          fmt::format("the queue is full ({} requests waiting); retry later", m.n_waiting));
    }
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

KvBlockFormat Engine::kv_block_format() const {
  const model::KvCache& kv = impl_->kv;
  return {kv.n_layers(), kv.kv_dim(), kv.block_size(), kv.dtype(), kv.block_bytes()};
}

Result<PrefixBlockSet> Engine::export_prefix_cache(int64_t max_bytes,
                                                   const BlockStorage& storage) const {
  {
    std::lock_guard lk(impl_->mu);
    TS_CHECK(!impl_->thread.joinable());  // not running
  }
  PrefixBlockSet set;
  set.format = kv_block_format();
  const std::vector<CachedBlock> cached = impl_->blocks.cached_blocks();
  const std::vector<size_t> kept =
      select_kept_blocks(cached, max_bytes / static_cast<int64_t>(set.format.block_bytes));
  if (kept.empty()) return set;
  TS_ASSIGN_OR_RETURN(std::span<std::byte> out, storage(kept.size() * set.format.block_bytes));
  if (out.size() != kept.size() * set.format.block_bytes) {
    return internal_error("prefix block storage has the wrong size");
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const CachedBlock& c = cached[kept[i]];
    impl_->kv.read_block(c.block, out.subspan(i * set.format.block_bytes, set.format.block_bytes));
    set.blocks.push_back({c.hash, c.parent, c.tokens});
  }
  return set;
}

Result<int64_t> Engine::import_prefix_cache(const PrefixBlockSet& set,
                                            std::span<const std::byte> bytes) {
  Impl& m = *impl_;
  {
    std::lock_guard lk(m.mu);
    TS_CHECK(!m.thread.joinable());  // not started
  }
  if (!(set.format == kv_block_format())) {
    return invalid_argument(fmt::format(
        "prefix blocks of {} layers x {} x {} positions ({}) do not fit this engine's KV pool",
        set.format.n_layers, set.format.kv_dim, set.format.block_size,
        kernels::dtype_name(set.format.dtype)));
  }
  if (bytes.size() != set.bytes()) {
    return invalid_argument(fmt::format("prefix blocks need {} bytes, got {}", set.bytes(),
                                        bytes.size()));
  }
  if (!m.opt.prefix_cache) return int64_t{0};
  const size_t bb = set.format.block_bytes;
  // The most recently used blocks are last: when the pool is smaller, keep the newest.
  const size_t n = std::min<size_t>(set.blocks.size(), static_cast<size_t>(m.blocks.n_free()));
  const size_t first = set.blocks.size() - n;
  int64_t taken = 0;
  for (size_t i = first; i < set.blocks.size(); ++i) {
    const PrefixBlock& pb = set.blocks[i];
    if (static_cast<int64_t>(pb.tokens.size()) != set.format.block_size) {
      return invalid_argument("a prefix block does not hold block_size tokens");
    }
    std::optional<int32_t> b = m.blocks.allocate();
    if (!b) break;
    m.kv.write_block(*b, bytes.subspan(i * bb, bb));
    m.blocks.publish(*b, pb.hash, pb.parent, pb.tokens);
    m.blocks.release(*b);
    ++taken;
  }
  m.update_stats(0);
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
