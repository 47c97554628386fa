#include "tessera/train/pretrain.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>

namespace tessera::train {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Window w of `n` evenly spaced ones: its start.
int64_t window_start(int64_t w, int64_t n, int64_t len, int64_t span) {
  if (n <= 1) return 0;
  return (span - len) * w / (n - 1);
}

}  // namespace

double training_flops_per_token(const LlamaShape& s) {
  int64_t total = 0;
  const auto layout = llama_param_layout(s, &total);
  double matmul_params = 0;
  for (const ParamTensor& t : layout) {
    if (t.matrix && t.name != "token_embd.weight") matmul_params += static_cast<double>(t.size);
  }
  const double attention = 6.0 * static_cast<double>(s.layers) * static_cast<double>(s.context) *
                           static_cast<double>(s.dim);  // 12 L T C, halved by the causal mask
  return 6.0 * matmul_params + attention;
}

namespace {

// One micro-batch through the model being trained: the mean loss of predicting out[b * T] from
// in[b * T]; with grads non-empty, the gradient of loss * scale is added to it.
using ForwardBackward = std::function<double(const int32_t* in, const int32_t* out, int64_t b,
                                             std::span<float> grads, float scale)>;

double evaluate_windows(const ForwardBackward& fb, int64_t T, std::span<const int32_t> tokens,
                        int64_t windows, int64_t batch) {
  const int64_t span = static_cast<int64_t>(tokens.size());
  windows = std::max<int64_t>(1, std::min(windows, span - T));
  std::vector<int32_t> in, out;
  double sum = 0.0;
  int64_t counted = 0;
  for (int64_t w0 = 0; w0 < windows; w0 += batch) {
    const int64_t b = std::min(batch, windows - w0);
    in.resize(static_cast<size_t>(b * T));
    out.resize(static_cast<size_t>(b * T));
    for (int64_t i = 0; i < b; ++i) {
      const int64_t s0 = window_start(w0 + i, windows, T + 1, span);
      std::copy_n(tokens.begin() + s0, T, in.begin() + i * T);
      std::copy_n(tokens.begin() + s0 + 1, T, out.begin() + i * T);
    }
    sum += fb(in.data(), out.data(), b, {}, 1.0f) * static_cast<double>(b);
    counted += b;
  }
  return sum / static_cast<double>(counted);
}

Status check_run(const PretrainOptions& o, std::span<const int32_t> train_tokens,
                 std::span<const int32_t> val_tokens) {
  TS_RETURN_IF_ERROR(validate(o.shape));
  if (o.batch <= 0 || o.accum <= 0 || o.steps <= 0) {
    return invalid_argument("pretrain: batch, accum and steps must be positive");
  }
  const int64_t T = o.shape.context;
  for (auto [split, name] : {std::pair{train_tokens, "training"}, {val_tokens, "validation"}}) {
    if (static_cast<int64_t>(split.size()) < T + 1) {
      return invalid_argument(fmt::format("pretrain: the {} split has {} tokens, fewer than one "
                                          "window of {} + 1", name, split.size(), T));
    }
    for (int32_t tok : split) {
      if (tok < 0 || tok >= o.shape.vocab) {
        return invalid_argument(fmt::format("pretrain: token {} in the {} split is outside the "
                                            "vocabulary of {}", tok, name, o.shape.vocab));
      }
    }
  }
  return Status::ok();
}

// The loop itself over `trainable` (the parameters AdamW steps, over `pool`; decay where mask is
// 1), the model's pass `fb`; report.flops_per_token is the caller's.
Result<PretrainReport> train_loop(const PretrainOptions& o, std::span<float> params,
                                  std::vector<uint8_t> mask, const ForwardBackward& fb,
                                  std::span<const int32_t> train_tokens,
                                  std::span<const int32_t> val_tokens, const PretrainHooks& hooks,
                                  ThreadPool* pool, PretrainReport report,
                                  const std::function<void()>& after_update = {});

}  // namespace

double evaluate_loss(LlamaTrainer<float>& trainer, std::span<const float> params,
                     std::span<const int32_t> tokens, int64_t windows, int64_t batch) {
  const int64_t T = trainer.shape().context;
  return evaluate_windows(
      [&](const int32_t* in, const int32_t* out, int64_t b, std::span<float>, float) {
        return trainer.forward_backward(params, in, out, b, T, {});
      },
      T, tokens, windows, batch);
}

