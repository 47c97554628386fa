// `tessera train --lora`: LoRA fine-tuning of a frozen base model (any llama file Tessera reads,
// dequantized to f32) on a text tokenized with the base's tokenizer; writes the adapters as a
// PEFT directory and/or a GGUF LoRA. The flags and what it prints; the job is train/lora_job.h.
// Thread-safety: run on the main thread.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "tessera/train/pretrain.h"

namespace tessera::cli {

struct LoraTrainOptions {
  bool enabled = false;
  std::string base;             // the base model file
  int64_t rank = 8;
  double alpha = 0;             // 0: alpha = rank (scale 1)
  std::string targets = "q,v";  // PEFT's default for llama
  std::string format = "both";  // peft | gguf | both
};

// Registers --lora, --base, --rank, --alpha, --lora-targets, --lora-format on `train`.
void add_lora_train_options(CLI::App& cmd, LoraTrainOptions& o);

// The options `tessera train` shares with --lora (its shape options other than --ctx are
// ignored: the shape is the base's).
struct TrainRunOptions {
  std::string text, out, vocab;
  double val_fraction = 0.05;
  int threads = 0;
  bool json = false, quiet = false;
  train::PretrainOptions o;
};

// Returns the exit code; errors are printed.
int run_train_lora(const LoraTrainOptions& lora, TrainRunOptions run);

}  // namespace tessera::cli
