// Model: a loaded architecture ready to run forward steps. The engine owns one per model and
// calls it from a single thread; the kernels underneath may use the ThreadPool it passes.
// Thread-safety: not thread-safe (holds scratch buffers); one caller thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/batch.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

struct LoraAdapter;

// Sees the input of every weight matmul of a forward pass (calibration statistics:
// activation_stats.h). `tensor` is the weight's GGUF name (blk.N.attn_q.weight, ..., output.weight,
// or token_embd.weight when the output is tied to it); x holds n_tokens rows of n_cols floats,
// valid only during the call. Called on the thread that called forward, in graph order, once per
// distinct input: matrices that share an input (Q, K, V; gate, up) are each reported with it.
class MatmulInputObserver {
 public:
  virtual ~MatmulInputObserver() = default;
  virtual void observe(std::string_view tensor, const float* x, int64_t n_tokens,
                       int64_t n_cols) = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // The file the weights live in (kept alive by the model).
  virtual const ModelFile& file() const = 0;
  // Bytes of the weight image the model made at load (load_options.h), 0 when it reads the file
  // mapping in place.
  virtual size_t image_bytes() const { return 0; }

  // Installs `observer` (not owned; null removes it) to see every weight matmul's input in later
  // forward calls; costs nothing while none is set. Returns false for architectures that cannot
  // report their matmul inputs (the default).
  virtual bool set_matmul_input_observer(MatmulInputObserver* /*observer*/) { return false; }

  // Runs one step over `batch`, reading and writing `kv`, and writes batch.n_logits() rows of
  // n_vocab logits to `logits` in row order. `pool` may be null.
  // Errors: kInvalidArgument (token id out of vocabulary, slot or position out of the cache's
  // range, logits too small, rows of a sequence out of order); the cache is unchanged for
  // rows before the failing check only if the batch is rejected before running (it is: all
  // rows are validated first).
  virtual Status forward(const Batch& batch, KvCache& kv, std::span<float> logits,
                         ThreadPool* pool) = 0;
  // As forward(), but writes batch.n_logits() rows of the final hidden state instead of logits:
  // config().dim floats per row, after the final norm and before the output projection - what
  // embeddings pool. `hidden` must hold n_logits() * dim floats.
  // Errors: as forward(); kUnsupported for architectures that cannot report it (the default).
  virtual Status forward_hidden(const Batch& /*batch*/, KvCache& /*kv*/,
                                std::span<float> /*hidden*/, ThreadPool* /*pool*/) {
    return Status(ErrorCode::kUnsupported, "this architecture does not expose its hidden states");
  }
  // forward() with the layers whose skip[l] is non-zero passed over (the residual stream goes
  // through them unchanged; their K/V are neither written nor read): the model drafting for
  // itself with fewer layers (model/layer_skip.h). `skip` has n_layers entries.
  // Errors: as forward(); kUnsupported for architectures that cannot skip layers.
  virtual bool can_skip_layers() const { return false; }

  // LoRA adapters applied per batch row (Batch::adapter_ids; -1 none): registers `adapter` as
  // `id` (>= 0), replacing whatever had that id; null unregisters. The adapter must have been
  // loaded against this model's file (load_lora_adapter checks names and shapes). A batch row
  // naming an unregistered id is refused by forward(). Call between steps, from the caller's
  // thread. Errors: kUnsupported for architectures without adapters; kInvalidArgument (id out
  // of range, a matrix this model does not have).
  virtual Status set_adapter(int32_t /*id*/, std::shared_ptr<const LoraAdapter> /*adapter*/) {
    return Status(ErrorCode::kUnsupported, "this architecture does not apply LoRA adapters");
  }
  virtual Status forward_skipping(const Batch& /*batch*/, KvCache& /*kv*/,
                                  std::span<float> /*logits*/, ThreadPool* /*pool*/,
                                  std::span<const uint8_t> /*skip*/) {
    return Status(ErrorCode::kUnsupported, "this architecture cannot skip layers");
  }
};

}  // namespace tessera::model
