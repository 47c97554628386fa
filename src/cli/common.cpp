#include "common.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <cstdio>

#include "tessera/base/thread_pool.h"
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

Result<LoadedModel> load_model_and_tokenizer(const std::string& model_path,
                                             const std::string& tokenizer_path) {
  LoadedModel out;
  TS_ASSIGN_OR_RETURN(out.model, model::load_model(model_path));
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

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, "cannot read the text file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tessera::cli
