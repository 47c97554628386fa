#include "tessera/bench/resume_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "tessera/base/clock.h"
#include "tessera/bench/machine_bench.h"
#include "tessera/fleet/fleet_manager.h"

namespace tessera::bench {

namespace {

// Submits a one-token request and waits for its first event; returns seconds from submit.
Result<double> time_first_token(fleet::FleetManager& f, const std::string& name,
                                int prompt_tokens, int32_t n_vocab) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    int64_t first_ns = -1;
    bool done = false;
    Status error;
  };
  auto w = std::make_shared<Wait>();
  engine::Request r;
  r.prompt.push_back(1);
  for (int i = 1; i < prompt_tokens; ++i) r.prompt.push_back(3 + (i * 37) % (n_vocab - 3));
  r.sampling.temperature = 0.0f;
  r.max_tokens = 1;
  r.ignore_eos = true;
  const Clock* clock = real_clock();
  const int64_t t0 = clock->now_ns();
  auto id = f.submit(name, std::move(r), [w, clock](engine::Event&& ev) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->first_ns < 0) w->first_ns = clock->now_ns();
    if (auto* fin = std::get_if<engine::FinishEvent>(&ev.body)) {
      if (fin->reason == engine::FinishReason::kError) w->error = fin->error;
      w->done = true;
      w->cv.notify_all();
    }
  });
  if (!id.is_ok()) return id.status();
  std::unique_lock<std::mutex> lock(w->mu);
  w->cv.wait(lock, [&] { return w->done; });
  if (!w->error.is_ok()) return w->error;
  return static_cast<double>(w->first_ns - t0) * 1e-9;
}

}  // namespace

static Status drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
  (void)::fdatasync(fd);
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (rc != 0) return io_error(fmt::format("{}: posix_fadvise: {}", path, std::strerror(rc)));
  return Status::ok();
}

Result<double> cold_sequential_read_seconds(const std::string& path) {
  TS_RETURN_IF_ERROR(drop_page_cache(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
  constexpr size_t kChunk = size_t{8} << 20;
  std::unique_ptr<char[]> buf(new char[kChunk]);
  const int64_t t0 = real_clock()->now_ns();
  off_t off = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.get(), kChunk, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return io_error(fmt::format("{}: read: {}", path, std::strerror(errno)));
    }
    if (n == 0) break;
    off += n;
  }
  const double s = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
  ::close(fd);
  return s;
}

Result<ResumeBenchResult> run_resume_bench(const ResumeBenchOptions& o) {
  ResumeBenchResult res;
  if (o.reps < 1) return invalid_argument("--reps must be >= 1");
  if (o.prompt_tokens < 1) return invalid_argument("--prompt-tokens must be >= 1");
  res.read_gbps = o.read_gbps;
  if (res.read_gbps <= 0) {
    MachineBenchOptions mo;
    mo.threads = o.threads;
    mo.reps = 3;
    res.read_gbps = measure_machine(mo).read_gbps;
  }
  const std::string name = "model";
  fleet::FleetModelSpec spec;
  spec.name = name;
  spec.path = o.model;
  spec.engine.max_running = 1;
  spec.engine.ctx_size = o.ctx_size;
  fleet::FleetOptions fo;
  fo.io_threads = o.io_threads;
  fo.keep_prefix_bytes = o.keep_prefix_bytes;
  fo.tick_ns = 1'000'000'000;  // the request, not the tick, wakes the control thread
  engine::DeviceSchedulerOptions dso;
  dso.n_threads = o.threads;
  fo.device = std::make_shared<engine::DeviceScheduler>(dso);
  auto created = fleet::FleetManager::create({spec}, fo);
  if (!created.is_ok()) return created.status();
  std::unique_ptr<fleet::FleetManager> f = std::move(created).value();
  TS_RETURN_IF_ERROR(f->start());
  const auto st = f->status(name);
  res.weight_bytes = st->weight_bytes;
  res.kv_bytes = st->active_bytes - st->weight_bytes;
  const int32_t n_vocab = static_cast<int32_t>(f->tokenizer(name).n_vocab());
  // One untimed request first: the first forward allocates scratch buffers.
  TS_RETURN_IF_ERROR(time_first_token(*f, name, o.prompt_tokens, n_vocab).status());
  for (int rep = 0; rep < o.reps; ++rep) {
    TS_ASSIGN_OR_RETURN(double warm, time_first_token(*f, name, o.prompt_tokens, n_vocab));
    res.warm_ttft_s.push_back(warm);
    const int64_t s0 = real_clock()->now_ns();
    TS_RETURN_IF_ERROR(f->suspend(name, "bench"));
    res.suspend_s.push_back(static_cast<double>(real_clock()->now_ns() - s0) * 1e-9);
    TS_ASSIGN_OR_RETURN(double host, time_first_token(*f, name, o.prompt_tokens, n_vocab));
    res.host_ttft_s.push_back(host);
    res.host_resume_s.push_back(f->status(name)->last_bring_up_s);
    if (!o.disk) continue;
    TS_RETURN_IF_ERROR(f->suspend(name, "bench"));
    TS_RETURN_IF_ERROR(f->evict(name, "bench"));
    // The bound, read while no page of the file is mapped (mapped pages stay cached), then
    // dropped again so the model comes back from the disk.
    TS_ASSIGN_OR_RETURN(double read, cold_sequential_read_seconds(o.model));
    res.disk_read_s.push_back(read);
    TS_RETURN_IF_ERROR(drop_page_cache(o.model));
    TS_ASSIGN_OR_RETURN(double disk, time_first_token(*f, name, o.prompt_tokens, n_vocab));
    res.disk_ttft_s.push_back(disk);
    res.disk_resume_s.push_back(f->status(name)->last_bring_up_s);
  }
  f->stop();
  return res;
}

}  // namespace tessera::bench
