// Writes a few small valid safetensors files into a directory, as the seed corpus of
// safetensors_fuzzer: each readable dtype, 1 to 4 dimensions, metadata, a PEFT-like adapter pair.
// Usage: safetensors_seed_writer <dir>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/model/format/safetensors.h"

namespace {

using tessera::kernels::DType;
using tessera::model::SafetensorsWriter;

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 37 + 11);
  return out;
}

bool save(const std::string& path, const SafetensorsWriter& w) {
  const auto bytes = w.serialize();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  {
    SafetensorsWriter w;
    (void)w.add_tensor("x", DType::kF32, {4}, pattern(16));
    ok = save(dir + "/one-f32.safetensors", w) && ok;
  }
  {
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    (void)w.add_tensor("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                       DType::kF16, {2, 8}, pattern(32));
    (void)w.add_tensor("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
                       DType::kF16, {8, 2}, pattern(32));
    ok = save(dir + "/adapter-f16.safetensors", w) && ok;
  }
  {
    SafetensorsWriter w;
    (void)w.add_tensor("a", DType::kBF16, {2, 3, 2}, pattern(24));
    (void)w.add_tensor("b", DType::kF32, {1, 2, 1, 2}, pattern(16));
    (void)w.add_tensor("c", DType::kF16, {}, pattern(2));
    ok = save(dir + "/mixed.safetensors", w) && ok;
  }
  if (!ok) std::fprintf(stderr, "safetensors_seed_writer: could not write every seed to %s\n", dir.c_str());
  return ok ? 0 : 1;
}
