#include "train_progress.h"

#include <fmt/format.h>

#include <cstdio>

namespace tessera::cli {

std::string clock_string(double s) {
  const auto t = static_cast<int64_t>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

void TrainProgress::print(const train::StepRecord& r) {
  if (r.val_loss >= 0) last_val_ = r.val_loss;
  const double tps = static_cast<double>((r.step - first_) * tokens_per_step_) / r.seconds;
  const double eta = r.seconds / static_cast<double>(r.step - first_) *
                     static_cast<double>(total_ - r.step);
  std::fprintf(stderr, "\rstep %lld/%lld  loss %.4f  val %s  lr %.2e  |g| %.2f  %.0f tokens/s  ETA %s   ",
               static_cast<long long>(r.step), static_cast<long long>(total_), r.loss,
               last_val_ >= 0 ? fmt::format("{:.4f}", last_val_).c_str() : "-", r.lr, r.grad_norm,
               tps, clock_string(eta).c_str());
  if (r.val_loss >= 0) std::fprintf(stderr, "\n");
}

}  // namespace tessera::cli
