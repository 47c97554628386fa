#include "tessera/bench/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "tessera/base/check.h"
#include "tessera/base/rng.h"

namespace tessera::bench {

std::string_view scenario_name(Scenario s) {
  switch (s) {
    case Scenario::kOffline: return "offline";
    case Scenario::kServer: return "server";
    case Scenario::kSingleStream: return "single-stream";
    case Scenario::kConcurrency: return "concurrency";
    case Scenario::kTrace: return "trace";
  }
  return "?";
}

Result<Scenario> parse_scenario(std::string_view name) {
  for (Scenario s : {Scenario::kOffline, Scenario::kServer, Scenario::kSingleStream,
                     Scenario::kConcurrency, Scenario::kTrace}) {
    if (name == scenario_name(s)) return s;
  }
  return invalid_argument("unknown scenario '" + std::string(name) +
                          "': expected offline, server, single-stream, concurrency or trace");
}

bool is_closed_loop(Scenario s) {
  return s == Scenario::kSingleStream || s == Scenario::kConcurrency;
}

Status validate(const TestSettings& s, size_t library_size) {
  if (library_size == 0) return invalid_argument("the prompt library is empty");
  if (s.min_queries < 1) return invalid_argument("the minimum query count must be >= 1");
  if (s.min_duration_s < 0 || !std::isfinite(s.min_duration_s)) {
    return invalid_argument("the minimum duration must be a finite number of seconds >= 0");
  }
  if (s.warmup_queries < 0) return invalid_argument("warm-up queries must be >= 0");
  if (s.concurrency < 0) return invalid_argument("concurrency must be >= 0");
  if (s.scenario == Scenario::kConcurrency && s.concurrency < 1) {
    return invalid_argument("the concurrency scenario needs --concurrency N >= 1");
  }
  if (s.scenario == Scenario::kServer) TS_RETURN_IF_ERROR(validate(s.arrivals));
  if (s.scenario == Scenario::kTrace) {
    if (s.trace_times_s.empty()) return invalid_argument("the trace scenario needs a trace");
    if (s.trace_times_s.size() > library_size) {
      return invalid_argument("the trace has more arrivals than samples");
    }
  }
  return Status::ok();
}

namespace {

constexpr int64_t kMaxScheduled = int64_t{1} << 24;  // a runaway min_duration at a high rate

class SampleOrder {
 public:
  SampleOrder(size_t n, bool shuffle, uint64_t seed)
      : n_(n), shuffle_(shuffle), rng_(seed ^ 0x5a) {}
  size_t next() {
    if (shuffle_) return static_cast<size_t>(rng_.next_u64() % n_);
    return i_++ % n_;
  }

 private:
  size_t n_;
  bool shuffle_;
  Rng rng_;
  size_t i_ = 0;
};

}  // namespace

std::vector<ScheduledQuery> draw_schedule(const TestSettings& s, size_t library_size) {
  std::vector<ScheduledQuery> out;
  SampleOrder order(library_size, s.shuffle_samples, s.seed);
  switch (s.scenario) {
    case Scenario::kOffline:
      for (int64_t i = 0; i < s.min_queries; ++i) out.push_back({0.0, order.next()});
      break;
    case Scenario::kSingleStream:
    case Scenario::kConcurrency:
      for (int64_t i = 0; i < s.min_queries; ++i) out.push_back({-1.0, order.next()});
      break;
    case Scenario::kServer: {
      Rng rng(s.seed);
      double t = 0.0;
      for (int64_t i = 0; i < kMaxScheduled; ++i) {
        if (i >= s.min_queries && t >= s.min_duration_s) break;
        out.push_back({t, order.next()});
        t += draw_gap_s(s.arrivals, rng);
      }
      break;
    }
    case Scenario::kTrace:
      for (size_t i = 0; i < s.trace_times_s.size(); ++i) {
        out.push_back({s.trace_times_s[i], i});
      }
      break;
  }
  return out;
}

// Records live in fixed blocks so backend threads can hold on to one while the issuing thread
// adds more (a growing vector would move them).
struct LoadGenerator::Impl final : QueryObserver {
  static constexpr size_t kBlock = 4096;
  static constexpr size_t kMaxBlocks = (size_t{1} << 26) / kBlock;

  SystemUnderTest* sut;
  const QuerySampleLibrary* library;
  Sleeper* sleeper;
  const Clock* clock;

  std::vector<std::unique_ptr<QueryRecord[]>> blocks;  // sized once; slots filled as needed
  uint64_t n_records = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint64_t> done;  // ids whose terminal call arrived, not yet seen by the issuer
  int64_t in_flight = 0;
  int64_t completed = 0;
  int64_t errors = 0;
  int64_t output_tokens = 0;

