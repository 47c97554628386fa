#include "common.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <cstdio>

#include "tessera/base/thread_pool.h"
#include "tessera/device/device_info.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/model_file.h"

#ifndef TESSERA_CHARTJS_DEFAULT
#define TESSERA_CHARTJS_DEFAULT ""
#endif

namespace tessera::cli {

int fail(const Status& status) { return fail(status.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "tessera: error: %s\n", message.c_str());
  return 1;
}

Result<int> parse_device(const std::string& flag) {
  auto d = device::parse_device_name(flag);
  if (!d.is_ok()) return d.status().with_context("--device");
  return d;
}

void add_device_option(CLI::App* cmd, std::string* device) {
  cmd->add_option("--device", *device,
                  "Where the forward pass runs: cpu, opencl or opencl:N (tessera info --devices)")
      ->capture_default_str();
}

Result<LoadedModel> load_model_and_tokenizer(const std::string& model_path,
                                             const std::string& tokenizer_path, int device) {
  LoadedModel out;
  model::LoadOptions options;
  options.device = device;
  TS_ASSIGN_OR_RETURN(out.model, model::load_model(model_path, options));
  auto t = model::load_tokenizer_for(*out.model, tokenizer_path);
  if (!t.is_ok()) {
    if (t.status().message().starts_with("a llama2.c checkpoint")) {
      return invalid_argument(fmt::format(
          "{} is a llama2.c checkpoint, which has no tokenizer inside: pass --tokenizer "
          "PATH (e.g. tokenizer.bin)",
          model_path));
    }
    return t.status();
  }
  out.tokenizer = std::move(t).value();
  return out;
}

std::string load_chart_js(const std::string& flag_path, std::string* used) {
  std::string path = flag_path;
  if (path.empty()) {
    const char* env = std::getenv("TESSERA_CHARTJS");
    path = env != nullptr ? env : TESSERA_CHARTJS_DEFAULT;
  }
  if (used != nullptr) *used = path;
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<model::ActivationStats> collect_calibration(const LoadedModel& m, const std::string& text,
                                                   const CalibrationRun& run) {
  ThreadPool pool(run.threads > 0 ? run.threads : hardware_threads());
  model::ActivationStatsOptions o;
  o.ctx = run.ctx;
  o.max_chunks = run.chunks;
  o.pool = &pool;
  o.covariance = run.covariance;
  o.progress = run.progress;
  return model::collect_activation_stats(*m.model, *m.tokenizer, text, o);
}

std::function<void(uint64_t, uint64_t)> byte_progress(const std::string& name, bool tty,
                                                      bool with_eta) {
  const auto t0 = std::chrono::steady_clock::now();
  return [name, tty, with_eta, t0, last_tenth = -1](uint64_t done, uint64_t total) mutable {
    const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tty) {
      const int width = 30;
      const int fill = static_cast<int>(f * width);
      std::fprintf(stderr, "\r[%s%s] %3.0f%%  %.0f / %.0f MiB  %.1f s",
                   std::string(fill, '#').c_str(), std::string(width - fill, ' ').c_str(),
                   100.0 * f, done / 1048576.0, total / 1048576.0, s);
      if (with_eta) std::fprintf(stderr, ", ETA %.1f s", f > 0 ? s * (1.0 - f) / f : 0.0);
      std::fputc(' ', stderr);
    } else if (static_cast<int>(f * 10) > last_tenth) {
      last_tenth = static_cast<int>(f * 10);
      std::fprintf(stderr, "tessera %s: %3.0f%% (%.1f s)\n", name.c_str(), 100.0 * f, s);
    }
  };
}

std::string tensor_type_mix(const std::vector<kernels::DType>& types) {
  std::map<std::string, int> by_type;
  for (kernels::DType t : types) ++by_type[std::string(kernels::dtype_name(t))];
  std::string mix;
  for (const auto& [name, n] : by_type) mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", n, name);
  return mix;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, "cannot read the text file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tessera::cli
