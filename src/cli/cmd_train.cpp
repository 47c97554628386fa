// tessera train: pretrains a llama model from scratch on a text file and writes it as GGUF (with
// its tokenizer), which every other command loads; with --lora, fine-tunes LoRA adapters on a
// frozen base instead (train_lora.cpp).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "train_data.h"
#include "train_lora.h"
#include "train_progress.h"
#include "tessera/base/thread_pool.h"
#include "tessera/kernels/gemm_bf16.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/format/safetensors.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/pretrain.h"

namespace tessera::cli {
namespace {

struct TrainArgs {
  std::string text, out, vocab;
  std::string init_out, data_order_out, resume;  // replaying a run elsewhere; continuing one
  int64_t stop_at_step = 0;                      // > 0: stop after this step (state saved)
  bool save_state = false;
  int64_t vocab_size = 512;
  train::PretrainOptions o;
  double val_fraction = 0.05;
  int threads = 0;
  bool json = false;
  bool quiet = false;
  std::string compute = "f32";  // --compute: f32 or bf16 (sets o.bf16)
  LoraTrainOptions lora;  // --lora: fine-tune adapters on --base instead
};

// The initial parameters as safetensors, GGUF tensor names, shapes [rows, columns] (PyTorch's
// nn.Linear weight layout), F32: what scripts/train-vs-torch.py starts PyTorch from.
Status write_init_safetensors(const std::string& path, const train::LlamaShape& shape,
                              std::span<const float> params) {
  model::SafetensorsWriter w;
  for (const train::ParamTensor& t : train::llama_param_layout(shape, nullptr)) {
    const auto* bytes = reinterpret_cast<const std::byte*>(params.data() + t.offset);
    TS_RETURN_IF_ERROR(w.add_tensor(t.name, kernels::DType::kF32, t.shape,
                                    {bytes, static_cast<size_t>(t.size) * sizeof(float)}));
  }
  w.add_metadata("format", "tessera-train-init");
  return w.write(path);
}

// Every training window's tokens as a NumPy .npy array, int32 [steps, accum * batch, T + 1], in
// the order the steps drew them (np.load reads it; no other dependency).
Status write_data_order_npy(const std::string& path, std::span<const int64_t> starts,
                            std::span<const int32_t> train_tokens, int64_t per_step, int64_t t) {
  const int64_t steps = per_step > 0 ? static_cast<int64_t>(starts.size()) / per_step : 0;
  std::string header = fmt::format("{{'descr': '<i4', 'fortran_order': False, 'shape': ({}, {}, {}), }}",
                                   steps, per_step, t + 1);
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data 64-byte aligned
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const auto len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_le, 2);
  f << header;
  for (int64_t i = 0; i < steps * per_step; ++i) {
    f.write(reinterpret_cast<const char*>(train_tokens.data() + starts[static_cast<size_t>(i)]),
            static_cast<std::streamsize>((t + 1) * sizeof(int32_t)));
  }
  if (!f.good()) return io_error("cannot write '" + path + "'");
  return Status::ok();
}

int run_train(TrainArgs a) {
  a.o.bf16 = a.compute == "bf16";
  if (a.o.bf16 && a.lora.enabled) return fail("--compute bf16 is for pretraining; --lora computes in f32");
  if (a.o.bf16 && !a.quiet && !kernels::gemm_bf16_is_accelerated()) {
    std::fprintf(stderr, "tessera train: this CPU (or TESSERA_ISA/TESSERA_FORCE_SCALAR) has no "
                         "AVX-512 BF16: --compute bf16 runs the scalar bf16 GEMM (slow, same bits)\n");
  }
  if (a.lora.enabled) {
    if (!a.resume.empty() || a.save_state || a.stop_at_step > 0 || !a.init_out.empty() ||
        !a.data_order_out.empty()) {
      return fail("--lora does not take --resume, --save-state, --stop-at-step, --init-out or "
                  "--data-order-out yet");
    }
    return run_train_lora(a.lora, {a.text, a.out, a.vocab, a.val_fraction, a.threads, a.json,
                                   a.quiet, a.o});
  }
  std::ifstream in(a.text, std::ios::binary);
  if (!in) return fail("cannot read --text '" + a.text + "'");
  std::stringstream ss;
  ss << in.rdbuf();

  auto data = tokenize_training_text(ss.str(), a.vocab, a.vocab_size, a.val_fraction);
  if (!data.is_ok()) return fail(data.status());
  const std::vector<int32_t>& tokens = data->tokens;
  const model::Metadata& vocab = data->vocab;
  const double tokenize_s = data->tokenize_s;
  a.o.shape.vocab = data->n_vocab;
  if (Status s = train::validate(a.o.shape); !s.is_ok()) return fail(s);
  const auto train_split = data->train(), val_split = data->val();

  int64_t n_params = 0;
  train::llama_param_layout(a.o.shape, &n_params);
  std::vector<float> params(static_cast<size_t>(n_params));
  train::TrainState state;
  if (!a.resume.empty()) {
    auto p = train::read_llama_gguf_params(a.resume, a.o.shape);
    if (!p.is_ok()) return fail(p.status().with_context("--resume"));
    params = std::move(*p);
    auto st = train::read_train_state(train::train_state_path(a.resume), a.o);
    if (!st.is_ok()) return fail(st.status().with_context("--resume"));
    state = std::move(*st);
  } else {
    train::init_llama_params(a.o.shape, params, a.o.seed);
  }
  if (!a.init_out.empty()) {
    if (Status s = write_init_safetensors(a.init_out, a.o.shape, params); !s.is_ok()) {
      return fail(s.with_context("--init-out"));
    }
  }
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  const int64_t tokens_per_step = a.o.batch * a.o.shape.context * a.o.accum;
  if (!a.quiet) {
    std::fprintf(stderr,
                 "tessera train: %zu tokens of '%s' (%zu train / %zu validation, tokenized in "
                 "%.1f s); model: dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, vocab "
                 "%lld, context %lld: %.2f M parameters; %lld tokens per step, %d threads, %s "
                 "compute\n",
                 tokens.size(), a.text.c_str(), train_split.size(), val_split.size(), tokenize_s,
                 static_cast<long long>(a.o.shape.dim), static_cast<long long>(a.o.shape.layers),
                 static_cast<long long>(a.o.shape.heads), static_cast<long long>(a.o.shape.kv_heads),
                 static_cast<long long>(a.o.shape.ffn), static_cast<long long>(a.o.shape.vocab),
                 static_cast<long long>(a.o.shape.context), static_cast<double>(n_params) / 1e6,
                 static_cast<long long>(tokens_per_step), pool.size(), a.compute.c_str());
  }
  std::vector<int64_t> window_starts;
  train::PretrainHooks hooks;
  hooks.state = &state;
  if (!a.data_order_out.empty()) hooks.window_starts = &window_starts;
  const int64_t first_step = state.step;
  if (!a.quiet && first_step > 0) {
    std::fprintf(stderr, "tessera train: resuming '%s' after step %lld\n", a.resume.c_str(),
                 static_cast<long long>(first_step));
  }
  TrainProgress progress(a.o.steps, tokens_per_step, first_step);
  hooks.on_step = [&](const train::StepRecord& r) {
    if (!a.quiet) progress.print(r);
    return a.stop_at_step <= 0 || r.step < a.stop_at_step;
  };
  auto report = train::pretrain(a.o, params, train_split, val_split, &pool, hooks);
  if (!report.is_ok()) return fail(report.status());
  if (!a.data_order_out.empty()) {
    if (Status s = write_data_order_npy(a.data_order_out, window_starts, train_split,
                                        a.o.accum * a.o.batch, a.o.shape.context);
        !s.is_ok()) {
      return fail(s.with_context("--data-order-out"));
    }
  }
  if (a.save_state || a.stop_at_step > 0) {
    const std::string path = train::train_state_path(a.out);
    if (Status s = train::write_train_state(path, state, a.o); !s.is_ok()) {
      return fail(s.with_context("writing " + path));
    }
  }
  const std::string name = fmt::format("tessera-trained {}x{}", a.o.shape.layers, a.o.shape.dim);
  if (Status s = train::write_llama_gguf(a.out, a.o.shape, params, &vocab, name); !s.is_ok()) {
    return fail(s.with_context("writing " + a.out));
  }
  const double tps = static_cast<double>(report->tokens) / report->seconds;
  const double gflops = tps * report->flops_per_token / 1e9;
  if (a.json) {
    nlohmann::json j = {{"out", a.out},
                        {"parameters", n_params},
                        {"tokens", report->tokens},
                        {"seconds", report->seconds},
                        {"eval_seconds", report->eval_seconds},
                        {"tokens_per_second", tps},
                        {"flops_per_token", report->flops_per_token},
                        {"achieved_gflops", gflops},
                        {"final_val_loss", report->final_val_loss},
                        {"threads", pool.size()},
                        {"compute", a.compute},
                        {"seed", a.o.seed},
                        {"first_step", first_step},
                        {"last_step", state.step},
                        {"steps", steps_json(*report)}};
    if (a.o.target_loss > 0) {
      j["target_loss"] = a.o.target_loss;
      j["target_step"] = report->target_step;
      j["target_seconds"] = report->target_seconds;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("tessera train: wrote %s: %lld steps, %lld tokens in %s (%.0f tokens/s, %.1f GFLOP/s), "
                "validation loss %.4f\n",
                a.out.c_str(), static_cast<long long>(report->steps.size()),
                static_cast<long long>(report->tokens), clock_string(report->seconds).c_str(), tps,
                gflops, report->final_val_loss);
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand(
      "train", "Pretrain a llama model from scratch on a text file (writes GGUF), or with --lora "
               "fine-tune LoRA adapters on a frozen base (writes PEFT and/or GGUF LoRA)");
  auto args = std::make_shared<TrainArgs>();
  auto& o = args->o;
  o.shape.dim = 64;
  o.shape.layers = 4;
  o.shape.heads = 4;
  o.shape.kv_heads = 4;
  o.shape.ffn = 176;
  o.shape.context = 128;
  o.steps = 200;
  o.warmup = 20;
  o.eval_every = 50;
  cmd->add_option("--text,-f", args->text, "Training text (UTF-8); the last --val-fraction is held out")
      ->required();
  cmd->add_option("--out,-o", args->out, "Output GGUF (with --lora: see --lora-format)")->required();
  cmd->add_option("--vocab", args->vocab, "Take the tokenizer from this GGUF (default: a generated one)");
  cmd->add_option("--vocab-size", args->vocab_size, "Size of the generated vocabulary")->capture_default_str();
  cmd->add_option("--dim", o.shape.dim, "Model width")->capture_default_str();
  cmd->add_option("--layers", o.shape.layers, "Layers")->capture_default_str();
  cmd->add_option("--heads", o.shape.heads, "Attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", o.shape.kv_heads, "Key/value heads")->capture_default_str();
  cmd->add_option("--ffn", o.shape.ffn, "Feed-forward width")->capture_default_str();
  cmd->add_option("--ctx,-c", o.shape.context, "Training window (tokens)")->capture_default_str();
  cmd->add_option("--batch,-b", o.batch, "Sequences per micro-batch")->capture_default_str();
  cmd->add_option("--accum", o.accum, "Micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Warmup steps")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "Final learning rate / peak (cosine)")->capture_default_str();
  cmd->add_option("--weight-decay", o.adamw.weight_decay, "AdamW weight decay (matrices)")->capture_default_str();
  cmd->add_option("--beta2", o.adamw.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--clip", o.clip, "Global gradient-norm clip (0: none)")->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "Validation every N steps (and at the end)")->capture_default_str();
  cmd->add_option("--eval-windows", o.eval_windows, "Validation windows")->capture_default_str();
  cmd->add_option("--val-fraction", args->val_fraction, "Held-out share of the text")->capture_default_str();
  cmd->add_option("--target-loss", o.target_loss, "Report the first step whose validation loss reaches this");
  cmd->add_option("--seed", o.seed, "Seed (initialization and data order)")->capture_default_str();
  cmd->add_flag("--recompute", o.recompute,
                "Activation recomputation: keep only each layer's input, recompute the rest in "
                "the backward pass (less memory, ~1/3 more compute, identical results)");
  cmd->add_option("--compute", args->compute,
                  "Matmul precision: f32, or bf16 (f32 master weights and AdamW state, weights "
                  "rounded to bf16 once per step, bf16 GEMM inputs with f32 accumulation; the rest "
                  "in f32)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--threads,-t", args->threads, "Threads (default: all cores)");
  cmd->add_option("--init-out", args->init_out,
                  "Also write the initial parameters as safetensors (GGUF names, [rows, columns])");
  cmd->add_option("--data-order-out", args->data_order_out,
                  "Also write every step's training windows as .npy int32 [steps, accum*batch, ctx+1]");
  cmd->add_flag("--save-state", args->save_state,
                "Write the training state (AdamW moments, step, data order) beside the GGUF as "
                "OUT.state, for --resume");
  cmd->add_option("--stop-at-step", args->stop_at_step,
                  "Stop after this step (the schedule stays that of --steps); implies --save-state");
  cmd->add_option("--resume", args->resume,
                  "Continue the run that wrote this checkpoint (and CKPT.state); repeat its options");
  cmd->add_flag("--json", args->json, "Print one JSON object (with the loss curve) at the end");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress on stderr");
  add_lora_train_options(*cmd, args->lora);
  cmd->callback([&run, args] { run = [args] { return run_train(*args); }; });
}

}  // namespace tessera::cli
