// A llama model that trains: parameters in one flat buffer laid out as named GGUF tensors, the
// forward pass keeping what the backward pass needs, and the backward pass accumulating every
// parameter's gradient into a buffer of the same layout (ops.h for each op). T = double is the
// reference the tests check against finite differences; T = float is what training runs (the
// blocked f32 GEMM of kernels/gemm_f32.h over a thread pool).
//
// Letters: B sequences of T positions (N = B*T rows), C width, H query heads, G key/value heads,
// D = C/H head width, F feed-forward width, V vocabulary, L layers. Tensors (GGUF names, shapes as
// [rows, columns] row-major, i.e. GGUF's ne reversed):
//   token_embd.weight [V, C]            output_norm.weight [C]          output.weight [V, C]
//   blk.l.attn_norm.weight [C]          blk.l.attn_q.weight [H*D, C]    blk.l.attn_k.weight [G*D, C]
//   blk.l.attn_v.weight [G*D, C]        blk.l.attn_output.weight [C, H*D]
//   blk.l.ffn_norm.weight [C]           blk.l.ffn_gate.weight [F, C]    blk.l.ffn_up.weight [F, C]
//   blk.l.ffn_down.weight [C, F]
// RoPE is GGML's normal (adjacent-pair) layout, so the tensors are what a llama GGUF holds and
// Tessera's inference forward computes the same function from them.
// LoRA (forward_backward_lora): the same pass over a frozen base with low-rank adapters added to
// chosen matrices (lora_layout.h); only the adapters' gradients are computed.
// Thread-safety: one trainer per thread; forward_backward() reuses its activation buffers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"

namespace tessera::train {

struct LoraLayout;  // lora_layout.h

struct LlamaShape {
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0;
  int64_t context = 0;  // longest sequence (T) the model is trained on
  double rope_base = 10000.0;
  double rms_eps = 1e-5;
  int64_t head_dim() const { return heads > 0 ? dim / heads : 0; }
};
// Errors: kInvalidArgument naming the field (non-positive sizes, dim not divisible by heads,
// heads by kv_heads, odd head width).
Status validate(const LlamaShape& s);

struct ParamTensor {
  std::string name;            // GGUF name
  std::vector<int64_t> shape;  // [rows, columns] or [n]
  int64_t offset = 0;          // into the flat buffer, in elements
  int64_t size = 0;            // elements
  bool matrix = false;         // a 2-D weight (weight decay applies to these only)
};

// The tensors of `s` in GGUF order (token_embd, the blocks, output_norm, output) and their total
// element count. Precondition: validate(s) is ok.
std::vector<ParamTensor> llama_param_layout(const LlamaShape& s, int64_t* total);

// Fills params (laid out by llama_param_layout) as llama2.c and GPT-2 initialize: N(0, 0.02) for
// matrices, with the two residual projections (attn_output, ffn_down) scaled by 1/sqrt(2L), and
// ones for norm weights. Deterministic in `seed`.
void init_llama_params(const LlamaShape& s, std::span<float> params, uint64_t seed);

template <class T>
class LlamaTrainer {
 public:
  // Precondition: validate(shape) is ok. `pool` (may be null) is used by the T = float ops.
  explicit LlamaTrainer(const LlamaShape& shape, ThreadPool* pool = nullptr);

  const LlamaShape& shape() const { return s_; }
  const std::vector<ParamTensor>& layout() const { return layout_; }
  int64_t n_params() const { return n_params_; }

  // Mean cross-entropy of predicting targets[N] from tokens[N] (B sequences of T positions, rows
  // b*T + t at position t; a target < 0 is not counted). If grads is non-empty (n_params()
  // elements), the gradient of loss * grad_scale is ADDED to it (gradient accumulation).
  // Preconditions: params and grads have n_params() elements, tokens are < vocab, T <= context.
  double forward_backward(std::span<const T> params, const int32_t* tokens,
                          const int32_t* targets, int64_t batch, int64_t t, std::span<T> grads,
                          T grad_scale = T(1));
  // The same for the base `base` (n_params(), frozen: its gradient is neither computed nor
  // stored) with the adapters `adapters` (lora.n_params elements, laid out by `lora`, made by
  // make_lora_layout for this shape) added to their target matrices. If adapter_grads is
  // non-empty (lora.n_params elements), the adapters' gradient of loss * grad_scale is ADDED to
  // it; the activation gradients still flow through the frozen matrices.
  double forward_backward_lora(std::span<const T> base, const LoraLayout& lora,
                               std::span<const T> adapters, const int32_t* tokens,
                               const int32_t* targets, int64_t batch, int64_t t,
                               std::span<T> adapter_grads, T grad_scale = T(1));
  // The logits of the last forward_backward(), [N, V].
  std::span<const T> logits() const { return logits_; }

