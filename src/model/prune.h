// N:M pruning of a model's block matrices (`tessera prune IN OUT --pattern 2:4 --method M`):
// reads a model file (GGUF or llama2.c, through open_model_file) and writes a GGUF in which, in
// every layer's attn_q/k/v/output and ffn_gate/up/down weight, exactly N of each aligned group of
// M consecutive weights of a row (M consecutive input columns) are kept and the rest are zero.
// Embeddings, the output matrix and norms are copied unchanged (Wanda's choice, and they are a
// few percent of a large model's weights).
//
// Which weights stay is decided per row by a score: magnitude |W_ij|, or Wanda |W_ij| * ||x_j||
// with ||x_j|| the RMS of input column j over a calibration text (ActivationStats::column_rms;
// Sun et al. 2023, "A Simple and Effective Pruning Approach for LLMs"). Ties keep the earlier
// column.
//
// Output: with 2:4 and the default packed output the pruned matrices are stored in Tessera's
// sparse types (kernels/sparse_blocks.h: f16_2of4, q8_0_2of4, q4_0_2of4), which only Tessera
// reads; a matrix whose rows the packed block does not divide is written pruned in the dense
// type instead, or in f16 when that type's blocks do not divide them either (reported). `dense = true` writes every pruned matrix in its dense type with the
// zeros stored (any N:M; the file loads in llama.cpp).
// Thread-safety: pure functions; prune_model uses its own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// Keep `n` of every `m` consecutive weights. 0 < n < m <= 64.
struct PrunePattern {
  int n = 2;
  int m = 4;
};
// Parses "N:M". Errors: kInvalidArgument saying what is accepted.
Result<PrunePattern> parse_prune_pattern(std::string_view text);

enum class PruneMethod { kMagnitude, kWanda };
// "magnitude" or "wanda". Errors: kInvalidArgument.
Result<PruneMethod> parse_prune_method(std::string_view text);

// keep[j] = 1 for the p.n columns of largest score in each aligned group of p.m (the earlier
// column on ties), else 0. Precondition: n_cols % p.m == 0.
void select_n_of_m(const float* score, int64_t n_cols, PrunePattern p, uint8_t* keep);

// score[j] = |w[j]| (col_norm null: magnitude) or |w[j]| * col_norm[j] (Wanda).
void prune_scores(const float* w, const float* col_norm, int64_t n_cols, float* score);

// Whether `tensor` is one of the block matrices pruning touches (blk.N.attn_q.weight, ...).
bool is_prunable_tensor(std::string_view tensor);

struct PruneOptions {
  PrunePattern pattern;
  PruneMethod method = PruneMethod::kMagnitude;
  // Dense type of the pruned matrices (F16, Q8_0 or Q4_0 when packed; any supported type when
  // dense). nullopt: each matrix's own type (which must then be one of those three when packed).
  std::optional<kernels::DType> type;
  bool dense = false;  // see the file comment
  // Wanda's ||x_j|| per input column of a tensor (n_cols values), or empty when unknown (an
  // error for a prunable tensor). Required for kWanda, ignored for kMagnitude.
  std::function<std::vector<float>(std::string_view tensor)> column_norms;
  int n_threads = 0;  // 0: all cores
  // Called from the calling thread after each tensor with the bytes of input done and in total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct PruneEntry {
  std::string tensor;
  kernels::DType from = kernels::DType::kF32;
  kernels::DType to = kernels::DType::kF32;
  bool pruned = false;
  std::string why;  // "packed", "dense", "fallback: 172 % 32 (pruned, f16)", "copied"
};

struct PruneReport {
  std::vector<PruneEntry> entries;  // file order
  uint64_t bytes_in = 0, bytes_out = 0;
  int64_t n_pruned = 0;           // matrices pruned
  int64_t n_weights_pruned = 0;   // weights in those matrices
  int64_t n_weights_zeroed = 0;   // of them set to zero
  double seconds = 0.0;
};

// Writes `out_path` (the GGUF writer's temporary-and-rename). Metadata is kept, plus
// tessera.prune.pattern ("2:4") and tessera.prune.method. Errors: kInvalidArgument for a bad
// pattern, a packed pattern other than 2:4, a packed type that is not f16/q8_0/q4_0, Wanda
// without norms for a tensor, or a row length the pattern's M does not divide; kUnsupported for
// an input tensor without kernels; kIoError.
Result<PruneReport> prune_model(const ModelFile& in, const std::string& out_path,
                                const PruneOptions& options);

}  // namespace tessera::model
