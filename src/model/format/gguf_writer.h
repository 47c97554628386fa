// GGUF writer (version 3): metadata in insertion order, tensor infos, then tensor data aligned
// to `general.alignment` (default 32). Used by `tessera synth`, tests and conversions.
// Thread-safety: a GgufWriter is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

class GgufWriter {
 public:
  GgufWriter() = default;
  // Not copyable (a copy's pending tensors would point into the original's buffers); movable.
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;
  GgufWriter(GgufWriter&&) = default;
  GgufWriter& operator=(GgufWriter&&) = default;

  Metadata& metadata() { return metadata_; }

  // Adds a tensor; `shape` is in GGUF order (ne[0] innermost), 1 to 4 dims. The bytes are copied.
  // Errors: kInvalidArgument when data.size() does not match dtype and shape, or a duplicate name.
  Status add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                    std::span<const std::byte> data);

  // The same without copying: `data` must stay valid until the last write()/serialize() (for
  // conversions that stream a mapped model out without a second copy in memory).
  Status add_tensor_ref(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                        std::span<const std::byte> data);

  // A writer holding `file`'s metadata and tensors by reference (add_tensor_ref): `file` must
  // outlive the writer's writes. Errors: those of add_tensor_ref, naming the tensor.
  static Result<GgufWriter> referencing(const ModelFile& file);

  // Writes the file to `path` (via a temporary file renamed into place, so a failed write never
  // leaves a truncated model behind). Errors: kIoError.
  Status write(const std::string& path) const;

  // Serializes to memory (tests, fuzz corpora).
  std::vector<std::byte> serialize() const;

 private:
  struct PendingTensor {
    std::string name;
    kernels::DType dtype;
    std::vector<int64_t> shape;
    std::vector<std::byte> owned;     // the copy add_tensor makes (empty for add_tensor_ref)
    std::span<const std::byte> data;  // the bytes written
  };
  Status check_tensor(const std::string& name, kernels::DType dtype,
                      const std::vector<int64_t>& shape, size_t n_bytes) const;
  Metadata metadata_;
  // A PendingTensor's span into its own `owned` survives the vector's reallocation (moving a
  // std::vector keeps its buffer).
  std::vector<PendingTensor> tensors_;
};

}  // namespace tessera::model
