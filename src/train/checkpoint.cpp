#include "tessera/train/checkpoint.h"

#include <fmt/format.h>

#include <cstring>

#include "tessera/model/format/gguf_writer.h"

namespace tessera::train {

Status write_llama_gguf(const std::string& path, const LlamaShape& s,
                        std::span<const float> params, const model::Metadata* tokenizer,
                        const std::string& name) {
  TS_RETURN_IF_ERROR(validate(s));
  int64_t total = 0;
  const std::vector<ParamTensor> layout = llama_param_layout(s, &total);
  if (static_cast<int64_t>(params.size()) != total) {
    return invalid_argument(fmt::format("checkpoint: {} parameters given, the shape has {}",
                                        params.size(), total));
  }
  model::GgufWriter w;
  model::Metadata& m = w.metadata();
  using model::GgufValue;
  if (tokenizer != nullptr) {
    for (const auto& [key, value] : tokenizer->entries()) {
      if (key.starts_with("tokenizer.")) m.set(key, value);
    }
  }
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("general.name", GgufValue::string(name));
  m.set("general.file_type", GgufValue::u32(0));  // all F32
  m.set("llama.context_length", GgufValue::u32(static_cast<uint32_t>(s.context)));
  m.set("llama.embedding_length", GgufValue::u32(static_cast<uint32_t>(s.dim)));
  m.set("llama.block_count", GgufValue::u32(static_cast<uint32_t>(s.layers)));
  m.set("llama.feed_forward_length", GgufValue::u32(static_cast<uint32_t>(s.ffn)));
  m.set("llama.attention.head_count", GgufValue::u32(static_cast<uint32_t>(s.heads)));
  m.set("llama.attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(s.kv_heads)));
  m.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(s.rms_eps)));
  m.set("llama.rope.freq_base", GgufValue::f32(static_cast<float>(s.rope_base)));
  m.set("llama.rope.dimension_count", GgufValue::u32(static_cast<uint32_t>(s.head_dim())));
  m.set("llama.vocab_size", GgufValue::u32(static_cast<uint32_t>(s.vocab)));
  for (const ParamTensor& t : layout) {
    std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());  // GGUF: innermost first
    const auto* bytes = reinterpret_cast<const std::byte*>(params.data() + t.offset);
    TS_RETURN_IF_ERROR(w.add_tensor(t.name, kernels::DType::kF32, std::move(ne),
                                    {bytes, static_cast<size_t>(t.size) * sizeof(float)}));
  }
  return w.write(path);
}

}  // namespace tessera::train
