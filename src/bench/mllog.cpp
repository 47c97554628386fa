#include "tessera/bench/mllog.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tessera::bench {

const std::vector<std::string_view> kMlPerfRequiredKeys = {
    "submission_benchmark", "submission_division", "submission_org", "submission_platform",
    "submission_status", "cache_clear", "init_start", "seed", "global_batch_size",
    "max_sequence_length", "gradient_accumulation_steps", "opt_base_learning_rate",
    "opt_learning_rate_warmup_steps", "opt_learning_rate_training_steps", "opt_adamw_beta_1",
    "opt_adamw_beta_2", "opt_adamw_epsilon", "opt_adamw_weight_decay", "opt_gradient_clip_norm",
    "train_samples", "eval_samples", "target_accuracy", "init_stop", "run_start", "eval_accuracy",
    "run_stop"};

MlLogger::MlLogger(std::function<void(const std::string&)> sink, std::function<int64_t()> wall_ms)
    : sink_(std::move(sink)), wall_ms_(std::move(wall_ms)) {}

void MlLogger::event(std::string_view key, nlohmann::ordered_json value,
                     nlohmann::ordered_json metadata, CallSite at) {
  log("POINT_IN_TIME", key, std::move(value), std::move(metadata), at);
}
void MlLogger::start(std::string_view key, nlohmann::ordered_json value,
                     nlohmann::ordered_json metadata, CallSite at) {
  log("INTERVAL_START", key, std::move(value), std::move(metadata), at);
}
void MlLogger::end(std::string_view key, nlohmann::ordered_json value,
                   nlohmann::ordered_json metadata, CallSite at) {
  log("INTERVAL_END", key, std::move(value), std::move(metadata), at);
}

void MlLogger::log(std::string_view type, std::string_view key, nlohmann::ordered_json value,
                   nlohmann::ordered_json metadata, const CallSite& at) {
  std::string_view file = at.file;
  if (const size_t slash = file.find("src/"); slash != std::string_view::npos) file.remove_prefix(slash);
  nlohmann::ordered_json md = {{"file", std::string(file)}, {"lineno", at.line}};
  for (auto& [k, v] : metadata.items()) md[k] = v;
  nlohmann::ordered_json j;
  j["namespace"] = "";
  j["time_ms"] = wall_ms_ ? wall_ms_() : 0;
  j["event_type"] = std::string(type);
  j["key"] = std::string(key);
  j["value"] = std::move(value);
  j["metadata"] = std::move(md);
  std::string line = std::string(kMlLogPrefix) + j.dump();
  if (sink_) sink_(line);
  lines_.push_back(std::move(line));
}

Result<nlohmann::ordered_json> parse_mllog_line(std::string_view line) {
  if (!line.starts_with(kMlLogPrefix)) {
    return invalid_argument(fmt::format("not an MLLOG line (no '{}' prefix): {:.60}", kMlLogPrefix, line));
  }
  line.remove_prefix(kMlLogPrefix.size());
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(std::string(line), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument(fmt::format("MLLOG line is not a JSON object: {:.60}", line));
  }
  static constexpr const char* kFields[] = {"namespace", "time_ms", "event_type", "key", "value",
                                            "metadata"};
  size_t i = 0;
  for (auto it = j.begin(); it != j.end(); ++it, ++i) {
    if (i >= std::size(kFields) || it.key() != kFields[i]) {
      return invalid_argument(fmt::format("MLLOG line: field {} is '{}', expected '{}'", i + 1,
                                          it.key(), i < std::size(kFields) ? kFields[i] : "(none)"));
    }
  }
  if (i != std::size(kFields)) return invalid_argument("MLLOG line: missing fields");
  if (!j["key"].is_string() || !j["time_ms"].is_number_integer() || !j["metadata"].is_object()) {
    return invalid_argument("MLLOG line: key must be a string, time_ms an integer, metadata an object");
  }
  const std::string type = j["event_type"].is_string() ? j["event_type"].get<std::string>() : "";
  if (type != "POINT_IN_TIME" && type != "INTERVAL_START" && type != "INTERVAL_END") {
    return invalid_argument("MLLOG line: unknown event_type '" + type + "'");
  }
  return j;
}

Status check_mllog(const std::vector<std::string>& lines) {
  std::map<std::string, size_t> first;
  size_t last_interval = 0;
  std::string last_interval_key;
  int64_t last_time = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = parse_mllog_line(lines[i]);
    if (!j.is_ok()) return j.status().with_context(fmt::format("line {}", i + 1));
    const std::string key = (*j)["key"].get<std::string>();
    first.emplace(key, i);
    if ((*j)["event_type"] != "POINT_IN_TIME") last_interval = i, last_interval_key = key;
    const int64_t t = (*j)["time_ms"].get<int64_t>();
    if (t < last_time) return invalid_argument(fmt::format("line {}: time_ms goes backwards", i + 1));
    last_time = t;
  }
  for (std::string_view k : kMlPerfRequiredKeys) {
    if (!first.contains(std::string(k))) return invalid_argument(fmt::format("no '{}' line", k));
  }
  if (!(first["init_stop"] < first["run_start"] && first["run_start"] < first["run_stop"])) {
    return invalid_argument("init_stop, run_start and run_stop are out of order");
  }
  if (last_interval_key != "run_stop") {
    return invalid_argument("the last interval event is " + last_interval_key + ", not run_stop");
  }
  auto stop = parse_mllog_line(lines[last_interval]);
  if (!(*stop)["metadata"].contains("status")) return invalid_argument("run_stop has no status");
  return Status::ok();
}

}  // namespace tessera::bench
