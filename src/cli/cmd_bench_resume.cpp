// `tessera bench resume`: time from a request to the first token of a suspended (host tier) and
// an evicted (disk tier) model, against the bytes-at-bandwidth and cold-read bounds.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/resume_bench.h"
#include "tessera/bench/stats.h"

namespace tessera::cli {
namespace {

struct ResumeArgs {
  bench::ResumeBenchOptions o;
  bool no_disk = false;
  bool json = false;
};

double median(const std::vector<double>& v) { return v.empty() ? 0.0 : bench::summarize(v).median; }

int run_bench_resume(ResumeArgs a) {
  a.o.disk = !a.no_disk;
  auto r = bench::run_resume_bench(a.o);
  if (!r.is_ok()) return fail(r.status().with_context("bench resume"));
  const bench::ResumeBenchResult& res = *r;
  const double host_bound = res.host_bound_s();
  const double disk_bound = median(res.disk_read_s);
  if (a.json) {
    nlohmann::json j = {
        {"environment", bench::describe_environment(a.o.threads)},
        {"model", a.o.model},
        {"weight_bytes", res.weight_bytes},
        {"kv_bytes", res.kv_bytes},
        {"read_gbps", res.read_gbps},
        {"io_threads", a.o.io_threads},
        {"prompt_tokens", a.o.prompt_tokens},
        {"keep_prefix_bytes", a.o.keep_prefix_bytes},
        {"host_bound_s", host_bound},
        {"warm_ttft_s", res.warm_ttft_s},
        {"host_ttft_s", res.host_ttft_s},
        {"host_resume_s", res.host_resume_s},
        {"suspend_s", res.suspend_s},
        {"disk_ttft_s", res.disk_ttft_s},
        {"disk_resume_s", res.disk_resume_s},
        {"disk_read_s", res.disk_read_s},
    };
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model %s: %.1f MiB weights + %.1f MiB KV; memory read bandwidth %.1f GB/s; "
              "%d-token prompt, %.0f MiB of prefix blocks kept; %d reps, medians\n",
              a.o.model.c_str(), res.weight_bytes / 1048576.0, res.kv_bytes / 1048576.0,
              res.read_gbps, a.o.prompt_tokens, a.o.keep_prefix_bytes / 1048576.0, a.o.reps);
  const double warm = median(res.warm_ttft_s);
  std::printf("  %-26s %10s %10s %10s %10s %8s\n", "", "resume ms", "TTFT ms", "added ms",
              "bound ms", "ratio");
  std::printf("  %-26s %10s %10.2f %10s %10s %8s\n", "warm (active)", "-", warm * 1e3, "-", "-",
              "-");
  std::printf("  %-26s %10.2f %10.2f %10.2f %10.2f %7.2fx\n", "host tier (suspended)",
              median(res.host_resume_s) * 1e3, median(res.host_ttft_s) * 1e3,
              (median(res.host_ttft_s) - warm) * 1e3, host_bound * 1e3,
              median(res.host_ttft_s) / host_bound);
  if (!res.disk_ttft_s.empty()) {
    std::printf("  %-26s %10.2f %10.2f %10.2f %10.2f %7.2fx\n", "disk tier (evicted, cold)",
                median(res.disk_resume_s) * 1e3, median(res.disk_ttft_s) * 1e3,
                (median(res.disk_ttft_s) - warm) * 1e3, disk_bound * 1e3,
                median(res.disk_ttft_s) / disk_bound);
  }
  std::printf("  ratio = TTFT / bound; added = TTFT - warm TTFT. Bounds: host = weight bytes at the "
              "read bandwidth; disk = one cold sequential read of the file\n");
  return 0;
}

}  // namespace

void add_bench_resume_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<ResumeArgs>();
  CLI::App* c = bench->add_subcommand(
      "resume", "Time to first token of a suspended (host tier) and evicted (disk) model");
  c->add_option("--model,-m", a->o.model, "Model file (GGUF)")->required();
  c->add_option("--threads,-t", a->o.threads, "Compute threads (default: all cores)");
  c->add_option("--io-threads", a->o.io_threads, "Threads prefaulting weights on resume")
      ->capture_default_str();
  c->add_option("--reps,-r", a->o.reps, "Repetitions")->capture_default_str();
  c->add_option("--prompt-tokens,-p", a->o.prompt_tokens, "Prompt tokens of the timed request")
      ->capture_default_str();
  c->add_option("--keep-prefix-cache", a->o.keep_prefix_bytes,
                "Prefix-cache bytes the suspended model keeps (0: none; its prompt then runs "
                "again after a resume)")
      ->capture_default_str();
  c->add_option("--read-gbps", a->o.read_gbps,
                "Memory read bandwidth for the host bound (default: measure now)");
  c->add_flag("--no-disk", a->no_disk, "Skip the disk tier");
  c->add_flag("--json", a->json, "Print a JSON record");
  c->callback([&run, a] { run = [a] { return run_bench_resume(*a); }; });
}

}  // namespace tessera::cli
