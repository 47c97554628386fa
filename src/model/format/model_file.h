// ModelFile: what every file format loader produces: metadata plus named tensors whose bytes
// live in memory owned by the ModelFile (usually an mmap of the file, zero-copy). Formats other
// than GGUF (llama2.c checkpoints) are presented with GGUF's tensor names and metadata keys, so
// architectures read one vocabulary.
// Shapes follow GGUF: ne[0] is the innermost, contiguous dimension. A weight matrix that maps
// C input features to R outputs has ne = {C, R}: R rows of C values.
// Thread-safety: immutable after loading; concurrent reads are safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/mapped_file.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/metadata.h"

namespace tessera::model {

struct TensorInfo {
  std::string name;
  kernels::DType dtype = kernels::DType::kF32;
  int n_dims = 0;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};  // unused trailing dimensions are 1
  uint64_t offset = 0;                       // from the start of the data section (GGUF)
  const std::byte* data = nullptr;           // points into memory owned by the ModelFile
  size_t n_bytes = 0;

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;  // "[2048, 32000]"
};

// kHfCheckpoint: a Hugging Face checkpoint directory (hf_checkpoint.h), presented as GGUF would
// present the same model.
enum class FileFormat { kGguf, kLlama2c, kSafetensors, kHfCheckpoint };

struct ModelFile {
  FileFormat format = FileFormat::kGguf;
  std::string path;
  uint32_t gguf_version = 0;  // 2 or 3 for GGUF, 0 otherwise
  Metadata metadata;
  std::vector<TensorInfo> tensors;
  // Keeps tensor bytes alive: the file mapping and/or buffers made while converting.
  std::shared_ptr<const MappedFile> mapping;
  // Further mappings tensors point into (the shards of a sharded safetensors checkpoint).
  std::vector<std::shared_ptr<const MappedFile>> shard_mappings;
  std::vector<std::shared_ptr<const std::vector<std::byte>>> owned_buffers;

  // The tensor named `name`, or nullptr.
  const TensorInfo* find_tensor(std::string_view name) const;
  // Total bytes of tensor data.
  uint64_t tensor_bytes() const;
  // Total number of tensor elements (the parameter count).
  uint64_t n_parameters() const;
};

// Opens `path` as GGUF, llama2.c checkpoint or safetensors, chosen by the file's first bytes
// ("GGUF" magic) or, failing that, by extension (".bin", ".safetensors"). Errors name the file.
Result<ModelFile> open_model_file(const std::string& path);

}  // namespace tessera::model