Result<PretrainReport> pretrain(const PretrainOptions& o, std::span<float> params,
                                std::span<const int32_t> train_tokens,
                                std::span<const int32_t> val_tokens, ThreadPool* pool,
                                const std::function<bool(const StepRecord&)>& on_step) {
  PretrainHooks hooks;
  hooks.on_step = on_step;
  return pretrain(o, params, train_tokens, val_tokens, pool, hooks);
}

Result<PretrainReport> pretrain(const PretrainOptions& o, std::span<float> params,
                                std::span<const int32_t> train_tokens,
                                std::span<const int32_t> val_tokens, ThreadPool* pool,
                                const PretrainHooks& hooks) {
  TS_RETURN_IF_ERROR(check_run(o, train_tokens, val_tokens));
  const int64_t T = o.shape.context;
  LlamaTrainer<float> trainer(o.shape, pool);
  trainer.set_recompute(o.recompute);
  if (static_cast<int64_t>(params.size()) != trainer.n_params()) {
    return invalid_argument(fmt::format("pretrain: {} parameters, the shape has {}", params.size(),
                                        trainer.n_params()));
  }
  trainer.set_bf16_compute(o.bf16);
  // The bf16 weight copy follows the f32 masters: made now and after every optimizer step.
  std::function<void()> after_update;
  if (o.bf16) after_update = [&] { trainer.round_weights(params); };
  std::vector<uint8_t> mask(params.size(), 0);
  for (const ParamTensor& t : trainer.layout()) {
    if (t.matrix && t.name != "token_embd.weight") std::fill_n(mask.begin() + t.offset, t.size, 1);
  }
  PretrainReport report;
  report.flops_per_token = training_flops_per_token(o.shape);
  const ForwardBackward fb = [&](const int32_t* in, const int32_t* out, int64_t b,
                                 std::span<float> grads, float scale) {
    return trainer.forward_backward(params, in, out, b, T, grads, scale);
  };
  return train_loop(o, params, std::move(mask), fb, train_tokens, val_tokens, hooks, pool,
                    std::move(report), after_update);
}

Result<PretrainReport> finetune_lora(const PretrainOptions& o, const LoraLayout& lora,
                                     std::span<const float> base, std::span<float> adapters,
                                     std::span<const int32_t> train_tokens,
                                     std::span<const int32_t> val_tokens, ThreadPool* pool,
                                     const PretrainHooks& hooks) {
  TS_RETURN_IF_ERROR(check_run(o, train_tokens, val_tokens));
  if (o.bf16) return invalid_argument("finetune_lora: bf16 compute is for pretraining only");
  const int64_t T = o.shape.context;
  LlamaTrainer<float> trainer(o.shape, pool);
  trainer.set_recompute(o.recompute);
  if (static_cast<int64_t>(base.size()) != trainer.n_params() ||
      static_cast<int64_t>(adapters.size()) != lora.n_params ||
      static_cast<int64_t>(lora.index.size()) != o.shape.layers * kLoraTargets) {
    return invalid_argument(fmt::format(
        "finetune_lora: {} base parameters and {} adapter values; the shape has {} and the "
        "adapter layout {}", base.size(), adapters.size(), trainer.n_params(), lora.n_params));
  }
  PretrainReport report;
  report.flops_per_token = lora_flops_per_token(o.shape, lora);
  const ForwardBackward fb = [&](const int32_t* in, const int32_t* out, int64_t b,
                                 std::span<float> grads, float scale) {
    return trainer.forward_backward_lora(base, lora, adapters, in, out, b, T, grads, scale);
  };
  if (hooks.state == nullptr || hooks.state->step == 0) {
    report.initial_val_loss = evaluate_windows(fb, T, val_tokens, o.eval_windows, o.batch);
  }
  return train_loop(o, adapters, std::vector<uint8_t>(adapters.size(), 1), fb, train_tokens,
                    val_tokens, hooks, pool, std::move(report));
}

