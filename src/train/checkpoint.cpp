#include "tessera/train/checkpoint.h"

#include <fmt/format.h>

#include <cstring>

#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"

namespace tessera::train {
namespace {

using model::GgufValue;

// The options a resumed run must repeat, as (key, value) pairs; integers exact, reals as f64.
std::vector<std::pair<std::string, GgufValue>> run_options(const PretrainOptions& o) {
  const LlamaShape& s = o.shape;
  std::vector<std::pair<std::string, GgufValue>> kv;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"vocab", s.vocab}, {"dim", s.dim},
                         {"layers", s.layers}, {"heads", s.heads}, {"kv_heads", s.kv_heads},
                         {"ffn", s.ffn}, {"context", s.context}, {"batch", o.batch},
                         {"accum", o.accum}, {"steps", o.steps}, {"warmup", o.warmup},
                         {"seed", static_cast<int64_t>(o.seed)}}) {
    kv.emplace_back(std::string("tessera.train.") + name, GgufValue::i64(v));
  }
  for (auto [name, v] : {std::pair<const char*, double>{"lr", o.lr}, {"min_lr_ratio", o.min_lr_ratio},
                         {"clip", o.clip}, {"beta1", o.adamw.beta1}, {"beta2", o.adamw.beta2},
                         {"eps", o.adamw.eps}, {"weight_decay", o.adamw.weight_decay},
                         {"rope_base", s.rope_base}, {"rms_eps", s.rms_eps}}) {
    kv.emplace_back(std::string("tessera.train.") + name, GgufValue::f64(v));
  }
  return kv;
}

// The matmul precision of the run (--compute): a bf16 run continued in f32 would be another run.
constexpr const char* kComputeKey = "tessera.train.compute";
std::string compute_name(const PretrainOptions& o) { return o.bf16 ? "bf16" : "f32"; }

}  // namespace

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

namespace tessera::train {

Result<std::vector<float>> read_llama_gguf_params(const std::string& path, const LlamaShape& s) {
  TS_RETURN_IF_ERROR(validate(s));
  auto f = model::open_model_file(path);
  if (!f.is_ok()) return f.status();
  int64_t total = 0;
  const std::vector<ParamTensor> layout = llama_param_layout(s, &total);
  std::vector<float> params(static_cast<size_t>(total));
  for (const ParamTensor& t : layout) {
    const model::TensorInfo* info = f->find_tensor(t.name);
    if (info == nullptr || info->dtype != kernels::DType::kF32 || info->n_elements() != t.size ||
        info->ne[0] != t.shape.back()) {
      return invalid_argument(fmt::format(
          "{}: tensor {} is {}; a checkpoint of this model shape has it F32 with {} elements "
          "(rows of {})", path, t.name, info == nullptr ? "missing" : info->shape_string(), t.size,
          t.shape.back()));
    }
    std::memcpy(params.data() + t.offset, info->data, static_cast<size_t>(t.size) * sizeof(float));
  }
  return params;
}

std::string train_state_path(const std::string& model_path) { return model_path + ".state"; }

Status write_train_state(const std::string& path, const TrainState& st, const PretrainOptions& o) {
  if (st.m.size() != st.v.size() || st.m.empty()) {
    return invalid_argument("train state: the moments are empty or of different sizes");
  }
  model::GgufWriter w;
  model::Metadata& m = w.metadata();
  m.set("general.architecture", GgufValue::string("tessera-train-state"));
  m.set("tessera.train.step", GgufValue::u64(static_cast<uint64_t>(st.step)));
  m.set("tessera.train.rng", GgufValue::string(st.rng));
  for (auto& [key, value] : run_options(o)) m.set(key, value);
  m.set(kComputeKey, GgufValue::string(compute_name(o)));
  for (auto [name, moment] : {std::pair{"adamw.m", &st.m}, {"adamw.v", &st.v}}) {
    const auto* bytes = reinterpret_cast<const std::byte*>(moment->data());
    TS_RETURN_IF_ERROR(w.add_tensor(name, kernels::DType::kF32,
                                    {static_cast<int64_t>(moment->size())},
                                    {bytes, moment->size() * sizeof(float)}));
  }
  return w.write(path);
}

Result<TrainState> read_train_state(const std::string& path, const PretrainOptions& o) {
  auto f = model::open_model_file(path);
  if (!f.is_ok()) return f.status();
  const model::Metadata& m = f->metadata;
  for (const auto& [key, want] : run_options(o)) {
    const GgufValue* got = m.find(key);
    const bool integer = want.type() == model::GgufType::kInt64;
    const bool same = got != nullptr &&
                      (integer ? got->as_int().is_ok() && *got->as_int() == *want.as_int()
                               : got->as_float().is_ok() && *got->as_float() == *want.as_float());
    if (!same) {
      auto text = [integer](const GgufValue* v) {
        if (v == nullptr) return std::string("(missing)");
        if (integer) return v->as_int().is_ok() ? fmt::format("{}", *v->as_int()) : "?";
        return v->as_float().is_ok() ? fmt::format("{}", *v->as_float()) : "?";
      };
      return invalid_argument(fmt::format(
          "{}: the saved run has {} = {}, this run {}: resume with the options of the run that "
          "wrote the checkpoint", path, key, text(got), text(&want)));
    }
  }
  // A state from before the key existed was written by an f32 run.
  const auto saved = m.get_string(kComputeKey);
  const std::string saved_compute = saved.is_ok() ? std::string(*saved) : "f32";
  if (saved_compute != compute_name(o)) {
    return invalid_argument(fmt::format(
        "{}: the saved run computed in {}, this run in {}: resume with --compute {}", path,
        saved_compute, compute_name(o), saved_compute));
  }
  TrainState st;
  auto step = m.get_int("tessera.train.step");
  auto rng = m.get_string("tessera.train.rng");
  if (!step.is_ok() || !rng.is_ok()) {
    return invalid_argument(path + ": not a training state (no tessera.train.step / rng)");
  }
  st.step = *step;
  st.rng = *rng;
  for (auto [name, moment] : {std::pair{"adamw.m", &st.m}, {"adamw.v", &st.v}}) {
    const model::TensorInfo* t = f->find_tensor(name);
    if (t == nullptr || t->dtype != kernels::DType::kF32) {
      return invalid_argument(fmt::format("{}: no F32 tensor {}", path, name));
    }
    moment->resize(static_cast<size_t>(t->n_elements()));
    std::memcpy(moment->data(), t->data, moment->size() * sizeof(float));
  }
  return st;
}

}  // namespace tessera::train
