// `tessera train`'s pretraining job from plain options: the text read and tokenized, the shape
// completed with the vocabulary, the parameters initialized (or read back with the training state
// to resume a run), the training loop, and what the run writes (the GGUF; on request the state,
// the initial parameters and the data order). The caller owns flags and printing.
// Thread-safety: one job per thread; `pool` is used for the ops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/train/pretrain.h"
#include "tessera/train/training_data.h"

namespace tessera::train {

struct PretrainJob {
  std::string text;             // the training text file
  std::string out;              // the GGUF written at the end
  std::string vocab;            // a GGUF whose tokenizer to use; empty: a generated one
  int64_t vocab_size = 512;     // the generated vocabulary's size
  double val_fraction = 0.05;   // held-out share of the text
  std::string init_out;         // non-empty: also write the initial parameters (safetensors)
  std::string data_order_out;   // non-empty: also write every step's windows (.npy)
  std::string resume;           // non-empty: continue the run that wrote this checkpoint
  int64_t stop_at_step = 0;     // > 0: stop after this step (the state is then saved)
  bool save_state = false;      // write OUT.state for a later resume
  PretrainOptions o;            // o.shape.vocab is set by prepare_pretrain
};

// The job ready to run.
struct PretrainSetup {
  TrainingData data;
  std::vector<float> params;    // llama_param_layout(o.shape) order
  int64_t n_params = 0;
  TrainState state;             // the resumed state (step 0 for a fresh run); the run's after it
};

// Reads and tokenizes the text, completes job.o.shape (vocab), validates it, initializes the
// parameters or reads them and the state back (--resume), and writes init_out. Errors: the
// text's, the tokenizer's, the shape's (kInvalidArgument), the checkpoint's (with context
// "--resume"), init_out's (with context "--init-out").
Result<PretrainSetup> prepare_pretrain(PretrainJob& job);

// Trains setup.params in place (on_step sees every step; may be empty), then writes the data
// order, the state (save_state or stop_at_step) and the GGUF with the tokenizer. Errors: the
// loop's, each file's with its context.
Result<PretrainReport> run_pretrain(const PretrainJob& job, PretrainSetup& setup, ThreadPool* pool,
                                    const std::function<void(const StepRecord&)>& on_step);

}  // namespace tessera::train
