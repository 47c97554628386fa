#include "tessera/model/format/llama2c_checkpoint.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/model/format/byte_reader.h"

namespace tessera::model {
namespace {

// Letters used in shapes below: D = dim, H = hidden_dim, L = n_layers, V = vocab, T = seq_len,
// KV = kv_dim = D * n_kv_heads / n_heads, hs = head size = D / n_heads.

struct Header {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t vocab_size = 0;  // always positive here; see separate_classifier
  int64_t seq_len = 0;
  bool separate_classifier = false;  // the file's vocab_size was negative

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return dim * n_kv_heads / n_heads; }
};

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);

// Generous upper bounds (Llama 2 70B has D = 8192, H = 28672, L = 80, 64 heads). They keep every
// size computed below far from overflow and reject headers that are garbage.
struct Field {
  const char* name;
  int64_t max;
};
constexpr std::array<Field, 7> kFields = {{
    {"dim", 1 << 16},
    {"hidden_dim", 1 << 18},
    {"n_layers", 1 << 10},
    {"n_heads", 1 << 10},
    {"n_kv_heads", 1 << 10},
    {"vocab_size", 1 << 21},
    {"seq_len", 1 << 20},
}};

Status check_shapes(const Header& h) {
  if (h.dim % h.n_heads != 0) {
    return corrupt_data(fmt::format("llama2.c header: dim {} is not divisible by n_heads {}",
                                    h.dim, h.n_heads));
  }
  if (h.n_kv_heads > h.n_heads || h.n_heads % h.n_kv_heads != 0) {
    return corrupt_data(fmt::format(
        "llama2.c header: n_heads {} is not a multiple of n_kv_heads {}", h.n_heads,
        h.n_kv_heads));
  }
  if (h.head_size() % 2 != 0) {
    return corrupt_data(fmt::format("llama2.c header: head size dim / n_heads = {} must be even "
                                    "for rotary embeddings",
                                    h.head_size()));
  }
  return Status::ok();
}

Result<Header> read_header(ByteReader& r) {
  std::array<int64_t, 7> v{};
  for (size_t i = 0; i < kFields.size(); ++i) {
    auto f = r.read<int32_t>(kFields[i].name);
    if (!f.is_ok()) return f.status().with_context("llama2.c header (7 int32)");
    v[i] = *f;
    // vocab_size carries the classifier flag in its sign; its magnitude is the vocabulary.
    const int64_t magnitude = (i == 5 && v[i] < 0) ? -v[i] : v[i];
    if (magnitude < 1 || magnitude > kFields[i].max) {
      return corrupt_data(fmt::format("llama2.c header: {} must be in [1, {}], found {}",
                                      kFields[i].name, kFields[i].max, v[i]));
    }
  }
  Header h{v[0], v[1], v[2], v[3], v[4], v[5] < 0 ? -v[5] : v[5], v[6], v[5] < 0};
  TS_RETURN_IF_ERROR(check_shapes(h));
  return h;
}

// One weight array of the checkpoint: `per_layer` arrays hold n_layers slices back to back.
// An empty name marks an array that is skipped (the RoPE tables).
struct Array {
  const char* name;  // tensor name, with "blk.N." prefixed when per_layer
  int64_t ne0;
  int64_t ne1;  // 0 for a vector
  bool per_layer;
};

std::vector<Array> layout(const Header& h) {
  const int64_t d = h.dim, hid = h.hidden_dim, kv = h.kv_dim(), v = h.vocab_size;
  std::vector<Array> a = {
      {"token_embd.weight", d, v, false},       // [V, D]
      {"attn_norm.weight", d, 0, true},         // [L, D]
      {"attn_q.weight", d, d, true},            // [L, D, D]
      {"attn_k.weight", d, kv, true},           // [L, KV, D]
      {"attn_v.weight", d, kv, true},           // [L, KV, D]
      {"attn_output.weight", d, d, true},       // [L, D, D]
      {"ffn_norm.weight", d, 0, true},          // [L, D]
      {"ffn_gate.weight", d, hid, true},        // w1 [L, H, D]
      {"ffn_down.weight", hid, d, true},        // w2 [L, D, H]
      {"ffn_up.weight", d, hid, true},          // w3 [L, H, D]
      {"output_norm.weight", d, 0, false},      // [D]
      {"", h.head_size() / 2, h.seq_len, false},  // freq_cis_real [T, hs/2]
      {"", h.head_size() / 2, h.seq_len, false},  // freq_cis_imag [T, hs/2]
  };
  if (h.separate_classifier) a.push_back({"output.weight", d, v, false});  // wcls [V, D]
  return a;
}

