// CostModel: how long one engine iteration of a model replica takes for a given mix of work, how
// much KV cache the replica holds, and how long its weights take to load, suspend and resume.
// Two implementations: RooflineCost (an accelerator spec and a model shape, for fleets of
// hardware we do not have) and MeasuredCost (this CPU's `tessera bench model` numbers, so a
// simulation of the local machine can be checked against the live fleet). Also ModelShape, the
// public shapes of the models the simulator sizes.
// Thread-safety: ModelShape and the options are plain values; a CostModel is immutable after
// construction and all its methods are const and safe to call from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessera/base/status.h"
#include "tessera/sim/accelerator.h"

namespace tessera::sim {

// The architecture numbers that set a decoder-only transformer's bytes and FLOPs.
struct ModelShape {
  std::string name;
  int64_t n_params = 0;  // all parameters, embeddings included
  int32_t n_layers = 0;
  int32_t d_model = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t d_ff = 0;
  int32_t vocab = 0;
  double bytes_per_weight = 2.0;  // 2 for bf16, 34/32 for q8_0 (GGML block bytes / block size)
  double kv_bytes_per_elem = 2.0;  // the KV cache's element size (f16/bf16)
  int32_t max_context = 0;

  int32_t head_dim() const { return n_heads > 0 ? d_model / n_heads : 0; }
  // n_params x bytes_per_weight (every weight at the one dtype; norms and embeddings too).
  int64_t weight_bytes() const;
  // K and V of one position over all layers: 2 x n_layers x n_kv_heads x head_dim x elem bytes.
  int64_t kv_bytes_per_token() const;
};

// A public model shape at a weight dtype. Shapes: llama-3-8b, llama-2-13b, qwen2.5-32b,
// llama-3-70b, tinyllama-1.1b, smollm2-135m (from each model's published config.json). Dtypes:
// GGML names as kernels/dtype.h knows them ("f32", "bf16", "f16", "q8_0", "q4_0", "q4_k", ...),
// case-insensitive; bytes per weight = block bytes / block size (q8_0 34/32, q4_0 18/32, q4_k
// 144/256). Errors: kInvalidArgument naming the known shapes, or the dtype and common choices.
Result<ModelShape> find_model_shape(std::string_view name, std::string_view dtype = "bf16");
std::vector<std::string> model_shape_names();

// The work of one engine iteration. Attention is described twice because its compute and its
// memory traffic scale differently: every token (row) attends its whole context (FLOPs), but a
// sequence's cached K/V is read from memory once per step however many of its rows the step runs
// (a fused attention kernel streams the K/V tiles past all the chunk's queries).
struct StepWork {
  int32_t prefill_tokens = 0;  // prompt tokens processed (all chunks of the step together)
  int32_t decode_rows = 0;     // sequences generating one token each
  // Positions attended, summed over all rows of the step: a decode row at context n attends n;
  // a prefill chunk of c tokens starting at position s attends c s + c (c + 1) / 2.
  int64_t context_tokens = 0;
  // KV positions read from memory, each sequence once: n for a decode row at context n, s + c
  // for that prefill chunk.
  int64_t kv_read_tokens = 0;
  int32_t tokens() const { return prefill_tokens + decode_rows; }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One line for reports: "roofline llama-3-8b bf16 on 2 x h100", "measured ... on this CPU".
  virtual std::string describe() const = 0;
  // Seconds of one engine iteration doing `work`; 0 for empty work. Precondition: counts >= 0.
  virtual double step_s(const StepWork& work) const = 0;
  // Weight bytes of the whole replica (all its accelerators together).
  virtual int64_t weight_bytes() const = 0;
  virtual int64_t kv_bytes_per_token() const = 0;
  // Tokens the replica's KV pool holds (the one place the simulator sizes it).
  virtual int64_t kv_capacity_tokens() const = 0;
  virtual double load_s() const = 0;     // cold: storage -> device memory, ready to serve
  virtual double resume_s() const = 0;   // host memory tier -> device memory
  virtual double suspend_s() const = 0;  // device memory -> host memory tier
  virtual int32_t accelerators() const = 0;  // the tensor-parallel degree
};

// RooflineCost: an iteration is bound by memory traffic or by compute, whichever is slower, plus
// the tensor-parallel all-reduces and a fixed overhead. With tp accelerators, spec `a` and shape
// `m` (tokens = prefill_tokens + decode_rows; ctx = context_tokens):
//   bytes     = m.weight_bytes() + kv_read_tokens x kv_bytes_per_token  (weights once, KV read)
//               + tokens x kv_bytes_per_token                            (KV written)
//   flops     = 2 x n_params x tokens + 4 x n_layers x d_model x ctx   (matmuls; QK^T and AV)
//   memory_s  = bytes / (tp x a.memory_bw_Bps x a.bw_efficiency)
//   compute_s = flops / (tp x a.flops x a.flops_efficiency)
//   comm_s    = tp > 1 ? 2 x n_layers x ring(tokens x d_model x 2 bytes) : 0
//               (Megatron-style TP: two all-reduces of the activations per layer; a ring
//               all-reduce of S bytes takes 2 (tp-1)/tp x S / a.interconnect_Bps, = S / bw at tp 2;
//               link latency is not modelled)
//   step_s    = a.step_overhead_s + max(memory_s, compute_s) + comm_s
// Weights and KV are split evenly over the tp accelerators. Memory moves:
//   load_s    = weight_bytes / a.disk_Bps + options.load_overhead_s  (one storage stream)
//   resume_s  = weight_bytes / (tp x a.host_link_Bps)                 (each accelerator its shard)
//   suspend_s = the same as resume_s (the link's other direction)
//   kv_capacity_tokens = floor((tp x a.memory_bytes - weight_bytes) x options.kv_memory_fraction
//                              / kv_bytes_per_token)
// The fraction leaves room for activations, CUDA graphs and fragmentation (vLLM's
// gpu_memory_utilization plays the same part).
struct RooflineOptions {
  int32_t tp = 1;                    // tensor-parallel degree, >= 1
  double kv_memory_fraction = 0.9;   // of the memory left after the weights, in (0, 1]
  double load_overhead_s = 0.0;      // added to a cold load (process start, graph capture)
};

// Errors: kInvalidArgument for tp < 1, a fraction outside (0, 1], an invalid spec or shape;
// kResourceExhausted when the weights do not fit tp accelerators' memory or leave no room for
// one token of KV (the message says how many accelerators would be needed).
Result<std::unique_ptr<CostModel>> make_roofline_cost(const ModelShape& shape,
                                                      const AcceleratorSpec& spec,
                                                      const RooflineOptions& options = {});

// MeasuredCost: this machine's costs from a `tessera bench model --json` record (its pp N and tg
// N results; pp runs N prompt tokens in one step, tg N one-token steps, both from an empty
// cache). Per step it charges one weight pass with one row, a fixed time per further row, and
// the larger of KV-read time and attention-compute time:
//   step_s = tg_step_s + (tokens - 1) x per_row_s
//            + max(kv_read_tokens x per_position_s, context_tokens x per_attn_s)
// The constants come from the record: k = KV bytes per position and A = attention FLOPs per
// (token, position), recorded ("kv_bytes_per_position", "attn_flops_per_position", at the top
// level or under "model") or solved from the two results' bytes_per_run (W + k x positions) and
// flops_per_run (2P x tokens + A x positions); then
//   per_position_s = k / (tg bytes_per_run / tg seconds)    (KV at the bandwidth tg achieved)
//   per_attn_s     = A / (pp flops_per_run / pp seconds)    (at the FLOP/s pp achieved)
//   tg_step_s      = 1 / tg tokens/s - the context term of tg's mean step ((N + 1) / 2 positions)
//   per_row_s      = (N / pp tokens/s - the context term of pp's step - tg_step_s) / (N - 1)
// so the model reproduces both measurements exactly: a decode step of b rows costs one weight
// pass plus b - 1 rows of compute, a prefill of p tokens about p / pp tokens/s. Assumptions:
// prefill and decode rows cost the same per row (one batched matmul), linearly in rows (true past
// the few rows where a CPU is still bandwidth-bound); medians of the repetitions (means when no
// median is recorded). Without a pp result per_row_s = tg_step_s (no batching gain) and
// per_attn_s = 0; a record without tg is an error.
struct MeasuredCostOptions {
  int64_t weight_bytes = 0;        // 0: the record's model.repacked_bytes, else model.bytes
  int64_t kv_bytes_per_token = 0;  // 0: the k derived above (rounded)
  int64_t kv_capacity_tokens = 0;  // required, > 0: the engine's KV pool in tokens
  double load_s = 0.0;             // cold load (e.g. `bench resume` disk_resume_s median)
  double resume_s = 0.0;           // host tier -> active (`bench resume` host_resume_s median)
  double suspend_s = 0.0;          // active -> host tier (not measured by `bench resume`)
  // > 0: replace the record's tg_step_s and per_row_s (the weight pass of a step, the time per
  // further row), e.g. with what a live run's engines took per iteration (the device accounting
  // of `bench fleet --json`): a shared machine's speed drifts (memory bandwidth up to 2x within
  // minutes here), so a record taken minutes before a run can be far from that run's costs.
  double tg_step_s = 0.0;
  double per_row_s = 0.0;
  std::string name;                // for describe(); empty: the record's model.name
};

// Errors: kInvalidArgument when the record lacks a tg result or the fields used above, when a
// throughput is not positive, or when kv_capacity_tokens <= 0.
Result<std::unique_ptr<CostModel>> measured_cost_from_json(const nlohmann::json& bench_model_record,
                                                           const MeasuredCostOptions& options);

// Fills weight_bytes, resume_s (median host_resume_s), suspend_s (median suspend_s, when recorded)
// and load_s (median disk_resume_s, when the disk tier ran) from a `tessera bench resume --json`
// record.
// Errors: kInvalidArgument when weight_bytes or host_resume_s is missing or empty.
Status apply_resume_record(const nlohmann::json& bench_resume_record, MeasuredCostOptions& options);

}  // namespace tessera::sim
