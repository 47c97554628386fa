// GGUF reader (versions 2 and 3) over a memory map. Validates everything before trusting it:
// counts against the bytes left, string and array lengths, tensor dimensions (overflow-checked),
// types (only supported dtypes are accepted; others are refused naming tensor and type),
// alignment, offsets and sizes within the file, and that tensors do not overlap.
// Thread-safety: pure functions; the result is immutable.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "tessera/base/mapped_file.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// Parses a mapped GGUF file. Tensor data points into `file`, which the result keeps alive.
// Errors: kCorruptData (malformed or inconsistent bytes), kUnsupported (version, tensor type).
Result<ModelFile> read_gguf(std::shared_ptr<const MappedFile> file);

// Parses GGUF bytes that the caller keeps alive for the result's lifetime (fuzzing, tests).
Result<ModelFile> parse_gguf(std::span<const std::byte> bytes);

}  // namespace tessera::model
