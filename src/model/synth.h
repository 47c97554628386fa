// Synthetic models: random-weight GGUF files with the exact shapes of real models, so anyone can
// benchmark and test without downloading weights. The vocabulary is copied from a vocab-only GGUF
// when given, otherwise a small SentencePiece-style vocabulary (bytes, letters, common pieces) is
// generated so that text round-trips.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

struct SynthShape {
  std::string name;
  int64_t dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t ffn_dim = 0;
  int64_t n_vocab = 0;
  int64_t context_length = 2048;
  double rope_base = 10000.0;
  bool tied_output = false;
  bool llama3_rope = false;  // writes rope_freqs.weight as Llama 3 converters do
};

// Known shapes: tinyllama-1.1b, llama-3.2-1b, smollm2-135m, and "tiny" (for tests and demos).
const std::vector<SynthShape>& synth_shapes();
std::optional<SynthShape> find_synth_shape(const std::string& name);

// The families write_synthetic_model can write (`general.architecture` names): llama, qwen2,
// qwen3, mistral, phi3, gemma2, gemma3.
const std::vector<std::string>& synth_architectures();

struct SynthOptions {
  SynthShape shape;
  // general.architecture and the key prefix; the family's own tensors are added (qwen2: Q/K/V
  // biases; qwen3: per-head Q/K norms; phi3: fused QKV and gate/up; gemma2: post-norms and the
  // soft-cap keys; gemma3: post-norms and Q/K norms; both gemmas tie the output).
  std::string arch = "llama";
  // mistral, gemma2, gemma3: written as <arch>.attention.sliding_window when > 0.
  int64_t sliding_window = 0;
  // Matrices; norms stay f32. A 256-block dtype falls back to Q4_0 (q4_K), IQ4_NL (iq4_xs) or
  // Q8_0 (others) for matrices whose rows are not a multiple of 256.
  kernels::DType dtype = kernels::DType::kF32;
  uint64_t seed = 1;
  // Tokenizer metadata to copy (tokenizer.* keys). When set, the vocabulary size follows it.
  std::optional<Metadata> vocab;
};

// Writes a GGUF file at `path`. Errors: kInvalidArgument for shapes that do not fit the dtype's
// block size, an unsupported dtype, an unknown arch or a sliding window on another family than
// mistral and the gemmas; kIoError from writing.
Status write_synthetic_model(const SynthOptions& options, const std::string& path);

// The generated SentencePiece-style vocabulary of `n_vocab` tokens, as tokenizer.* metadata
// (exposed for tests). Precondition: n_vocab >= 512.
Metadata synthetic_vocab(int64_t n_vocab);

}  // namespace tessera::model