  Progress progress;
  int64_t next_progress_ns = 0;
  int64_t origin_ns = 0;  // the measured start (absolute clock time)

  QueryRecord& rec(uint64_t id) { return blocks[id / kBlock][id % kBlock]; }

  QueryRecord& new_record() {
    const uint64_t id = n_records++;
    TS_CHECK_MSG(id / kBlock < kMaxBlocks, "too many queries in one run");
    if (!blocks[id / kBlock]) blocks[id / kBlock] = std::make_unique<QueryRecord[]>(kBlock);
    QueryRecord& r = rec(id);
    r.id = id;
    return r;
  }

  // --- observer side (backend threads) ---
  void on_chunk(uint64_t id, int32_t n_tokens) override {
    const int64_t now = clock->now_ns();
    QueryRecord& r = rec(id);
    if (!r.has_first_token()) r.first_token_ns = now;
    r.chunk_ns.push_back(now);
    r.chunk_tokens.push_back(n_tokens);
  }
  void on_complete(uint64_t id, const CompletionInfo& info) override {
    QueryRecord& r = rec(id);
    r.end_ns = clock->now_ns();
    r.ok = true;
    int32_t sum = 0;
    for (int32_t n : r.chunk_tokens) sum += n;
    r.output_tokens = info.output_tokens >= 0 ? info.output_tokens : sum;
    r.output_tokens_exact = info.output_tokens >= 0;
    if (info.prompt_tokens >= 0) r.input_tokens = info.prompt_tokens;
    r.server_ttft_ms = info.server_ttft_ms;
    r.server_e2e_ms = info.server_e2e_ms;
    finish(id, false, r.output_tokens);
  }
  void on_error(uint64_t id, QueryError error) override {
    QueryRecord& r = rec(id);
    r.end_ns = clock->now_ns();
    r.ok = false;
    int32_t sum = 0;
    for (int32_t n : r.chunk_tokens) sum += n;
    r.output_tokens = sum;
    r.error = std::move(error);
    finish(id, true, sum);
  }
  void finish(uint64_t id, bool error, int32_t tokens) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done.push_back(id);
      --in_flight;
      ++completed;
      errors += error ? 1 : 0;
      output_tokens += tokens;
    }
    cv.notify_one();
  }

  // --- issuing side ---
  void issue(size_t sample_index, int64_t scheduled_abs, bool warmup) {
    QueryRecord& r = new_record();
    const QuerySample& sample = library->sample(sample_index);
    r.sample_index = sample_index;
    r.warmup = warmup;
    r.input_tokens = sample.input_tokens;
    r.chunk_ns.reserve(static_cast<size_t>(std::clamp(sample.max_output_tokens, 1, 256)));
    r.chunk_tokens.reserve(r.chunk_ns.capacity());
    r.scheduled_ns = scheduled_abs;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++in_flight;
    }
    ++progress.issued;
    r.issued_ns = clock->now_ns();
    sut->issue(Query{r.id, sample_index, &sample}, this);
  }

  void report_progress(bool force) {
    if (!progress_fn) return;
    const int64_t now = clock->now_ns();
    if (!force && now < next_progress_ns) return;
    next_progress_ns = now + progress_interval_ns;
    {
      std::lock_guard<std::mutex> lock(mu);
      progress.completed = completed;
      progress.errors = errors;
      progress.in_flight = in_flight;
      progress.output_tokens = output_tokens;
    }
    progress.elapsed_s = (now - origin_ns) * 1e-9;
    progress_fn(progress);
  }

  // Waits (in real time, waking for progress reports) until `pred` holds under the lock.
  template <typename Pred>
  void wait_for(Pred pred) {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        const auto slice = std::chrono::nanoseconds(progress_fn ? progress_interval_ns : 100'000'000);
        if (cv.wait_for(lock, slice, [&] { return pred(); })) return;
      }
      report_progress(false);
    }
  }

  void sleep_until(int64_t t_abs) {
    while (clock->now_ns() < t_abs) {
      const int64_t step = progress_fn ? std::min(t_abs, clock->now_ns() + progress_interval_ns) : t_abs;
      sleeper->sleep_until_ns(step);
      report_progress(false);
    }
  }

  std::function<void(const Progress&)> progress_fn;
  int64_t progress_interval_ns = 250'000'000;
};

LoadGenerator::LoadGenerator(SystemUnderTest* sut, const QuerySampleLibrary* library,
                             Sleeper* sleeper)
    : impl_(std::make_unique<Impl>()) {
  impl_->sut = sut;
  impl_->library = library;
  impl_->sleeper = sleeper;
  impl_->clock = &sleeper->clock();
}

