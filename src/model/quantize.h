// Whole-model quantization (`tessera quantize IN OUT --type T`): reads a model file (GGUF of any
// supported type, or a llama2.c checkpoint, both through open_model_file) and writes a GGUF whose
// weight matrices are re-encoded in the chosen type or mix, every other tensor and all metadata
// kept.
//
// Types: a plain dtype (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q6_k, iq4_nl, iq4_xs)
// or one of llama.cpp's named mixes (q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m), so
// a Tessera file and a llama-quantize file of the same name hold the same tensor types. The rules
// (llama.cpp's, for dense llama-family models; written down in docs/QUANTIZATION.md):
//   - only matrices (2+ dims, named *.weight) are quantized; 1-D tensors (norms) stay f32;
//   - the output matrix (output.weight, or token_embd.weight when the output is tied to it)
//     takes q6_k under every quantized type below q8_0 (q8_0 when its rows do not fit 256-blocks);
//   - a mix raises chosen matrices: attn_v and ffn_down by layer (q4_k_m / q5_k_m: q6_k in the
//     layers `more_bits` picks, the first and last eighth and every third in between; q4_k_s:
//     q5_k in the first layers; q3_k_*: q4_k/q5_k), attn_output under q2_k and q3_k_*;
//   - a row length the type's block does not divide falls back as llama.cpp does: q2_k and q3_k
//     to q4_0, q4_k to q5_0, q5_k to q5_1, q6_k to q8_0, iq4_xs to iq4_nl; f16 if even that does
//     not divide it.
// With an importance matrix (QuantizeOptions::imatrix, from `tessera eval imatrix` or
// llama-imatrix), every matrix it has statistics for is coded by its type's weighted quantizer
// (kernels/weighted_quantize.h) with importance = each input column's mean square; matrices it
// lacks are coded unweighted and listed in the report. Without one, the output is byte-identical
// to the unweighted quantizers'.
// Not yet: the i-quant mixes below 4 bits, mixture-of-experts and non-llama architectures'
// special cases.
// Thread-safety: pure functions; quantize_model uses its own threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/activation_stats.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// What a --type name means: the base dtype, the mix rules, and the file type id written to
// general.file_type (llama.cpp's llama_ftype numbering).
struct QuantType {
  std::string name;           // "q4_k_m"
  kernels::DType base;        // the type most matrices get
  uint32_t file_type = 0;     // general.file_type
};

// Every accepted --type, in order of size.
const std::vector<QuantType>& quant_types();
// Errors: kInvalidArgument naming the accepted types.
Result<QuantType> find_quant_type(std::string_view name);

// One tensor's fate.
struct QuantPlanEntry {
  std::string tensor;
  kernels::DType from = kernels::DType::kF32;
  kernels::DType to = kernels::DType::kF32;
  std::string why;  // "base", "output", "more bits (layer 3)", "fallback: 576 % 256", ...
};

// The type of every tensor of `in` under `type` (the rules above), in file order.
// Errors: kInvalidArgument when the model lacks block_count or a layer number cannot be read
// from a per-layer tensor's name; kUnsupported when the chosen type (or its fallback) has no
// kernels in this build.
Result<std::vector<QuantPlanEntry>> plan_quantization(const ModelFile& in, const QuantType& type);

struct QuantizeOptions {
  int n_threads = 0;  // 0: all cores
  // Importance matrix (not owned; null: none), by GGUF tensor name.
  const ActivationStats* imatrix = nullptr;
  // Called from the calling thread after each tensor with the bytes of input done and in total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct QuantizeReport {
  std::vector<QuantPlanEntry> plan;
  uint64_t bytes_in = 0, bytes_out = 0;
  int64_t n_quantized = 0;  // tensors whose type changed
  int64_t n_weighted = 0;   // of those, coded with importance weights
  // Of those, coded with error feedback over the input's whole second moments (model/gptq.h),
  // when the importance matrix holds them (`tessera eval imatrix --covariance`).
  int64_t n_error_feedback = 0;
  // Re-encoded tensors of a quantized type that the importance matrix has no statistics for
  // (coded unweighted), when one was given.
  std::vector<std::string> without_imatrix;
  double seconds = 0.0;
};

// Writes `out_path` (via a temporary file renamed into place). Errors: those of
// plan_quantization; kUnsupported for an input tensor type without a to_float kernel;
// kInvalidArgument when the importance matrix's column count for a tensor differs from the
// tensor's row length (the matrix was made for another model); kIoError.
Result<QuantizeReport> quantize_model(const ModelFile& in, const QuantType& type,
                                      const std::string& out_path,
                                      const QuantizeOptions& options = {});

}  // namespace tessera::model
