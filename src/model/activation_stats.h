// What the weight matrices see: per input column, the sum of squared activations over a
// calibration text. Two consumers: the importance matrix that weights the quantizers' rounding
// search (`tessera eval imatrix`, `tessera quantize --imatrix`, llama.cpp's imatrix idea) and
// Wanda pruning (score |W_ij| * ||x_j||, `tessera prune --method wanda`).
//
// The model reports each matrix's input through Model::set_matmul_input_observer (model.h);
// matrices that share an input (Q, K, V; gate, up) each get the same statistics.
// Thread-safety: collect_activation_stats runs the model (one call at a time per model); the
// file functions are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::model {

// One matrix's statistics. sum_sq[j] = sum over observed tokens of x_j^2 for input column j
// (n_cols entries); count = tokens observed. mean square = sum_sq[j] / count.
// sum_xxt (ActivationStatsOptions::covariance only, else empty): the whole second-moment sums,
// n_cols x n_cols row-major, sum_xxt[i * n + j] = sum over tokens of x_i x_j (its diagonal is
// sum_sq) - what error-feedback quantization (model/gptq.h) needs.
struct TensorActivationStats {
  std::vector<double> sum_sq;
  int64_t count = 0;
  std::vector<double> sum_xxt;
};

struct ActivationStats {
  std::map<std::string, TensorActivationStats> tensors;  // by GGUF tensor name
  int64_t n_chunks = 0;                                   // calibration chunks run
  int32_t chunk_size = 0;                                 // tokens per chunk (0: unknown)
  std::string dataset;                                    // where the text came from (file name)

  // sqrt(sum_sq[j] / count) for the tensor, i.e. the RMS of column j (Wanda's ||x_j|| up to a
  // factor common to the row, which does not change a row's ranking); empty if unknown.
  std::vector<float> column_rms(std::string_view tensor) const;
};

struct ActivationStatsOptions {
  int32_t ctx = 512;           // tokens per chunk (chunked as perplexity does: BOS-led chunks)
  int64_t max_chunks = 0;      // 0: every whole chunk of the text
  ThreadPool* pool = nullptr;  // the forward pass's threads (null: one)
  // Also accumulate each matrix's whole x x^T (TensorActivationStats::sum_xxt): n_cols^2 doubles
  // per matrix and n_tokens n_cols^2 / 2 multiply-adds per observed batch.
  bool covariance = false;
  std::function<void(int64_t chunk, int64_t n_chunks)> progress;
};

// Runs `model` over `text` chunk by chunk and accumulates every weight matrix's input statistics.
// Every token of a chunk is observed, the output matrix's input included (llama-imatrix observes
// whole chunks too). The result's dataset is left empty for the caller to name.
// Errors: kInvalidArgument for ctx < 8 or a text shorter than one chunk; kUnsupported when the
// architecture does not report matmul inputs; the model's forward errors.
Result<ActivationStats> collect_activation_stats(Model& model, const Tokenizer& tokenizer,
                                                 std::string_view text,
                                                 const ActivationStatsOptions& options);

}  // namespace tessera::model