  // Activation recomputation: the forward pass keeps only each layer's input x_l and the
  // backward pass recomputes the layer's activations from it (one more forward per layer, about
  // a third more FLOPs) into one shared set of buffers; the layer activations then take one
  // layer's worth instead of L. Results are bit-identical either way (the same ops on the same
  // inputs). Takes effect at the next forward_backward().
  void set_recompute(bool on) { recompute_ = on; }
  bool recompute() const { return recompute_; }
  // BF16 compute (T = float only; `tessera train --compute bf16`): the projections and the output
  // matmul run on the bf16 GEMM (kernels/gemm_bf16.h) against a bf16 copy of their weights, with
  // activations and gradients rounded to bf16 at the GEMM inputs and every sum, gradient and
  // everything else (embedding, norms, RoPE, attention, softmax, loss) in f32. The copy is the one
  // made by the last round_weights(): call it after every change of the parameters (once per
  // optimizer step, not per micro-batch). The LoRA pass always computes in f32.
  void set_bf16_compute(bool on);
  bool bf16_compute() const { return bf16_; }
  // Rounds the matmul weights of `params` (n_params() elements) to the bf16 copy.
  void round_weights(std::span<const T> params);

  // Bytes held by the layer activation buffers (capacity), after a pass.
  int64_t activation_bytes() const;

 private:
  struct Layer {  // activations of one layer, N rows
    std::vector<T> x, xn1, rstd1, q, k, v, probs, att, mid, xn2, rstd2, g, u, h;
    std::array<std::vector<T>, 7> lora_u;  // scale * x A^T [N, r] per LoRA target (LoraTarget order)
  };
  // What one pass reads and writes: the base (and its gradient, or empty), the adapters (and
  // theirs, or empty) when `lora` is set.
  struct Pass {
    std::span<const T> params;
    std::span<T> grads;
    const LoraLayout* lora = nullptr;
    std::span<const T> adapters;
    std::span<T> adapter_grads;
  };
  double run(const Pass& pass, const int32_t* tokens, const int32_t* targets, int64_t batch,
             int64_t t, T grad_scale);
  // Layer l's forward from a.x into a's activations; its output x_{l+1} into out[N, C].
  void layer_forward(const Pass& pass, int64_t l, Layer& a, int64_t batch, int64_t t, T* out);
  // y[n, m] = x[n, k] W^T (+ the adapter's update) for block tensor j of layer l.
  void proj_forward(const Pass& pass, int64_t l, int j, const T* x, T* y, int64_t n, int64_t k,
                    int64_t m);
  // dx += dy W (+ through the adapter); W's gradient where pass.grads is set, A's and B's where
  // pass.adapter_grads is.
  void proj_backward(const Pass& pass, int64_t l, int j, const T* dy, const T* x, T* dx,
                     int64_t n, int64_t k, int64_t m);
  // The base's matmul with tensor `tensor` as W: bf16 when bf16_ (and not a LoRA pass), else f32.
  void mm_w(const Pass& pass, size_t tensor, const T* x, T* y, int64_t n, int64_t k, int64_t m);
  void mm_back_w(const Pass& pass, size_t tensor, const T* dy, const T* x, T* dx, T* dw,
                 int64_t n, int64_t k, int64_t m);
  const T* p(std::span<const T> params, size_t tensor) const;
  T* p(std::span<T> params, size_t tensor) const;

  LlamaShape s_;
  ThreadPool* pool_;
  std::vector<ParamTensor> layout_;
  int64_t n_params_ = 0;
  std::vector<Layer> acts_;  // with recompute_: only each layer's x and LoRA products
  bool recompute_ = false;
  Layer work_;               // recompute_: the one layer whose activations are live
  std::vector<T> work_out_;  // recompute_: the recomputed layer's output (not needed)
  std::vector<T> xl_, xf_, rstdf_, logits_, dlogits_, dx_, dmid_, datt_, dq_, dk_, dv_,
      dh_, dg_, du_, dxn_, lora_tmp_, lora_du_;
  std::vector<int32_t> pos_;
  bool bf16_ = false;
  bool bf16_ready_ = false;           // round_weights() has run since set_bf16_compute(true)
  std::vector<uint16_t> w_bf16_;      // the matmul weights rounded to bf16, params' layout
};

extern template class LlamaTrainer<float>;
extern template class LlamaTrainer<double>;

}  // namespace tessera::train