// Lays the tensors out from byte kHeaderBytes on; returns the file size the header implies.
// Data pointers are left null until that size is checked against the file.
Result<uint64_t> plan_tensors(const Header& h, std::vector<TensorInfo>& tensors) {
  uint64_t offset = kHeaderBytes;
  for (const Array& a : layout(h)) {
    const int64_t n_slices = a.per_layer ? h.n_layers : 1;
    uint64_t slice_bytes = 0;
    const bool ok = checked_mul<uint64_t>(a.ne0, a.ne1 == 0 ? 1 : a.ne1, &slice_bytes) &&
                    checked_mul<uint64_t>(slice_bytes, sizeof(float), &slice_bytes);
    if (!ok) return corrupt_data("llama2.c header: tensor sizes overflow");
    for (int64_t l = 0; l < n_slices; ++l) {
      if (a.name[0] != '\0') {
        TensorInfo t;
        t.name = a.per_layer ? fmt::format("blk.{}.{}", l, a.name) : std::string(a.name);
        t.dtype = kernels::DType::kF32;
        t.n_dims = a.ne1 == 0 ? 1 : 2;
        t.ne = {a.ne0, a.ne1 == 0 ? 1 : a.ne1, 1, 1};
        t.offset = offset;
        t.n_bytes = static_cast<size_t>(slice_bytes);
        tensors.push_back(std::move(t));
      }
      if (!checked_add(offset, slice_bytes, &offset)) {
        return corrupt_data("llama2.c header: file size overflows");
      }
    }
  }
  return offset;
}

Status check_file_size(const Header& h, uint64_t expected, uint64_t actual) {
  if (expected == actual) return Status::ok();
  const uint64_t classifier_bytes = static_cast<uint64_t>(h.vocab_size * h.dim) * sizeof(float);
  std::string hint;
  if (!h.separate_classifier && actual == expected + classifier_bytes) {
    hint = "; the extra bytes would fit a separate classifier, but vocab_size is positive";
  } else if (h.separate_classifier && actual + classifier_bytes == expected) {
    hint = "; the file lacks the separate classifier that a negative vocab_size announces";
  } else if (actual < expected) {
    hint = " (truncated?)";
  }
  return corrupt_data(fmt::format(
      "llama2.c checkpoint: header (dim {}, hidden_dim {}, n_layers {}, n_heads {}, n_kv_heads "
      "{}, vocab_size {}, seq_len {}, {} classifier) implies {} bytes, found {}{}",
      h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size, h.seq_len,
      h.separate_classifier ? "separate" : "shared", expected, actual, hint));
}

Metadata make_metadata(const Header& h) {
  auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };
  Metadata m;
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("general.name", GgufValue::string("llama2.c checkpoint"));
  m.set("llama.context_length", u32(h.seq_len));
  m.set("llama.embedding_length", u32(h.dim));
  m.set("llama.feed_forward_length", u32(h.hidden_dim));
  m.set("llama.block_count", u32(h.n_layers));
  m.set("llama.attention.head_count", u32(h.n_heads));
  m.set("llama.attention.head_count_kv", u32(h.n_kv_heads));
  m.set("llama.rope.dimension_count", u32(h.head_size()));
  m.set("llama.rope.freq_base", GgufValue::f32(10000.0f));
  m.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  m.set("llama.vocab_size", u32(h.vocab_size));
  return m;
}

}  // namespace

Result<ModelFile> read_llama2c_checkpoint(std::shared_ptr<const MappedFile> file) {
  if (file == nullptr) return invalid_argument("read_llama2c_checkpoint: no file");
  const std::span<const std::byte> bytes = file->bytes();
  ByteReader r(bytes);
  TS_ASSIGN_OR_RETURN(Header h, read_header(r));
  ModelFile model;
  model.format = FileFormat::kLlama2c;
  model.path = file->path();
  TS_ASSIGN_OR_RETURN(uint64_t expected, plan_tensors(h, model.tensors));
  TS_RETURN_IF_ERROR(check_file_size(h, expected, bytes.size()));
  for (auto& t : model.tensors) t.data = bytes.data() + t.offset;
  model.metadata = make_metadata(h);
  model.mapping = std::move(file);
  return model;
}

}  // namespace tessera::model
