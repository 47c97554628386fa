// `tessera train --lora`'s fine-tuning job from plain options: a frozen base model (any llama
// file Tessera reads, dequantized to f32), the text tokenized with the base's tokenizer (or
// --vocab's), the adapters' layout and initialization, the loop, and the adapters written as a
// PEFT directory and/or a GGUF LoRA (lora_writer.h). The caller owns flags and printing.
// Thread-safety: one job per thread; `pool` is used for the ops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/train/base_model.h"
#include "tessera/train/lora_layout.h"
#include "tessera/train/pretrain.h"
#include "tessera/train/training_data.h"

namespace tessera::train {

// What --lora-format writes: a PEFT directory, a GGUF LoRA file, or both (the GGUF inside the
// PEFT directory as adapter.gguf).
enum class LoraOutput { kPeft, kGguf, kBoth };

// "peft", "gguf" or "both". Errors: kInvalidArgument.
Result<LoraOutput> parse_lora_output(std::string_view name);

struct LoraJob {
  std::string base;             // the base model file
  std::string text;             // the training text file
  std::string out;              // a PEFT directory, or a .gguf file (kGguf)
  std::string vocab;            // the tokenizer's GGUF; empty: the base's own
  double val_fraction = 0.05;
  int64_t rank = 8;
  double alpha = 0;             // 0: alpha = rank (scale 1)
  std::string targets = "q,v";  // parse_lora_targets
  LoraOutput format = LoraOutput::kBoth;
  std::string format_name = "both";  // as given (for messages)
  PretrainOptions o;            // o.shape comes from the base (o.shape.context: the trained window)
};

// The options that can be checked before anything is read: a base is named, -o fits the format.
// Errors: kInvalidArgument saying what to pass instead.
Status validate(const LoraJob& job);

// The job ready to run.
struct LoraSetup {
  LlamaBase base;
  int64_t base_context = 0;     // the base file's own context
  TrainingData data;
  LoraConfig config;            // rank, alpha (resolved) and targets
  LoraLayout layout;
  std::vector<float> adapters;  // layout order, initialized
};

// Loads the base, sets job.o.shape to its shape (context: job.o.shape.context), tokenizes the
// text, lays out and initializes the adapters. Errors: the base's ("--base"), the text's, the
// tokenizer's, kInvalidArgument (a tokenizer larger than the base's output, bad targets).
Result<LoraSetup> prepare_lora(LoraJob& job);

// Trains setup.adapters in place (on_step sees every step; may be empty).
Result<PretrainReport> run_lora(const LoraJob& job, LoraSetup& setup, ThreadPool* pool,
                                const std::function<void(const StepRecord&)>& on_step);

// Writes the adapters as job.format says; returns what was written ("PATH (PEFT)",
// "PATH (GGUF LoRA)"). Errors: the writers' with context "writing PATH".
Result<std::vector<std::string>> write_lora_outputs(const LoraJob& job, const LoraSetup& setup);

}  // namespace tessera::train
