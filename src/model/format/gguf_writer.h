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

namespace tessera::model {

class GgufWriter {
 public:
  Metadata& metadata() { return metadata_; }

  // Adds a tensor; `shape` is in GGUF order (ne[0] innermost), 1 to 4 dims. The bytes are copied.
  // Errors: kInvalidArgument when data.size() does not match dtype and shape, or a duplicate name.
  Status add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                    std::span<const std::byte> data);

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
    std::vector<std::byte> data;
  };
  Metadata metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tessera::model
