// tessera train: pretrains a llama model from scratch on a text file and writes it as GGUF (with
// its tokenizer), which every other command loads; with --lora, fine-tunes LoRA adapters on a
// frozen base instead (train_lora.cpp).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "train_flags.h"
#include "train_lora.h"
#include "train_progress.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/train_record.h"
#include "tessera/kernels/gemm_bf16.h"
#include "tessera/train/pretrain_job.h"

namespace tessera::cli {
namespace {

struct TrainArgs {
  train::PretrainJob job;  // text, out, vocab, exports, resume, the training options
  int threads = 0;
  bool json = false;
  bool quiet = false;
  std::string compute = "f32";  // --compute: f32 or bf16 (sets o.bf16)
  LoraTrainOptions lora;  // --lora: fine-tune adapters on --base instead
};

void print_pretrain_banner(const TrainArgs& a, const train::PretrainSetup& s, int threads) {
  const train::LlamaShape& sh = a.job.o.shape;
  const int64_t tokens_per_step = a.job.o.batch * sh.context * a.job.o.accum;
  std::fprintf(stderr,
               "tessera train: %zu tokens of '%s' (%zu train / %zu validation, tokenized in "
               "%.1f s); model: dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, vocab "
               "%lld, context %lld: %.2f M parameters; %lld tokens per step, %d threads, %s "
               "compute\n",
               s.data.tokens.size(), a.job.text.c_str(), s.data.train().size(), s.data.val().size(),
               s.data.tokenize_s, static_cast<long long>(sh.dim), static_cast<long long>(sh.layers),
               static_cast<long long>(sh.heads), static_cast<long long>(sh.kv_heads),
               static_cast<long long>(sh.ffn), static_cast<long long>(sh.vocab),
               static_cast<long long>(sh.context), static_cast<double>(s.n_params) / 1e6,
               static_cast<long long>(tokens_per_step), threads, a.compute.c_str());
}

void print_pretrain_result(const TrainArgs& a, const train::PretrainSetup& s,
                           const train::PretrainReport& report, int threads, int64_t first_step) {
  const train::PretrainOptions& o = a.job.o;
  if (a.json) {
    nlohmann::json j = bench::train_totals_json(report);
    j.update({{"out", a.job.out},
              {"parameters", s.n_params},
              {"threads", threads},
              {"compute", a.compute},
              {"seed", o.seed},
              {"first_step", first_step},
              {"last_step", s.state.step}});
    if (o.target_loss > 0) {
      j["target_loss"] = o.target_loss;
      j["target_step"] = report.target_step;
      j["target_seconds"] = report.target_seconds;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  const bench::TrainRates rates = bench::train_rates(report);
  std::printf("tessera train: wrote %s: %lld steps, %lld tokens in %s (%.0f tokens/s, %.1f GFLOP/s), "
              "validation loss %.4f\n",
              a.job.out.c_str(), static_cast<long long>(report.steps.size()),
              static_cast<long long>(report.tokens), clock_string(report.seconds).c_str(),
              rates.tokens_per_second, rates.gflops, report.final_val_loss);
}

int run_pretrain(TrainArgs& a) {
  auto setup = train::prepare_pretrain(a.job);
  if (!setup.is_ok()) return fail(setup.status());
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  if (!a.quiet) print_pretrain_banner(a, *setup, pool.size());
  const int64_t first_step = setup->state.step;
  if (!a.quiet && first_step > 0) {
    std::fprintf(stderr, "tessera train: resuming '%s' after step %lld\n", a.job.resume.c_str(),
                 static_cast<long long>(first_step));
  }
  const train::PretrainOptions& o = a.job.o;
  TrainProgress progress(o.steps, o.batch * o.shape.context * o.accum, first_step);
  auto report = train::run_pretrain(a.job, *setup, &pool, [&](const train::StepRecord& r) {
    if (!a.quiet) progress.print(r);
  });
  if (!report.is_ok()) return fail(report.status());
  print_pretrain_result(a, *setup, *report, pool.size(), first_step);
  return 0;
}

int run_train(TrainArgs a) {
  train::PretrainJob& job = a.job;
  job.o.bf16 = a.compute == "bf16";
  if (job.o.bf16 && a.lora.enabled) return fail("--compute bf16 is for pretraining; --lora computes in f32");
  if (job.o.bf16 && !a.quiet && !kernels::gemm_bf16_is_accelerated()) {
    std::fprintf(stderr, "tessera train: this CPU (or TESSERA_ISA/TESSERA_FORCE_SCALAR) has no "
                         "AVX-512 BF16: --compute bf16 runs the scalar bf16 GEMM (slow, same bits)\n");
  }
  if (!a.lora.enabled) return run_pretrain(a);
  if (!job.resume.empty() || job.save_state || job.stop_at_step > 0 || !job.init_out.empty() ||
      !job.data_order_out.empty()) {
    return fail("--lora does not take --resume, --save-state, --stop-at-step, --init-out or "
                "--data-order-out yet");
  }
  return run_train_lora(a.lora, {job.text, job.out, job.vocab, job.val_fraction, a.threads, a.json,
                                 a.quiet, job.o});
}

// The text, the vocabulary and the model's shape.
void add_data_and_shape_flags(CLI::App* cmd, TrainArgs* a) {
  cmd->add_option("--text,-f", a->job.text, "Training text (UTF-8); the last --val-fraction is held out")
      ->required();
  cmd->add_option("--out,-o", a->job.out, "Output GGUF (with --lora: see --lora-format)")->required();
  cmd->add_option("--vocab", a->job.vocab, "Take the tokenizer from this GGUF (default: a generated one)");
  cmd->add_option("--vocab-size", a->job.vocab_size, "Size of the generated vocabulary")->capture_default_str();
  add_shape_and_batch_options(cmd, a->job.o);
}

// The schedule, the optimizer, validation and the compute.
void add_schedule_flags(CLI::App* cmd, TrainArgs* a) {
  train::PretrainOptions& o = a->job.o;
  cmd->add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Warmup steps")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "Final learning rate / peak (cosine)")->capture_default_str();
  cmd->add_option("--weight-decay", o.adamw.weight_decay, "AdamW weight decay (matrices)")->capture_default_str();
  cmd->add_option("--beta2", o.adamw.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--clip", o.clip, "Global gradient-norm clip (0: none)")->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "Validation every N steps (and at the end)")->capture_default_str();
  cmd->add_option("--eval-windows", o.eval_windows, "Validation windows")->capture_default_str();
  cmd->add_option("--val-fraction", a->job.val_fraction, "Held-out share of the text")->capture_default_str();
  cmd->add_option("--target-loss", o.target_loss, "Report the first step whose validation loss reaches this");
  cmd->add_option("--seed", o.seed, "Seed (initialization and data order)")->capture_default_str();
  cmd->add_flag("--recompute", o.recompute,
                "Activation recomputation: keep only each layer's input, recompute the rest in "
                "the backward pass (less memory, ~1/3 more compute, identical results)");
  cmd->add_option("--compute", a->compute,
                  "Matmul precision: f32, or bf16 (f32 master weights and AdamW state, weights "
                  "rounded to bf16 once per step, bf16 GEMM inputs with f32 accumulation; the rest "
                  "in f32)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
}

// Threads, what else the run writes, resuming, and what it prints.
void add_output_flags(CLI::App* cmd, TrainArgs* a) {
  cmd->add_option("--threads,-t", a->threads, "Threads (default: all cores)");
  cmd->add_option("--init-out", a->job.init_out,
                  "Also write the initial parameters as safetensors (GGUF names, [rows, columns])");
  cmd->add_option("--data-order-out", a->job.data_order_out,
                  "Also write every step's training windows as .npy int32 [steps, accum*batch, ctx+1]");
  cmd->add_flag("--save-state", a->job.save_state,
                "Write the training state (AdamW moments, step, data order) beside the GGUF as "
                "OUT.state, for --resume");
  cmd->add_option("--stop-at-step", a->job.stop_at_step,
                  "Stop after this step (the schedule stays that of --steps); implies --save-state");
  cmd->add_option("--resume", a->job.resume,
                  "Continue the run that wrote this checkpoint (and CKPT.state); repeat its options");
  cmd->add_flag("--json", a->json, "Print one JSON object (with the loss curve) at the end");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress on stderr");
}

}  // namespace

void add_train_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand(
      "train", "Pretrain a llama model from scratch on a text file (writes GGUF), or with --lora "
               "fine-tune LoRA adapters on a frozen base (writes PEFT and/or GGUF LoRA)");
  auto args = std::make_shared<TrainArgs>();
  auto& o = args->job.o;
  o.shape.dim = 64;
  o.shape.layers = 4;
  o.shape.heads = 4;
  o.shape.kv_heads = 4;
  o.shape.ffn = 176;
  o.shape.context = 128;
  o.steps = 200;
  o.warmup = 20;
  o.eval_every = 50;
  add_data_and_shape_flags(cmd, args.get());
  add_schedule_flags(cmd, args.get());
  add_output_flags(cmd, args.get());
  add_lora_train_options(*cmd, args->lora);
  cmd->callback([&run, args] { run = [args] { return run_train(*args); }; });
}

}  // namespace tessera::cli
