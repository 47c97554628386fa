// Model: a loaded architecture ready to run forward steps. The engine owns one per model and
// calls it from a single thread; the kernels underneath may use the ThreadPool it passes.
// Thread-safety: not thread-safe (holds scratch buffers); one caller thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
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

  // Models whose weights live in device memory (device_decoder.h): the device ("opencl:0";
  // empty for the CPU), the bytes of device memory the model itself holds (weights and step
  // scratch; KV pools belong to their caches), and the fleet's device tier: release frees them
  // (forward() then fails with kUnavailable until restore uploads them again from the
  // host copy, the file mapping). On the CPU: nothing to do.
  virtual std::string device_name() const { return {}; }
  virtual int64_t device_bytes() const { return 0; }
  virtual Status release_device_memory() { return Status::ok(); }
  virtual Status restore_device_memory() { return Status::ok(); }
  // A device model: the device's global memory less every buffer on it now (its weights
  // included), which the default KV budget takes its share of (the --kv-memory rule on the
  // device). -1 on the CPU.
  virtual int64_t device_free_bytes() const { return -1; }
  // Makes `kv` this model's before its first step: a device model puts the pool in device memory
  // now (the cache's mirror), so that blocks written into the cache before any step (prefix
  // blocks kept across a suspension) land where the steps read them. Errors: the device's
  // (kResourceExhausted naming the pool's size). Nothing to do on the CPU.
  virtual Status attach_cache(KvCache& /*kv*/) { return Status::ok(); }

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
