// The pretraining loop: a llama model from scratch on a token stream. Each step draws B windows of
// T + 1 tokens from the training split (seeded), accumulates gradients over `accum` micro-batches,
// clips them, and takes one AdamW step on the warmup + cosine schedule; every `eval_every` steps
// (and at the end) the mean loss over fixed windows of the validation split is measured.
// Deterministic for a given seed, thread count and ISA. finetune_lora runs the same loop over
// LoRA adapters on a frozen base.
// Thread-safety: one call at a time per options object; `pool` is used for the ops.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/train/llama_trainer.h"
#include "tessera/train/lora_layout.h"
#include "tessera/train/optimizer.h"

namespace tessera::train {

struct PretrainOptions {
  LlamaShape shape;          // shape.context = T, the training window
  int64_t batch = 8;         // B sequences per micro-batch
  int64_t accum = 1;         // micro-batches per optimizer step
  int64_t steps = 100;
  double lr = 1e-3;          // peak learning rate
  int64_t warmup = 10;
  double min_lr_ratio = 0.1;
  double clip = 1.0;         // global gradient norm; <= 0: no clipping
  AdamWOptions adamw;
  int64_t eval_every = 50;   // 0: only at the end
  int64_t eval_windows = 16; // validation windows of T + 1 tokens (fewer if the split is short)
  double target_loss = 0;    // > 0: the report's time-to-target is the first eval at or below it
  uint64_t seed = 1;
  // Activation recomputation (LlamaTrainer::set_recompute): less memory, about a third more
  // FLOPs per step, the same results bit for bit. MFU still counts the model's FLOPs only.
  bool recompute = false;
  // BF16 compute (LlamaTrainer::set_bf16_compute): f32 master weights and AdamW state, the matmul
  // weights rounded to bf16 once per optimizer step, the matmuls on the bf16 GEMM with f32
  // accumulation. Deterministic as f32 is (seed, thread count, ISA). pretrain only: finetune_lora
  // refuses it.
  bool bf16 = false;
};

struct StepRecord {
  int64_t step = 0;          // 1-based
  double loss = 0;           // mean training loss of the step's micro-batches
  double lr = 0;
  double grad_norm = 0;      // before clipping
  double seconds = 0;        // since the start, after this step
  double val_loss = -1;      // this step's evaluation, or -1 when none ran
};

struct PretrainReport {
  std::vector<StepRecord> steps;
  double seconds = 0;              // training time (evaluations excluded)
  double eval_seconds = 0;
  int64_t tokens = 0;              // trained (B * T * accum per step)
  double final_val_loss = -1;
  int64_t target_step = -1;        // first step whose evaluation reached target_loss, or -1
  double target_seconds = -1;      // training seconds until then
  double flops_per_token = 0;      // 6 * parameters + attention, per trained token
  double initial_val_loss = -1;    // finetune_lora: the validation loss before the first step
};

// Where a run stands between two optimizer steps: with the parameters, all a later call needs to
// continue it bit for bit (checkpoint.h writes it beside the GGUF).
struct TrainState {
  int64_t step = 0;        // optimizer steps taken
  std::vector<float> m, v; // AdamW's moments (empty before the first step)
  std::string rng;         // the data-order generator (std::mt19937_64's text form; "" = fresh)
};

// What a caller may watch or steer; every member may be empty/null.
struct PretrainHooks {
  // Sees every step; returning false stops after it (the state then stands at that step).
  std::function<bool(const StepRecord&)> on_step;
  // Called just before each validation pass, with the 1-based step it follows.
  std::function<void(int64_t step)> before_eval;
  // Receives each training window's start offset in `train_tokens`, in the order drawn (a step
  // draws accum * batch windows of T + 1 tokens): the data order, for replaying it elsewhere.
  std::vector<int64_t>* window_starts = nullptr;
  // In: a state to continue from (step > 0; the schedule is still the one of options.steps).
  // Out: the state after the last step taken.
  TrainState* state = nullptr;
};

// Trains `params` (llama_param_layout(options.shape); initialize with init_llama_params) in
// place on `train_tokens`, evaluating on `val_tokens`, from step hooks.state->step (0: the start)
// to options.steps. Errors: kInvalidArgument (shape, sizes, a split shorter than T + 1 tokens, a
// token outside the vocabulary, a state of the wrong size or past options.steps).
Result<PretrainReport> pretrain(const PretrainOptions& options, std::span<float> params,
                                std::span<const int32_t> train_tokens,
                                std::span<const int32_t> val_tokens, ThreadPool* pool,
                                const PretrainHooks& hooks);
// The same with only a step callback (may be empty; return false to stop early).
Result<PretrainReport> pretrain(const PretrainOptions& options, std::span<float> params,
                                std::span<const int32_t> train_tokens,
                                std::span<const int32_t> val_tokens, ThreadPool* pool,
                                const std::function<bool(const StepRecord&)>& on_step = {});

// LoRA fine-tuning in the same loop (schedule, accumulation, clipping, evaluation, hooks): only
// `adapters` (laid out by `lora`, made for options.shape; initialize with init_lora_params) train,
// in place; `base` (llama_param_layout(options.shape)) is only read and no gradient of it is
// computed. AdamW's weight decay applies to A and B. hooks.state holds the adapters' moments.
// report.initial_val_loss is measured before the first step of a fresh run (for fresh adapters,
// B = 0: the base's own loss). Errors: those of pretrain, and kInvalidArgument for a base or
// adapter buffer of the wrong size.
Result<PretrainReport> finetune_lora(const PretrainOptions& options, const LoraLayout& lora,
                                     std::span<const float> base, std::span<float> adapters,
                                     std::span<const int32_t> train_tokens,
                                     std::span<const int32_t> val_tokens, ThreadPool* pool,
                                     const PretrainHooks& hooks);

// Mean loss of the model over `windows` evenly spaced windows of T + 1 tokens of `tokens`.
double evaluate_loss(LlamaTrainer<float>& trainer, std::span<const float> params,
                     std::span<const int32_t> tokens, int64_t windows, int64_t batch);

// Training FLOPs per token of a llama shape with T = shape.context: 6 per parameter touched by a
// matmul (forward 2, backward 4) plus the attention scores and mixing (6 * L * T * C, causal
// halved), the convention of the PaLM/Chinchilla MFU accounting.
double training_flops_per_token(const LlamaShape& shape);

}  // namespace tessera::train
