// A training run's record as JSON: the loss curve and the throughput totals, as `tessera train
// --json` (pretraining and --lora) prints them and `bench train`'s summary holds the curve.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "tessera/train/pretrain.h"

namespace tessera::bench {

// Tokens per second and achieved GFLOP/s of a finished run (report.flops_per_token).
struct TrainRates {
  double tokens_per_second = 0;
  double gflops = 0;
};
TrainRates train_rates(const train::PretrainReport& report);

// The steps of `report` as a JSON array ({step, loss, lr, grad_norm, seconds[, val_loss]}).
nlohmann::json train_steps_json(const train::PretrainReport& report);

// {tokens, seconds, eval_seconds, tokens_per_second, flops_per_token, achieved_gflops,
//  final_val_loss, steps}: what every `tessera train --json` record holds.
nlohmann::json train_totals_json(const train::PretrainReport& report);

}  // namespace tessera::bench