namespace {

Result<PretrainReport> train_loop(const PretrainOptions& o, std::span<float> params,
                                  std::vector<uint8_t> mask, const ForwardBackward& fb,
                                  std::span<const int32_t> train_tokens,
                                  std::span<const int32_t> val_tokens, const PretrainHooks& hooks,
                                  ThreadPool* pool, PretrainReport report,
                                  const std::function<void()>& after_update) {
  const int64_t T = o.shape.context, B = o.batch;
  const auto n_params = static_cast<int64_t>(params.size());
  AdamW opt(n_params, o.adamw, std::move(mask));
  std::vector<float> grads(params.size());
  std::vector<int32_t> in(static_cast<size_t>(B * T)), out(static_cast<size_t>(B * T));
  std::mt19937_64 rng(o.seed);
  // A fresh distribution per draw keeps the data order a function of the generator alone (no
  // cached bits), so the generator's state is the whole data-order state.
  const std::uniform_int_distribution<int64_t>::param_type range(
      0, static_cast<int64_t>(train_tokens.size()) - T - 1);
  int64_t first_step = 0;
  if (hooks.state != nullptr && hooks.state->step > 0) {
    const TrainState& st = *hooks.state;
    if (st.step > o.steps || st.m.size() != params.size() || st.v.size() != params.size()) {
      return invalid_argument(fmt::format(
          "pretrain: the state to resume is at step {} with {} moments; this run has {} steps "
          "and {} parameters", st.step, st.m.size(), o.steps, params.size()));
    }
    opt.set_state(st.m, st.v, st.step);
    if (!st.rng.empty()) {
      std::istringstream is(st.rng);
      is >> rng;
      if (!is) return invalid_argument("pretrain: the state's data-order generator does not parse");
    }
    first_step = st.step;
  }
  if (after_update) after_update();

  double trained_s = 0.0;
  for (int64_t step = first_step; step < o.steps; ++step) {
    const double t0 = now_s();
    std::fill(grads.begin(), grads.end(), 0.0f);
    double loss = 0.0;
    for (int64_t a = 0; a < o.accum; ++a) {
      for (int64_t b = 0; b < B; ++b) {
        const int64_t s0 = std::uniform_int_distribution<int64_t>(range)(rng);
        if (hooks.window_starts != nullptr) hooks.window_starts->push_back(s0);
        std::copy_n(train_tokens.begin() + s0, T, in.begin() + b * T);
        std::copy_n(train_tokens.begin() + s0 + 1, T, out.begin() + b * T);
      }
      loss += fb(in.data(), out.data(), B, grads, 1.0f / static_cast<float>(o.accum));
    }
    StepRecord r;
    r.step = step + 1;
    r.loss = loss / static_cast<double>(o.accum);
    r.grad_norm = clip_global_norm(grads, o.clip);
    r.lr = warmup_cosine_lr(step, o.warmup, o.steps, o.lr, o.min_lr_ratio);
    opt.step(params, grads, r.lr, pool);
    if (after_update) after_update();
    trained_s += now_s() - t0;
    report.tokens += B * T * o.accum;
    r.seconds = trained_s;
    if ((o.eval_every > 0 && r.step % o.eval_every == 0) || r.step == o.steps) {
      if (hooks.before_eval) hooks.before_eval(r.step);
      const double e0 = now_s();
      r.val_loss = evaluate_windows(fb, T, val_tokens, o.eval_windows, B);
      report.eval_seconds += now_s() - e0;
      report.final_val_loss = r.val_loss;
      if (o.target_loss > 0 && report.target_step < 0 && r.val_loss <= o.target_loss) {
        report.target_step = r.step;
        report.target_seconds = trained_s;
      }
    }
    report.steps.push_back(r);
    if (hooks.on_step && !hooks.on_step(r)) break;
  }
  report.seconds = trained_s;
  if (hooks.state != nullptr) {
    TrainState& st = *hooks.state;
    st.step = opt.steps();
    st.m.assign(opt.m().begin(), opt.m().end());
    st.v.assign(opt.v().begin(), opt.v().end());
    std::ostringstream os;
    os << rng;
    st.rng = os.str();
  }
  return report;
}

}  // namespace

}  // namespace tessera::train
