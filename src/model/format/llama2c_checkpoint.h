// llama2.c checkpoints (Karpathy's `run.c` format, version 0): a header of seven int32
// (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size
// means a separate classifier follows) and f32 weights. Presented as a ModelFile with GGUF tensor
// names (token_embd.weight, blk.N.attn_q.weight, ...) and `llama.*` metadata keys, tensor data
// pointing into the mapping (no copy). The checkpoint's RoPE tables are ignored: they equal
// theta = 10000 frequencies.
// Thread-safety: pure function.
#pragma once

#include <memory>

#include "tessera/base/mapped_file.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// Errors: kCorruptData when the header is implausible or the file size does not match the
// header's shapes exactly (with or without a separate classifier).
Result<ModelFile> read_llama2c_checkpoint(std::shared_ptr<const MappedFile> file);

}  // namespace tessera::model
