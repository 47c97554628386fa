// Hugging Face safetensors files (model shards, PEFT adapters): an 8-byte little-endian header
// length N, N bytes of JSON, then the tensor bytes. The JSON maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the byte buffer that follows the
// header) plus an optional "__metadata__" object of strings.
//
// The reader trusts nothing: the header length (at most 100 MB, as the reference implementation
// allows, and within the file), the JSON (valid, an object, every entry well formed with no
// unknown or missing fields), each shape (at most 4 dimensions, no zero-sized tensor, element
// counts overflow-checked), each dtype (F32, F16 and BF16 are read; the format's other types are
// refused by name), and the offsets: each tensor's byte range must hold exactly shape x dtype
// bytes, and the ranges must tile the buffer with no gap or overlap and end at the end of the
// file (the format's own rule). Tensors whose bytes are not aligned to their element size are
// copied into aligned buffers the result owns (the format does not promise alignment).
//
// Results are ModelFiles (format kSafetensors) with the file's own tensor names, in the order
// of their bytes, and shapes converted to GGUF order (ne[0] = the last, contiguous dimension: a
// PyTorch [out, in] weight becomes ne = {in, out}). "__metadata__" entries become string
// metadata under "safetensors.<key>".
// Thread-safety: pure functions; the results are immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/mapped_file.h"
#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// Largest header the reader accepts (bytes of JSON).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Parses a mapped safetensors file; tensor data points into `file` (or into owned aligned copies).
// Errors: kCorruptData (malformed or inconsistent), kUnsupported (a dtype Tessera does not read,
// more than 4 dimensions, an empty tensor); messages name the tensor and field.
Result<ModelFile> read_safetensors(std::shared_ptr<const MappedFile> file);

// The same over bytes the caller keeps alive for the result's lifetime (fuzzing, tests).
Result<ModelFile> parse_safetensors(std::span<const std::byte> bytes);

// Builds safetensors files (tests, fixtures, conversions). Tensors are written in the order
// added, 8-byte aligned (the header is padded with spaces, as the reference writer does).
class SafetensorsWriter {
 public:
  // `shape` in PyTorch order (outermost first), 0 to 4 dims. dtype F32, F16 or BF16.
  // Errors: kInvalidArgument (size mismatch, duplicate or empty name, other dtype).
  Status add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                    std::span<const std::byte> data);
  void add_metadata(std::string key, std::string value);

  std::vector<std::byte> serialize() const;
  // Via a temporary file renamed into place. Errors: kIoError.
  Status write(const std::string& path) const;

 private:
  struct Pending {
    std::string name;
    kernels::DType dtype;
    std::vector<int64_t> shape;
    std::vector<std::byte> data;
  };
  std::vector<Pending> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace tessera::model
