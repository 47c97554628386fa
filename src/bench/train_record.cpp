#include "tessera/bench/train_record.h"

namespace tessera::bench {

TrainRates train_rates(const train::PretrainReport& report) {
  TrainRates r;
  r.tokens_per_second = static_cast<double>(report.tokens) / report.seconds;
  r.gflops = r.tokens_per_second * report.flops_per_token / 1e9;
  return r;
}

nlohmann::json train_steps_json(const train::PretrainReport& report) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& r : report.steps) {
    nlohmann::json s = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr},
                        {"grad_norm", r.grad_norm}, {"seconds", r.seconds}};
    if (r.val_loss >= 0) s["val_loss"] = r.val_loss;
    steps.push_back(std::move(s));
  }
  return steps;
}

nlohmann::json train_totals_json(const train::PretrainReport& report) {
  const TrainRates rates = train_rates(report);
  return {{"tokens", report.tokens},
          {"seconds", report.seconds},
          {"eval_seconds", report.eval_seconds},
          {"tokens_per_second", rates.tokens_per_second},
          {"flops_per_token", report.flops_per_token},
          {"achieved_gflops", rates.gflops},
          {"final_val_loss", report.final_val_loss},
          {"steps", train_steps_json(report)}};
}

}  // namespace tessera::bench
