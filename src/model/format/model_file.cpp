#include "tessera/model/format/model_file.h"

#include <fmt/format.h>

#include <cstring>

#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/llama2c_checkpoint.h"
#include "tessera/model/format/safetensors.h"

namespace tessera::model {

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

const TensorInfo* ModelFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

uint64_t ModelFile::tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.n_bytes;
  return n;
}

uint64_t ModelFile::n_parameters() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += static_cast<uint64_t>(t.n_elements());
  return n;
}

Result<ModelFile> open_model_file(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return mapped.status();
  auto bytes = (*mapped)->bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    auto r = read_gguf(*mapped);
    if (!r.is_ok()) return r.status().with_context("loading " + path);
    return r;
  }
  const auto ends_with = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends_with(".safetensors")) {
    auto r = read_safetensors(*mapped);
    if (!r.is_ok()) return r.status().with_context("loading " + path);
    return r;
  }
  const bool looks_like_bin = path.size() >= 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
  if (looks_like_bin) {
    auto r = read_llama2c_checkpoint(*mapped);
    if (!r.is_ok()) return r.status().with_context("loading " + path);
    return r;
  }
  return unsupported(fmt::format(
      "loading {}: not a GGUF file (no 'GGUF' magic), a llama2.c checkpoint (.bin) or a "
      "safetensors file (.safetensors)", path));
}

}  // namespace tessera::model