LoadGenerator::~LoadGenerator() = default;

Result<RunResult> LoadGenerator::run(const TestSettings& s) {
  TS_RETURN_IF_ERROR(validate(s, impl_->library->size()));
  TS_RETURN_IF_ERROR(impl_->sut->prepare(*impl_->library));
  Impl& m = *impl_;
  m.blocks.clear();
  m.blocks.resize(Impl::kMaxBlocks);
  m.n_records = 0;
  m.done.clear();
  m.in_flight = m.completed = m.errors = m.output_tokens = 0;
  m.progress_fn = s.on_progress;
  m.progress_interval_ns = static_cast<int64_t>(std::max(0.01, s.progress_interval_s) * 1e9);
  const std::vector<ScheduledQuery> schedule = draw_schedule(s, m.library->size());
  const bool closed = is_closed_loop(s.scenario);
  // Closed loop: the number of slots; open loop: a cap on queries in flight (0: none).
  const int64_t slots = s.scenario == Scenario::kSingleStream ? 1 : s.concurrency;

  // Warm-up: run to completion before the measured start, at the same concurrency cap.
  m.origin_ns = m.clock->now_ns();
  if (s.warmup_queries > 0) {
    m.progress = Progress{};
    m.progress.warmup = true;
    m.progress.planned = s.warmup_queries;
    SampleOrder order(m.library->size(), true, s.seed ^ 0x77);
    const int64_t cap = slots > 0 ? slots : s.warmup_queries;
    for (int32_t i = 0; i < s.warmup_queries; ++i) {
      m.wait_for([&] { return m.in_flight < cap; });
      m.issue(order.next(), m.clock->now_ns(), true);
    }
    m.wait_for([&] { return m.in_flight == 0; });
    m.done.clear();
  }

  const int64_t start = m.clock->now_ns();
  m.origin_ns = start;
  m.progress = Progress{};
  m.progress.planned = static_cast<int64_t>(schedule.size());
  m.next_progress_ns = start;
  const uint64_t first_measured = m.n_records;
  m.report_progress(true);

  if (!closed) {
    for (const ScheduledQuery& q : schedule) {
      const int64_t t = start + static_cast<int64_t>(std::llround(q.t_s * 1e9));
      if (slots > 0) m.wait_for([&] { return m.in_flight < slots; });
      m.sleep_until(t);
      m.issue(q.sample_index, t, false);
    }
  } else {
    // Past the drawn schedule, continue the same sample order.
    SampleOrder more(m.library->size(), s.shuffle_samples, s.seed);
    for (size_t i = 0; i < schedule.size(); ++i) more.next();
    size_t next = 0;
    auto next_sample = [&] { return next < schedule.size() ? schedule[next++].sample_index : more.next(); };
    auto want_more = [&] {
      return static_cast<int64_t>(m.progress.issued) < s.min_queries ||
             (m.clock->now_ns() - start) < static_cast<int64_t>(s.min_duration_s * 1e9);
    };
    for (int64_t i = 0; i < slots && want_more(); ++i) m.issue(next_sample(), start, false);
    for (;;) {
      m.wait_for([&] { return !m.done.empty() || m.in_flight == 0; });
      uint64_t id;
      {
        std::lock_guard<std::mutex> lock(m.mu);
        if (m.done.empty()) break;  // nothing in flight and nothing to hand a slot to
        id = m.done.front();
        m.done.pop_front();
      }
      // The freed slot's next query was due the moment the previous one ended.
      if (want_more()) m.issue(next_sample(), m.rec(id).end_ns, false);
    }
  }
  m.wait_for([&] { return m.in_flight == 0; });
  m.report_progress(true);

  RunResult out;
  out.records.reserve(m.n_records);
  int64_t last_end = start;
  for (uint64_t id = 0; id < m.n_records; ++id) {
    QueryRecord r = std::move(m.rec(id));
    if (id >= first_measured && r.has_end()) last_end = std::max(last_end, r.end_ns);
    r.scheduled_ns -= start;
    r.issued_ns -= start;
    if (r.has_first_token()) r.first_token_ns -= start;
    if (r.has_end()) r.end_ns -= start;
    for (int64_t& t : r.chunk_ns) t -= start;
    out.records.push_back(std::move(r));
  }
  out.measured_queries = static_cast<int64_t>(m.n_records - first_measured);
  out.duration_s = (last_end - start) * 1e-9;
  m.blocks.clear();
  return out;
}

}  // namespace tessera::bench
