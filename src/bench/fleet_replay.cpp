#include "tessera/bench/fleet_replay.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tessera/base/clock.h"
#include "tessera/base/rng.h"
#include "tessera/bench/stats.h"
#include "tessera/fleet/idle_policy.h"

namespace tessera::bench {

namespace {

struct Outcome {
  int64_t first_ns = -1;
  bool done = false;
  bool ok = false;
  bool cold = false;
};

}  // namespace

Result<FleetReplayResult> run_fleet_replay(const FleetReplayOptions& o) {
  if (o.models.empty()) return invalid_argument("fleet replay: no models");
  if (o.time_scale <= 0) return invalid_argument("fleet replay: time scale must be > 0");
  fleet::FleetOptions fo;
  fo.active_budget_bytes = o.active_budget_bytes;
  fo.keep_prefix_bytes = o.keep_prefix_bytes;
  fo.tick_ns = 20'000'000;
  const auto scaled_ns = [&](double trace_s) {
    return static_cast<int64_t>(trace_s / o.time_scale * 1e9);
  };
  fo.histogram.bin_width_ns = std::max<int64_t>(scaled_ns(60.0), 1'000'000);  // 1 trace minute
  if (o.policy != "always-on" && o.policy != "fixed" && o.policy != "adaptive") {
    return invalid_argument("fleet replay: policy must be always-on, fixed or adaptive, not '" +
                            o.policy + "'");
  }
  TS_ASSIGN_OR_RETURN(fo.idle_policy,
                      fleet::make_idle_policy({o.policy, o.keep_alive_s / o.time_scale}));
  if (o.shared_device) {
    engine::DeviceSchedulerOptions dso;
    dso.n_threads = o.threads;
    dso.record_iterations = o.record_iterations;
    fo.device = std::make_shared<engine::DeviceScheduler>(dso);
  }
  std::vector<fleet::FleetModelSpec> specs;
  for (const auto& m : o.models) {
    fleet::FleetModelSpec s = m.spec;
    s.engine.n_threads = o.threads;
    s.engine.ttft_slo_ns = static_cast<int64_t>(o.ttft_slo_s * 1e9);
    specs.push_back(std::move(s));
  }
  TS_ASSIGN_OR_RETURN(std::unique_ptr<fleet::FleetManager> f,
                      fleet::FleetManager::create(std::move(specs), fo));
  TS_RETURN_IF_ERROR(f->start());

  Rng rng(o.seed);
  const auto make_request = [&](const std::string& name) {
    const int32_t n_vocab = f->tokenizer(name).n_vocab();
    engine::Request r;
    r.prompt.push_back(1);
    for (int k = 1; k < o.prompt_tokens; ++k) {
      r.prompt.push_back(3 + static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n_vocab - 3)));
    }
    r.sampling.temperature = 0.0f;
    r.max_tokens = o.max_tokens;
    r.ignore_eos = true;
    return r;
  };
  if (o.warmup) {
    std::mutex wmu;
    std::condition_variable wcv;
    size_t left = o.models.size();
    for (const auto& m : o.models) {
      auto id = f->submit(m.spec.name, make_request(m.spec.name), [&](engine::Event&& ev) {
        if (!ev.is_finish()) return;
        std::lock_guard<std::mutex> lock(wmu);
        --left;
        wcv.notify_all();
      });
      if (!id.is_ok()) return id.status().with_context("warm-up of " + m.spec.name);
    }
    std::unique_lock<std::mutex> lock(wmu);
    wcv.wait(lock, [&] { return left == 0; });
    lock.unlock();
    // The warm-up is not the workload: the idle policies start learning at the replay (as the
    // simulator's do), and every model's idle period starts with it.
    f->forget_activity();
  }

  // The schedule: (time, model) over all models, and each request's prompt.
  struct Arrival {
    double t;
    size_t model;
  };
  std::vector<Arrival> schedule;
  for (size_t m = 0; m < o.models.size(); ++m) {
    for (double t : o.models[m].arrivals_s) schedule.push_back({t, m});
  }
  std::stable_sort(schedule.begin(), schedule.end(),
                   [](const Arrival& a, const Arrival& b) { return a.t < b.t; });
  std::vector<Outcome> outcomes(schedule.size());
  std::mutex mu;
  std::condition_variable cv;
  size_t n_done = 0;

  FleetReplayResult res;
  res.policy = o.policy;
  const std::vector<fleet::ModelStatus> before = f->status();
  const std::vector<engine::DeviceClientStats> device_before =
      fo.device ? fo.device->stats() : std::vector<engine::DeviceClientStats>{};
  const Clock* clock = real_clock();
  const int64_t t0 = clock->now_ns();
  for (size_t i = 0; i < schedule.size(); ++i) {
    const Arrival& a = schedule[i];
    const int64_t due = t0 + static_cast<int64_t>(a.t * 1e9);
    for (int64_t now = clock->now_ns(); now < due; now = clock->now_ns()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(due - now, 50'000'000)));
    }
    res.max_dispatch_lag_s = std::max(res.max_dispatch_lag_s, (clock->now_ns() - due) * 1e-9);
    const std::string& name = o.models[a.model].spec.name;
    // Whether this request is a cold start, as the controller counts it (only this thread
    // submits, so the count moves by this request alone).
    const int64_t cold_before = f->status(name)->cold_starts;
    auto id = f->submit(name, make_request(name), [&, i](engine::Event&& ev) {
      std::lock_guard<std::mutex> lock(mu);
      Outcome& out = outcomes[i];
      if (out.first_ns < 0 && !ev.is_finish()) out.first_ns = clock->now_ns();
      if (auto* fin = std::get_if<engine::FinishEvent>(&ev.body)) {
        out.ok = fin->reason == engine::FinishReason::kStop ||
                 fin->reason == engine::FinishReason::kLength;
        out.done = true;
        ++n_done;
        cv.notify_all();
      }
    });
    {
      const int64_t cold_after = f->status(name)->cold_starts;
      std::lock_guard<std::mutex> lock(mu);
      outcomes[i].cold = cold_after > cold_before;
      if (!id.is_ok()) {
        outcomes[i].done = true;
        ++n_done;
      }
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return n_done == schedule.size(); });
  }
  // Measure to the same point for every policy: the last arrival plus the tail.
  const double last = schedule.empty() ? 0.0 : schedule.back().t;
  const int64_t end = t0 + static_cast<int64_t>((last + o.tail_s) * 1e9);
  while (clock->now_ns() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<fleet::ModelStatus> after = f->status();
  const std::vector<engine::DeviceClientStats> device =
      fo.device ? fo.device->stats() : std::vector<engine::DeviceClientStats>{};
  res.duration_s = static_cast<double>(clock->now_ns() - t0) * 1e-9;
  if (fo.device && o.record_iterations) {
    const auto rel = [&](int64_t ns) { return static_cast<double>(ns - t0) * 1e-9; };
    for (const engine::DeviceIteration& it : fo.device->iterations()) {
      if (it.asked_ns < t0) continue;
      const std::string& client = device[static_cast<size_t>(it.client)].name;
      for (size_t m = 0; m < o.models.size(); ++m) {
        if (o.models[m].spec.name != client) continue;
        res.iterations_log.push_back({m, rel(it.asked_ns), rel(it.granted_ns), rel(it.acquired_ns),
                                      rel(it.released_ns), it.prefill_rows, it.decode_rows});
      }
    }
  }
  f->stop();

  std::vector<double> all_ttft;
  res.models.resize(o.models.size());
  for (size_t m = 0; m < o.models.size(); ++m) {
    FleetReplayModelResult& r = res.models[m];
    r.name = o.models[m].spec.name;
    r.source = o.models[m].source;
    r.active_bytes = after[m].active_bytes;
    r.cold_starts = after[m].cold_starts - before[m].cold_starts;
    r.resumes = after[m].resumes - before[m].resumes;
    r.suspends = after[m].suspends - before[m].suspends;
    r.mean_resume_s = after[m].mean_resume_s;  // the fleet is this replay's own: all its moves
    r.mean_suspend_s = after[m].mean_suspend_s;
    r.memory_gb_s = (after[m].memory_seconds - before[m].memory_seconds) * 1e-9;
    r.idle_memory_gb_s = (after[m].idle_memory_seconds - before[m].idle_memory_seconds) * 1e-9;
    for (engine::DeviceClientStats c : device) {
      if (c.name != r.name) continue;
      for (const auto& b : device_before) {  // the warm-up's share
        if (b.name != c.name) continue;
        c.grants -= b.grants;
        c.busy_ns -= b.busy_ns;
        c.wait_ns -= b.wait_ns;
        c.prefill_grants -= b.prefill_grants;
        c.prefill_rows -= b.prefill_rows;
        c.prefill_held_ns -= b.prefill_held_ns;
        c.decode_grants -= b.decode_grants;
        c.decode_rows -= b.decode_rows;
        c.decode_held_ns -= b.decode_held_ns;
      }
      r.device_grants = c.grants;
      r.device_busy_s = static_cast<double>(c.busy_ns) * 1e-9;
      r.device_wait_s = static_cast<double>(c.wait_ns) * 1e-9;
      r.prefill_grants = c.prefill_grants;
      r.prefill_rows = c.prefill_rows;
      r.prefill_held_s = static_cast<double>(c.prefill_held_ns) * 1e-9;
      r.decode_grants = c.decode_grants;
      r.decode_rows = c.decode_rows;
      r.decode_held_s = static_cast<double>(c.decode_held_ns) * 1e-9;
    }
  }
  for (size_t i = 0; i < schedule.size(); ++i) {
    FleetReplayModelResult& r = res.models[schedule[i].model];
    const Outcome& out = outcomes[i];
    ++r.requests;
    const int64_t due = t0 + static_cast<int64_t>(schedule[i].t * 1e9);
    res.requests_log.push_back({schedule[i].model, schedule[i].t, -1.0, out.cold});
    if (!out.ok || out.first_ns < 0) {
      ++r.errors;
      continue;
    }
    const double ttft = static_cast<double>(out.first_ns - due) * 1e-9;
    res.requests_log.back().ttft_s = ttft;
    r.ttft_s.push_back(ttft);
    all_ttft.push_back(ttft);
    if (ttft <= o.ttft_slo_s) ++r.slo_met;
  }
  for (const auto& r : res.models) {
    res.requests += r.requests;
    res.errors += r.errors;
    res.cold_starts += r.cold_starts;
    res.slo_met += r.slo_met;
    res.memory_gb_s += r.memory_gb_s;
    res.idle_memory_gb_s += r.idle_memory_gb_s;
  }
  if (!all_ttft.empty()) {
    res.ttft_p50_s = percentile(all_ttft, 50.0);
    res.ttft_p99_s = percentile(all_ttft, 99.0);
  }
  return res;
}

}  // namespace tessera::bench
