#include "tessera/train/run_exports.h"

#include <fmt/format.h>

#include <fstream>

#include "tessera/model/format/safetensors.h"

namespace tessera::train {

Status write_init_safetensors(const std::string& path, const LlamaShape& shape,
                              std::span<const float> params) {
  model::SafetensorsWriter w;
  for (const ParamTensor& t : llama_param_layout(shape, nullptr)) {
    const auto* bytes = reinterpret_cast<const std::byte*>(params.data() + t.offset);
    TS_RETURN_IF_ERROR(w.add_tensor(t.name, kernels::DType::kF32, t.shape,
                                    {bytes, static_cast<size_t>(t.size) * sizeof(float)}));
  }
  w.add_metadata("format", "tessera-train-init");
  return w.write(path);
}

Status write_data_order_npy(const std::string& path, std::span<const int64_t> starts,
                            std::span<const int32_t> train_tokens, int64_t per_step, int64_t t) {
  const int64_t steps = per_step > 0 ? static_cast<int64_t>(starts.size()) / per_step : 0;
  std::string header = fmt::format("{{'descr': '<i4', 'fortran_order': False, 'shape': ({}, {}, {}), }}",
                                   steps, per_step, t + 1);
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data 64-byte aligned
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const auto len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_le, 2);
  f << header;
  for (int64_t i = 0; i < steps * per_step; ++i) {
    f.write(reinterpret_cast<const char*>(train_tokens.data() + starts[static_cast<size_t>(i)]),
            static_cast<std::streamsize>((t + 1) * sizeof(int32_t)));
  }
  if (!f.good()) return io_error("cannot write '" + path + "'");
  return Status::ok();
}

}  // namespace tessera::train
