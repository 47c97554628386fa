// What `tessera train` (pretraining and --lora) prints while and after it trains: the per-step
// progress line on stderr (the records: bench/train_record.h). Thread-safety: one printer per run.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/train/pretrain.h"

namespace tessera::cli {

// "m:ss" or "h:mm:ss".
std::string clock_string(double seconds);

// Prints "step s/N  loss  val  lr  |g|  tokens/s  ETA" on stderr, rewritten in place, with a
// newline after each step that ran a validation pass.
class TrainProgress {
 public:
  // first_step: the optimizer steps taken before this run (a resumed run).
  TrainProgress(int64_t total_steps, int64_t tokens_per_step, int64_t first_step)
      : total_(total_steps), tokens_per_step_(tokens_per_step), first_(first_step) {}
  void print(const train::StepRecord& r);

 private:
  int64_t total_, tokens_per_step_, first_;
  double last_val_ = -1;
};

}  // namespace tessera::cli
