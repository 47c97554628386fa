// `tessera bench machine|model`: measured ceilings of this machine or of an OpenCL device
// (--device), and model throughput with roofline figures against them. Records describe
// themselves (commit, compiler, CPU, threads, device, model, dtype) in --json output.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "spec_args.h"
#include "tessera/bench/device_bench.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/machine_bench.h"
#include "tessera/bench/model_bench.h"
#include "tessera/bench/spec_bench.h"
#include "tessera/device/device.h"
#include "tessera/device/device_info.h"
#include "tessera/model/architecture.h"

namespace tessera::cli {
namespace {

struct BenchArgs {
  std::string model;
  std::string machine_json;
  int threads = 0;
  int reps = 5;
  int32_t prompt_tokens = 512;
  int32_t gen_tokens = 128;
  int64_t buffer_mib = 1024;
  bool json = false;
  bool no_repack = false;
  bool no_adjacent_probe = false;
  bool ab = false;
  // --spec: speculative decode, off vs on (bench/spec_bench.h)
  SpecArgs spec;
  std::string tokenizer;
  std::string spec_prompt;
  int32_t streams = 1;
  float temperature = 0.0f;
  bool print_prompt = false;
  std::string device = "cpu";  // --device (bench machine, bench model)
};

nlohmann::json ceilings_json(const bench::MachineCeilings& c) {
  return {{"read_gbps", c.read_gbps}, {"fma_gflops", c.fma_gflops},
          {"read_gbps_median", c.read_gbps_median}, {"fma_gflops_median", c.fma_gflops_median},
          {"fma_isa", c.fma_isa}, {"first_touch_us_per_page", c.first_touch_us_per_page},
          {"threads", c.threads},     {"buffer_bytes", c.buffer_bytes}, {"reps", c.reps}};
}

nlohmann::json device_ceilings_json(const bench::DeviceCeilings& c) {
  return {{"device", fmt::format("opencl:{}", c.index)},
          {"name", c.name},
          {"platform", c.platform},
          {"type", c.type},
          {"compute_units", c.compute_units},
          {"read_gbps", c.read_gbps},
          {"fma_gflops", c.fma_gflops},
          {"read_gbps_median", c.read_gbps_median},
          {"fma_gflops_median", c.fma_gflops_median},
          {"buffer_bytes", c.buffer_bytes},
          {"reps", c.reps},
          {"read_kernel", c.read_kernel},
          {"fma_kernel", c.fma_kernel},
          {"read_launches_per_pass", c.read_launches},
          {"fma_launches_per_pass", c.fma_launches},
          {"fma_work_items", c.fma_work_items},
          {"fma_iterations", c.fma_iterations}};
}

Result<bench::DeviceCeilings> measure_device(int index, int reps, int64_t buffer_bytes) {
  TS_ASSIGN_OR_RETURN(device::Device dev, device::Device::open(index));
  bench::DeviceBenchOptions o;
  o.reps = reps;
  o.buffer_bytes = buffer_bytes;
  return bench::measure_device(dev, o);
}

// `bench machine --device opencl:N`: the device's read bandwidth and f32 FMA throughput.
int run_bench_device(const BenchArgs& a, int index) {
  auto c = measure_device(index, a.reps, a.buffer_mib << 20);
  if (!c.is_ok()) return fail(c.status());
  if (a.json) {
    nlohmann::json j = {{"environment", bench::describe_environment(hardware_threads())},
                        {"device", device_ceilings_json(*c)}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("device:            opencl:%d %s (%s, %s), %u compute units\n", c->index,
              c->name.c_str(), c->type.c_str(), c->platform.c_str(), c->compute_units);
  std::printf("memory read:       %.1f GB/s   (best of %d passes over %lld MiB, %d reads each, "
              "%s; median %.1f)\n",
              c->read_gbps, c->reps, static_cast<long long>(c->buffer_bytes >> 20),
              c->read_launches, c->read_kernel.c_str(), c->read_gbps_median);
  std::printf("peak f32 FMA:      %.1f GFLOP/s (best of %d, %s on %lld work-items; median "
              "%.1f)\n",
              c->fma_gflops, c->reps, c->fma_kernel.c_str(),
              static_cast<long long>(c->fma_work_items), c->fma_gflops_median);
  if (c->type == "cpu") {
    std::printf("note:              this OpenCL device runs on the host's CPU cores (%s): CPU "
                "figures, not a GPU's\n",
                bench::cpu_model_name().c_str());
  }
  return 0;
}

int run_bench_machine(const BenchArgs& a) {
  auto device = parse_device(a.device);
  if (!device.is_ok()) return fail(device.status());
  if (*device >= 0) return run_bench_device(a, *device);
  bench::MachineBenchOptions o;
  o.threads = a.threads;
  o.reps = a.reps;
  o.buffer_bytes = a.buffer_mib << 20;
  const bench::MachineCeilings c = bench::measure_machine(o);
  if (a.json) {
    nlohmann::json j = {{"environment", bench::describe_environment(c.threads)},
                        {"machine", ceilings_json(c)}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("cpu:               %s (%s)\n", bench::cpu_model_name().c_str(),
              bench::cpu_simd_flags().c_str());
  std::printf("threads:           %d\n", c.threads);
  std::printf("memory read:       %.1f GB/s   (best of %d passes over %lld MiB; median %.1f)\n",
              c.read_gbps, c.reps, static_cast<long long>(c.buffer_bytes >> 20), c.read_gbps_median);
  std::printf("peak f32 FMA:      %.1f GFLOP/s (best of %d, %s chains; median %.1f)\n", c.fma_gflops,
              c.reps, c.fma_isa.c_str(), c.fma_gflops_median);
  std::printf("fresh memory:      %.2f us per 4 KiB page at first write (%.0f MB/s; median of %d)\n",
              c.first_touch_us_per_page,
              c.first_touch_us_per_page > 0 ? 4.096e3 / c.first_touch_us_per_page : 0.0, c.reps);
  return 0;
}

Result<bench::MachineCeilings> ceilings_for(const BenchArgs& a, int threads) {
  bench::MachineCeilings c;
  if (!a.machine_json.empty()) {
    std::ifstream in(a.machine_json);
    if (!in) return not_found("cannot read " + a.machine_json);
    try {
      auto j = nlohmann::json::parse(in);
      const auto& m = j.contains("machine") ? j["machine"] : j;
      c.read_gbps = m.at("read_gbps").get<double>();
      c.fma_gflops = m.at("fma_gflops").get<double>();
      c.fma_isa = m.value("fma_isa", "");
      c.threads = m.value("threads", threads);
    } catch (const std::exception& e) {
      return invalid_argument(fmt::format("{}: not a `bench machine --json` record: {}",
                                          a.machine_json, e.what()));
    }
    return c;
  }
  bench::MachineBenchOptions o;
  o.threads = threads;
  o.reps = 5;
  return bench::measure_machine(o);
}

std::string dominant_dtype(const model::ModelFile& f) {
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : f.tensors) bytes[std::string(kernels::dtype_name(t.dtype))] += t.n_bytes;
  std::string best;
  uint64_t most = 0;
  for (const auto& [k, v] : bytes) {
    if (v > most) most = v, best = k;
  }
  return best;
}

// `bench model --spec`'s JSON record: the model, the speculation, every run and the ratios.
nlohmann::json spec_bench_record(const BenchArgs& a, const model::Model& m,
                                 const bench::SpecBenchOptions& o, const bench::SpecBenchResult& res,
                                 bool all_same) {
  const std::string method(engine::spec_method_name(o.engine.spec.method));
  const bench::Summary dr = res.decode_ratio();
  const bench::Summary orat = res.output_ratio();
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : res.runs) {
    runs.push_back({{"speculative", run.speculative}, {"decode_tokens_per_second", run.decode_tps},
                    {"output_tokens_per_second", run.output_tps}, {"seconds", run.seconds},
                    {"output_tokens", run.output_tokens}, {"draft_tokens", run.draft_tokens},
                    {"accepted_tokens", run.accepted_tokens}, {"acceptance_rate", run.acceptance()},
                    {"steps", run.steps}, {"same_tokens_as_plain", run.same_tokens}});
  }
  nlohmann::json out = {
      {"environment", bench::describe_environment(a.threads > 0 ? a.threads : hardware_threads())},
      {"model", {{"path", a.model}, {"name", m.config().name}}},
      {"speculation", {{"method", method}, {"draft_model", a.spec.draft_model},
                       {"max_draft", o.engine.spec.max_draft}}},
      {"prompt_tokens", o.prompts[0].size()}, {"gen_tokens", o.gen_tokens},
      {"streams", o.streams}, {"temperature", o.sampling.temperature},
      {"runs", runs},
      {"decode_ratios", res.decode_ratios}, {"decode_ratio_median", dr.median},
      {"output_ratios", res.output_ratios}, {"output_ratio_median", orat.median},
      {"greedy_outputs_identical", all_same}};
  return out;
}

void print_spec_bench(const BenchArgs& a, const bench::SpecBenchOptions& o,
                      const bench::SpecBenchResult& res, bool all_same) {
  const std::string method(engine::spec_method_name(o.engine.spec.method));
  const bench::Summary dr = res.decode_ratio();
  const bench::Summary orat = res.output_ratio();
  std::printf("model %s | speculation %s%s%s, up to %d drafts | prompt %zu tokens, %d streams x %d "
              "tokens, temperature %.2f\n",
              a.model.c_str(), method.c_str(), a.spec.draft_model.empty() ? "" : " with ",
              a.spec.draft_model.c_str(), o.engine.spec.max_draft, o.prompts[0].size(), o.streams,
              o.gen_tokens, o.sampling.temperature);
  std::printf("| run | spec | decode t/s/stream | output t/s | accepted/drafted | tokens/step |\n");
  std::printf("|-----|------|-------------------|------------|------------------|-------------|\n");
  for (size_t i = 0; i < res.runs.size(); ++i) {
    const auto& run = res.runs[i];
    std::printf("| %3zu | %-4s | %17.2f | %10.2f | %7lld/%-7lld  | %11.2f |\n", i + 1,
                run.speculative ? "on" : "off", run.decode_tps, run.output_tps,
                static_cast<long long>(run.accepted_tokens), static_cast<long long>(run.draft_tokens),
                run.steps > 0 ? static_cast<double>(run.output_tokens) / static_cast<double>(run.steps) : 0.0);
  }
  std::printf("on/off, median over %zu repetitions (min-max): decode %.2fx (%.2f-%.2f), output "
              "%.2fx (%.2f-%.2f)%s\n",
              dr.n, dr.median, dr.min, dr.max, orat.median, orat.min, orat.max,
              o.sampling.temperature <= 0.0f
                  ? (all_same ? "; greedy outputs identical" : "; GREEDY OUTPUTS DIFFER")
                  : "");
}

// `bench model --spec ...`: the same requests decoded with speculation off and on, alternating.
int run_bench_spec(const BenchArgs& a) {
  if (a.print_prompt) {
    std::printf("%s", bench::default_spec_prompt());
    return 0;
  }
  auto target = load_spec_target(a.model, a.tokenizer, a.spec);
  if (!target.is_ok()) return fail(target.status());
  std::shared_ptr<model::Model> model = std::move(target->model);
  std::shared_ptr<const model::Tokenizer> tokenizer = std::move(target->tokenizer);
  std::string text = bench::default_spec_prompt();
  if (!a.spec_prompt.empty()) {
    std::ifstream in(a.spec_prompt);
    if (!in) return fail("cannot read --spec-prompt " + a.spec_prompt);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bench::SpecBenchOptions o;
  o.prompts = {tokenizer->encode(text, true, false)};
  o.gen_tokens = a.gen_tokens;
  o.streams = a.streams;
  o.reps = a.reps;
  o.sampling.temperature = a.temperature;
  o.sampling.seed = 1;
  o.engine.n_threads = a.threads;
  o.engine.spec = std::move(target->spec);
  auto r = bench::run_spec_bench(model, tokenizer, o);
  if (!r.is_ok()) return fail(r.status());
  bool all_same = true;
  for (const auto& run : r->runs) all_same = all_same && run.same_tokens;
  if (a.json) {
    std::printf("%s\n", spec_bench_record(a, *model, o, *r, all_same).dump(2).c_str());
    return 0;
  }
  print_spec_bench(a, o, *r, all_same);
  return all_same ? 0 : 1;
}

// The model part of `bench model`'s JSON record.
nlohmann::json model_json(const BenchArgs& a, const model::Model& m) {
  const auto& f = m.file();
  return {{"path", a.model},
          {"name", m.config().name},
          {"dtype", dominant_dtype(f)},
          {"parameters", f.n_parameters()},
          {"bytes", f.tensor_bytes()},
          {"repacked_bytes", m.image_bytes()}};
}

// One test's row of `bench model`'s JSON record, MBU and MFU against the given ceilings (the
// machine's or the device's).
nlohmann::json result_json(const bench::TestResult& r, double read_gbps, double fma_gflops) {
  return {{"test", r.name},
          {"n_tokens", r.n_tokens},
          {"reps", r.tokens_per_second.n},
          {"tokens_per_second_mean", r.tokens_per_second.mean},
          {"tokens_per_second_stddev", r.tokens_per_second.stddev},
          {"tokens_per_second_median", r.tokens_per_second.median},
          {"bytes_per_run", r.bytes_per_run},
          {"flops_per_run", r.flops_per_run},
          {"gbps", r.gbps()},
          {"gflops", r.gflops()},
          {"mbu", r.gbps() / read_gbps},
          {"mfu", r.gflops() / fma_gflops}};
}

// `bench model`'s JSON record: the environment, the machine's ceilings, the model, each test.
nlohmann::json model_bench_record(const BenchArgs& a, const model::Model& m, int threads,
                                  const bench::MachineCeilings& c,
                                  const std::vector<bench::TestResult>& results) {
  nlohmann::json out = {{"environment", bench::describe_environment(threads)},
                        {"machine", ceilings_json(c)},
                        {"model", model_json(a, m)},
                        {"results", nlohmann::json::array()}};
  for (const auto& r : results) {
    out["results"].push_back(result_json(r, c.read_gbps, c.fma_gflops));
    if (!r.adjacent_probe.empty()) {
      const bench::Summary mbu = r.adjacent_mbu();
      auto& j = out["results"].back();
      j["adjacent_probe_gbps_median"] = bench::summarize(r.adjacent_probe).median;
      j["mbu_adjacent_median"] = mbu.median;
      j["mbu_adjacent_min"] = mbu.min;
      j["mbu_adjacent_max"] = mbu.max;
    }
    if (!r.ab_time_ratios.empty()) {
      auto& j = out["results"].back();
      j["ab_time_ratios"] = r.ab_time_ratios;
      j["ab_time_ratio_median"] = bench::summarize(r.ab_time_ratios).median;
    }
  }
  return out;
}

// `bench model`'s table rows (t/s, GB/s, MBU, GFLOP/s, MFU against the given ceilings), with the
// adjacent probe's column when `probe`.
void print_roofline_table(const std::vector<bench::TestResult>& results, double read_gbps,
                          double fma_gflops, bool probe) {
  std::printf("| %-7s | %18s | %8s | %6s | %9s | %6s |%s\n", "test", "t/s", "GB/s", "MBU", "GFLOP/s",
              "MFU", probe ? " MBU vs adjacent probe |" : "");
  std::printf("|---------|--------------------|----------|--------|-----------|--------|%s\n",
              probe ? "-----------------------|" : "");
  for (const auto& r : results) {
    std::printf("| %-7s | %9.2f ± %6.2f | %8.2f | %5.1f%% | %9.1f | %5.1f%% |", r.name.c_str(),
                r.tokens_per_second.mean, r.tokens_per_second.stddev, r.gbps(),
                100.0 * r.gbps() / read_gbps, r.gflops(), 100.0 * r.gflops() / fma_gflops);
    if (probe) {
      const bench::Summary mbu = r.adjacent_mbu();
      std::printf(" %5.1f%% of %5.1f GB/s  |", 100.0 * mbu.median,
                  bench::summarize(r.adjacent_probe).median);
    }
    std::printf("\n");
  }
}

// `bench model`'s table, and the A/B and probe notes under it.
void print_model_bench(const BenchArgs& a, const model::Model& m, int threads, const nlohmann::json& out,
                       const bench::MachineCeilings& c, const std::vector<bench::TestResult>& results,
                       bool probe) {
  const auto& f = m.file();
  const std::string dtype = dominant_dtype(f);
  std::printf("model %s: %s%s, %.1f M params, %.1f MiB | %d threads, kernels %s | ceilings %.1f GB/s, %.1f GFLOP/s\n",
              a.model.c_str(), dtype.c_str(), m.image_bytes() > 0 ? " (repacked)" : "",
              f.n_parameters() / 1e6, f.tensor_bytes() / 1048576.0, threads, out["environment"]["kernel_isa"].get<std::string>().c_str(),
              c.read_gbps, c.fma_gflops);
  print_roofline_table(results, c.read_gbps, c.fma_gflops, probe);
  for (const auto& r : results) {
    if (r.ab_time_ratios.empty()) continue;
    const bench::Summary ab = bench::summarize(r.ab_time_ratios);
    std::string each;
    for (double x : r.ab_time_ratios) each += fmt::format(" {:.3f}", x);
    std::printf("A/B %s: variant 1 time / variant 0 time, median %.3f (%.3f-%.3f) over %zu "
                "repetitions:%s\n",
                r.name.c_str(), ab.median, ab.min, ab.max, ab.n, each.c_str());
  }
  if (probe) {
    std::printf("MBU: against the ceiling above (the best probe pass); adjacent: each repetition "
                "against the mean of the probe passes just before and after it (median over "
                "repetitions)\n");
  }
}

// The device's ceilings for `bench model --device opencl:N`: the `device` part of a
// `bench machine --device opencl:N --json` record given as --machine (refused when it holds no
// device ceilings or another device's), or measured now.
Result<bench::DeviceCeilings> device_ceilings_for(const BenchArgs& a, int index) {
  if (a.machine_json.empty()) return measure_device(index, 5, int64_t{1} << 30);
  std::ifstream in(a.machine_json);
  if (!in) return not_found("cannot read " + a.machine_json);
  bench::DeviceCeilings c;
  try {
    const auto j = nlohmann::json::parse(in);
    if (!j.contains("device")) {
      return invalid_argument(fmt::format(
          "{}: no device ceilings (a CPU record?); write them with `tessera bench machine "
          "--device opencl:{} --json`, or leave out --machine to measure them now",
          a.machine_json, index));
    }
    const auto& d = j["device"];
    c.read_gbps = d.at("read_gbps").get<double>();
    c.fma_gflops = d.at("fma_gflops").get<double>();
    c.read_gbps_median = d.value("read_gbps_median", 0.0);
    c.fma_gflops_median = d.value("fma_gflops_median", 0.0);
    c.name = d.at("name").get<std::string>();
    c.platform = d.value("platform", "");
    c.type = d.value("type", "");
    c.compute_units = d.value("compute_units", 0u);
    c.buffer_bytes = d.value("buffer_bytes", int64_t{0});
    c.reps = d.value("reps", 0);
  } catch (const std::exception& e) {
    return invalid_argument(fmt::format("{}: not a `bench machine --device --json` record: {}",
                                        a.machine_json, e.what()));
  }
  c.index = index;
  TS_ASSIGN_OR_RETURN(auto devices, device::list_devices());
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    return out_of_range(fmt::format("--device opencl:{}: past the {} OpenCL device(s) that "
                                    "`tessera info --devices` lists",
                                    index, devices.size()));
  }
  const std::string& name = devices[static_cast<size_t>(index)].name;
  if (c.name != name) {
    return invalid_argument(fmt::format("{}: ceilings of '{}', but opencl:{} is '{}'; measure "
                                        "this one with `tessera bench machine --device opencl:{} "
                                        "--json`",
                                        a.machine_json, c.name, index, name, index));
  }
  return c;
}

// `bench model --device opencl:N`: tokens/s on the device, with MBU/MFU against the device's
// ceilings (never the CPU's: they would mislead).
int run_bench_model_on_device(const BenchArgs& a, const bench::DeviceCeilings& c, model::Model& m,
                              ThreadPool& pool) {
  bench::ModelBenchOptions o;
  o.prompt_tokens = a.prompt_tokens;
  o.gen_tokens = a.gen_tokens;
  o.reps = a.reps;
  auto results = bench::run_model_bench(m, pool, o);
  if (!results.is_ok()) return fail(results.status());
  nlohmann::json out = {{"environment", bench::describe_environment(pool.size())},
                        {"device", device_ceilings_json(c)},
                        {"model", model_json(a, m)},
                        {"results", nlohmann::json::array()}};
  for (const auto& r : results.value()) {
    out["results"].push_back(result_json(r, c.read_gbps, c.fma_gflops));
  }
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  const auto& f = m.file();
  std::printf("model %s: %s, %.1f M params, %.1f MiB | on opencl:%d (%s, %s) | ceilings %.1f "
              "GB/s, %.1f GFLOP/s\n",
              a.model.c_str(), dominant_dtype(f).c_str(), f.n_parameters() / 1e6,
              f.tensor_bytes() / 1048576.0, c.index, c.name.c_str(), c.type.c_str(), c.read_gbps,
              c.fma_gflops);
  print_roofline_table(results.value(), c.read_gbps, c.fma_gflops, false);
  return 0;
}

int run_bench_model(const BenchArgs& a) {
  if (!a.spec.method.empty() || !a.spec.draft_model.empty() || !a.spec.skip_layers.empty()) {
    return run_bench_spec(a);
  }
  model::LoadOptions load_options;
  load_options.repack = !a.no_repack;
  auto device = parse_device(a.device);
  if (!device.is_ok()) return fail(device.status());
  load_options.device = *device;
  // The device's ceilings first, so their buffer is freed before the weights are uploaded.
  std::optional<bench::DeviceCeilings> device_ceilings;
  if (*device >= 0) {
    auto dc = device_ceilings_for(a, *device);
    if (!dc.is_ok()) return fail(dc.status());
    device_ceilings = std::move(*dc);
  }
  auto m = model::load_model(a.model, load_options);
  if (!m.is_ok()) return fail(m.status());
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  if (device_ceilings) return run_bench_model_on_device(a, *device_ceilings, **m, pool);
  auto ceil = ceilings_for(a, pool.size());
  if (!ceil.is_ok()) return fail(ceil.status());
  bench::ModelBenchOptions o;
  o.prompt_tokens = a.prompt_tokens;
  o.gen_tokens = a.gen_tokens;
  o.reps = a.reps;
  o.ab = a.ab;
  std::optional<bench::ReadProbe> probe;
  if (!a.no_adjacent_probe) {
    auto p = bench::ReadProbe::create(a.buffer_mib << 20, pool);
    if (!p.is_ok()) return fail(p.status());
    probe = std::move(*p);
    o.probe = &*probe;
  }
  auto results = bench::run_model_bench(**m, pool, o);
  if (!results.is_ok()) return fail(results.status());

  const nlohmann::json out = model_bench_record(a, **m, pool.size(), *ceil, *results);
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  print_model_bench(a, **m, pool.size(), out, *ceil, *results, probe.has_value());
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, RunFn& run) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Benchmarks: machine ceilings, model throughput, serving (LoadGen rules)");
  bench->require_subcommand(1);

  auto am = std::make_shared<BenchArgs>();
  CLI::App* machine = bench->add_subcommand(
      "machine", "Measure memory read bandwidth and peak FMA throughput of this machine or of an "
                 "OpenCL device (--device)");
  machine->add_option("--threads,-t", am->threads, "Threads (default: all cores)");
  machine->add_option("--reps", am->reps, "Repetitions (median reported)")->capture_default_str();
  machine->add_option("--buffer-mib", am->buffer_mib, "Bandwidth buffer size")->capture_default_str();
  add_device_option(machine, &am->device);
  machine->get_option("--device")->description(
      "What to measure: cpu, opencl or opencl:N (tessera info --devices)");
  machine->add_flag("--json", am->json, "Print a JSON record");
  machine->callback([&run, am] { run = [am] { return run_bench_machine(*am); }; });

  auto a = std::make_shared<BenchArgs>();
  CLI::App* model = bench->add_subcommand(
      "model", "Prompt processing (pp) and generation (tg) tokens/s with roofline figures");
  model->add_option("--model,-m", a->model, "Model file")->required();
  model->add_option("--threads,-t", a->threads, "Threads (default: all cores)");
  model->add_option("--prompt-tokens,-p", a->prompt_tokens, "Prompt tokens for pp (0: skip)")
      ->capture_default_str();
  model->add_option("--gen-tokens,-n", a->gen_tokens, "Generated tokens for tg (0: skip)")
      ->capture_default_str();
  model->add_option("--reps,-r", a->reps, "Repetitions")->capture_default_str();
  add_device_option(model, &a->device);
  model->add_option("--machine", a->machine_json,
                    "Ceilings from a `bench machine --json` file (with --device opencl:N, from "
                    "`bench machine --device opencl:N --json`; default: measure now)");
  model->add_flag("--no-adjacent-probe", a->no_adjacent_probe,
                  "Skip the bandwidth probe pass run before and after each repetition");
  model->add_option("--probe-mib", a->buffer_mib, "Adjacent probe buffer size")
      ->capture_default_str();
  model->add_flag("--no-repack", a->no_repack,
                  "Run the weights in the file's layout (no Q4_0 16-row repacking at load)");
  model->add_flag("--ab", a->ab,
                  "In-process A/B: alternate base/ab_switch.h's variant 0 and 1 (tg: every two "
                  "steps; pp: one prompt each per repetition) and report variant 1's time over "
                  "variant 0's per repetition");
  model->add_flag("--json", a->json, "Print a JSON record");
  add_spec_options(model, &a->spec);
  model->add_option("--tokenizer", a->tokenizer,
                    "With --spec: tokenizer file (llama2.c checkpoints; GGUF carries its own)");
  model->add_option("--spec-prompt", a->spec_prompt,
                    "With --spec: prompt text file (default: a story to rewrite, input-grounded)");
  model->add_option("--streams", a->streams, "With --spec: concurrent requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  model->add_option("--temperature", a->temperature, "With --spec: sampling temperature (0 greedy)")
      ->capture_default_str();
  model->add_flag("--print-prompt", a->print_prompt,
                  "With --spec: print the built-in prompt (for running a peer on it) and exit");
  model->callback([&run, a] { run = [a] { return run_bench_model(*a); }; });

  add_bench_serve_command(bench, run);
  add_bench_resume_command(bench, run);
  add_bench_fleet_command(bench, run);
  add_bench_train_command(bench, run);
}

}  // namespace tessera::cli
