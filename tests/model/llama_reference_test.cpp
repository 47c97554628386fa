// The engine's Llama forward pass against the independent float64 reference
// (reference_llama.h) on random-weight models of several shapes, for every supported dtype.
// Weight bytes are drawn directly in each format (random scales and quants), so the test needs no
// quantizer; the reference decodes them with its own code.
#include <gtest/gtest.h>

#include <random>

#include "reference_llama.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "test_util.h"

namespace tessera::model {
namespace llama_reference_test {

using kernels::DType;
using testing::RefModel;
using testing::RefType;

struct Shape {
  const char* name;
  int dim, n_layers, n_heads, n_kv_heads, ffn, vocab;
  bool tied;
  bool freq_factors;  // llama3-style rope_freqs tensor
};

struct TypeCase {
  DType dtype;
  RefType ref;
  // Largest |engine - reference| allowed, relative to the largest |reference| logit. The engine
  // decodes the same weights exactly, so for float weights what remains is f32 accumulation.
  // Q8_0/Q4_0 weights multiply activations quantized to Q8_0 per 32-block (as GGML runs them),
  // which costs up to 1/254 of each block's largest activation per matmul; through every layer
  // of these small random models that reaches a few percent of the largest logit.
  double tolerance;
};

const TypeCase kTypes[] = {
    {DType::kF32, RefType::kF32, 1e-4},   {DType::kF16, RefType::kF16, 1e-4},
    {DType::kBF16, RefType::kBF16, 1e-4}, {DType::kQ8_0, RefType::kQ8_0, 6e-2},
    {DType::kQ4_0, RefType::kQ4_0, 6e-2},
};

const Shape kShapes[] = {
    {"gqa", 64, 2, 4, 2, 96, 97, false, false},
    {"mha-tied", 128, 2, 8, 8, 160, 64, true, false},
    {"mqa-llama3rope", 96, 3, 3, 1, 64, 80, false, true},
};

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  uint16_t half_bits(int exp_lo, int exp_hi) {
    const uint16_t sign = static_cast<uint16_t>((rng_() & 1) << 15);
    const int e = exp_lo + static_cast<int>(rng_() % (exp_hi - exp_lo + 1));
    return static_cast<uint16_t>(sign | e << 10 | (rng_() & 0x3ff));
  }

  // Random bytes of `n` values of type t, with magnitudes around 0.01-0.1.
  std::vector<uint8_t> bytes(DType t, int64_t n) {
    std::vector<uint8_t> b;
    auto put16 = [&](uint16_t v) {
      b.push_back(static_cast<uint8_t>(v & 0xff));
      b.push_back(static_cast<uint8_t>(v >> 8));
    };
    std::uniform_real_distribution<float> u(-0.1f, 0.1f);
    switch (t) {
      case DType::kF32:
        for (int64_t i = 0; i < n; ++i) {
          float f = u(rng_);
          const auto* p = reinterpret_cast<const uint8_t*>(&f);
          b.insert(b.end(), p, p + 4);
        }
        break;
      case DType::kF16:
        for (int64_t i = 0; i < n; ++i) put16(half_bits(7, 11));
        break;
      case DType::kBF16:
        for (int64_t i = 0; i < n; ++i) {
          const int e = 119 + static_cast<int>(rng_() % 5);
          put16(static_cast<uint16_t>((rng_() & 1) << 15 | e << 7 | (rng_() & 0x7f)));
        }
        break;
      case DType::kQ8_0:
        for (int64_t blk = 0; blk < n / 32; ++blk) {
          put16(half_bits(4, 5));
          for (int j = 0; j < 32; ++j) b.push_back(static_cast<uint8_t>(static_cast<int8_t>(rng_() % 255 - 127)));
        }
        break;
      case DType::kQ4_0:
        for (int64_t blk = 0; blk < n / 32; ++blk) {
          put16(half_bits(8, 9));
          for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(rng_() & 0xff));
        }
        break;
      default: ADD_FAILURE() << "unexpected dtype";
    }
    return b;
  }

  std::vector<float> floats(int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = u(rng_);
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

std::span<const std::byte> as_bytes(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}
std::span<const std::byte> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * 4};
}
std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Writes a GGUF with random weights of `shape` in `tc.dtype`; fills `ref` with the same weights.
void build_model(const Shape& s, const TypeCase& tc, const std::string& path, RefModel& ref) {
  Builder b(1234 + s.dim);
  GgufWriter w;
  auto& m = w.metadata();
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("llama.embedding_length", GgufValue::u32(s.dim));
  m.set("llama.block_count", GgufValue::u32(s.n_layers));
  m.set("llama.attention.head_count", GgufValue::u32(s.n_heads));
  m.set("llama.attention.head_count_kv", GgufValue::u32(s.n_kv_heads));
  m.set("llama.feed_forward_length", GgufValue::u32(s.ffn));
  m.set("llama.context_length", GgufValue::u32(64));
  m.set("llama.vocab_size", GgufValue::u32(s.vocab));
  m.set("llama.rope.freq_base", GgufValue::f32(10000.0f));
  m.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  ref.dim = s.dim;
  ref.n_layers = s.n_layers;
  ref.n_heads = s.n_heads;
  ref.n_kv_heads = s.n_kv_heads;
  ref.ffn = s.ffn;
  ref.vocab = s.vocab;
  const int hd = s.dim / s.n_heads;
  const int kvd = hd * s.n_kv_heads;

  auto matrix = [&](const std::string& name, int cols, int rows, std::vector<double>& out) {
    auto bytes = b.bytes(tc.dtype, int64_t{cols} * rows);
    ASSERT_TRUE(w.add_tensor(name, tc.dtype, {cols, rows}, as_bytes(bytes)).is_ok()) << name;
    out = testing::ref_decode(tc.ref, bytes.data(), int64_t{cols} * rows);
  };
  auto norm = [&](const std::string& name, std::vector<double>& out) {
    auto f = b.floats(s.dim, 0.5f, 1.5f);
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, {s.dim}, as_bytes(f)).is_ok()) << name;
    out = to_double(f);
  };
  matrix("token_embd.weight", s.dim, s.vocab, ref.embd);
  ref.layers.resize(s.n_layers);
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto& L = ref.layers[l];
    norm(p + "attn_norm.weight", L.attn_norm);
    matrix(p + "attn_q.weight", s.dim, s.dim, L.wq);
    matrix(p + "attn_k.weight", s.dim, kvd, L.wk);
    matrix(p + "attn_v.weight", s.dim, kvd, L.wv);
    matrix(p + "attn_output.weight", s.dim, s.dim, L.wo);
    norm(p + "ffn_norm.weight", L.ffn_norm);
    matrix(p + "ffn_gate.weight", s.dim, s.ffn, L.w_gate);
    matrix(p + "ffn_up.weight", s.dim, s.ffn, L.w_up);
    matrix(p + "ffn_down.weight", s.ffn, s.dim, L.w_down);
  }
  norm("output_norm.weight", ref.output_norm);
  if (!s.tied) matrix("output.weight", s.dim, s.vocab, ref.output);
  if (s.freq_factors) {
    auto f = b.floats(hd / 2, 1.0f, 8.0f);
    ASSERT_TRUE(w.add_tensor("rope_freqs.weight", DType::kF32, {hd / 2}, as_bytes(f)).is_ok());
    ref.freq_factors = to_double(f);
  }
  ASSERT_TRUE(w.write(path).is_ok());
}

double rel_error(std::span<const float> got, const std::vector<double>& want) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  return max_diff / std::max(max_ref, 1e-12);
}

class LlamaReferenceTest : public ::testing::TestWithParam<std::tuple<Shape, TypeCase>> {};

TEST_P(LlamaReferenceTest, LogitsMatchFloat64Reference) {
  const auto& [shape, tc] = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  RefModel ref;
  build_model(shape, tc, path, ref);
  if (HasFatalFailure()) return;
  auto model = load_model(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  Model& m = **model;
  const int V = shape.vocab;

  const std::vector<int> prompt = {1, 5, 17, 3, 42, 8, 33, 2, 61, 7, 12, 50};
  const auto want = ref.forward(prompt);

  // 1. Whole prompt in one batch, logits for every row (f32 cache: the tolerance is the weights').
  auto kv = KvCache::create(m.config(), 2, 64, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> logits(prompt.size() * V);
  ASSERT_TRUE(m.forward(batch, *kv, logits, nullptr).is_ok());
  for (size_t t = 0; t < prompt.size(); ++t) {
    EXPECT_LE(rel_error(std::span<const float>(logits).subspan(t * V, V), want[t]), tc.tolerance)
        << "row " << t;
  }

  // 2. Prefill then one-token decode steps through the KV cache (slot 1), with a thread pool.
  ThreadPool pool(2);
  const size_t n_pre = prompt.size() - 3;
  batch.clear();
  for (size_t i = 0; i < n_pre; ++i) batch.add(prompt[i], static_cast<int32_t>(i), 1, i + 1 == n_pre);
  ASSERT_TRUE(m.forward(batch, *kv, logits, &pool).is_ok());
  EXPECT_LE(rel_error(std::span<const float>(logits).first(V), want[n_pre - 1]), tc.tolerance);
  for (size_t t = n_pre; t < prompt.size(); ++t) {
    batch.clear();
    batch.add(prompt[t], static_cast<int32_t>(t), 1, true);
    ASSERT_TRUE(m.forward(batch, *kv, logits, &pool).is_ok());
    EXPECT_LE(rel_error(std::span<const float>(logits).first(V), want[t]), tc.tolerance)
        << "decode step at position " << t;
  }
}

// forward_hidden (what embeddings pool) against the reference's final-normed hidden state, for
// the rows that ask for output; a too-small buffer is refused.
TEST_P(LlamaReferenceTest, HiddenStatesMatchFloat64Reference) {
  const auto& [shape, tc] = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  RefModel ref;
  build_model(shape, tc, path, ref);
  if (HasFatalFailure()) return;
  auto model = load_model(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  Model& m = **model;
  const int D = shape.dim;
  const std::vector<int> prompt = {3, 14, 15, 9, 2, 6, 5};
  const auto want = ref.hidden(prompt);
  auto kv = KvCache::create(m.config(), 1, 16, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, i % 2 == 0);
  std::vector<float> hidden(4 * D);  // rows 0, 2, 4, 6
  ASSERT_TRUE(m.forward_hidden(batch, *kv, hidden, nullptr).is_ok());
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_LE(rel_error(std::span<const float>(hidden).subspan(r * D, D), want[2 * r]), tc.tolerance)
        << "row " << 2 * r;
  }
  std::vector<float> small(4 * D - 1);
  auto kv2 = KvCache::create(m.config(), 1, 16, DType::kF32);
  ASSERT_TRUE(kv2.is_ok());
  EXPECT_EQ(m.forward_hidden(batch, *kv2, small, nullptr).code(), ErrorCode::kInvalidArgument);
}

TEST_P(LlamaReferenceTest, TwoSequencesInOneBatch) {
  const auto& [shape, tc] = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  RefModel ref;
  build_model(shape, tc, path, ref);
  if (HasFatalFailure()) return;
  auto model = load_model(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const int V = shape.vocab;
  const std::vector<int> a = {4, 9, 1, 22, 13};
  const std::vector<int> b = {30, 2, 7};
  auto kv = KvCache::create((*model)->config(), 2, 16, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch batch;  // rows of the two sequences interleaved
  for (size_t i = 0; i < a.size(); ++i) {
    batch.add(a[i], static_cast<int32_t>(i), 0, i + 1 == a.size());
    if (i < b.size()) batch.add(b[i], static_cast<int32_t>(i), 1, i + 1 == b.size());
  }
  std::vector<float> logits(2 * V);
  ASSERT_TRUE((*model)->forward(batch, *kv, logits, nullptr).is_ok());
  // Logit rows come in batch-row order: b's last row precedes a's last row.
  EXPECT_LE(rel_error(std::span<const float>(logits).first(V), ref.forward(b).back()), tc.tolerance);
  EXPECT_LE(rel_error(std::span<const float>(logits).subspan(V, V), ref.forward(a).back()),
            tc.tolerance);
}

// The default f16 cache rounds K and V to 11 significant bits; the logits stay within 2e-3
// of the largest on top of the weights' own tolerance.
TEST_P(LlamaReferenceTest, F16KvCacheStaysClose) {
  const auto& [shape, tc] = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  RefModel ref;
  build_model(shape, tc, path, ref);
  if (HasFatalFailure()) return;
  auto model = load_model(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const int V = shape.vocab;
  const std::vector<int> prompt = {1, 5, 17, 3, 42, 8, 33, 2, 61, 7, 12, 50};
  const auto want = ref.forward(prompt);
  auto kv = KvCache::create((*model)->config(), 1, 64);
  ASSERT_TRUE(kv.is_ok());
  EXPECT_EQ(kv->dtype(), DType::kF16);
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> logits(prompt.size() * V);
  ASSERT_TRUE((*model)->forward(batch, *kv, logits, nullptr).is_ok());
  for (size_t t = 0; t < prompt.size(); ++t) {
    EXPECT_LE(rel_error(std::span<const float>(logits).subspan(t * V, V), want[t]),
              tc.tolerance + 2e-3)
        << "row " << t;
  }
}

// Q4_0 weights repacked at load (load_options.h) give the logits of the file's layout, for a
// tied output (the embedding lookup reads the packed copy) and a
// vocabulary that leaves tail rows outside the 16-row groups. The two sum each dot product in
// another order; in these random models a last-bit difference can flip the Q8_0 rounding of a
// later layer's activations, so the two differ by the activation quantization's own error
// (~1.5% of the largest logit measured, the same distance both keep from the float64 reference)
// and are held to the Q4_0 tolerance against each other and the reference.
TEST(LlamaRepack, PackedWeightsGiveTheFileLayoutsLogits) {
  for (const Shape& shape : {kShapes[0], kShapes[1]}) {
    testing::TempDir dir;
    const std::string path = dir.file("m.gguf");
    RefModel ref;
    build_model(shape, kTypes[4], path, ref);
    if (::testing::Test::HasFatalFailure()) return;
    LoadOptions plain;
    plain.repack = false;
    auto packed = load_model(path);
    auto rows = load_model(path, plain);
    ASSERT_TRUE(packed.is_ok() && rows.is_ok());
    EXPECT_EQ((*rows)->image_bytes(), 0u);
    const bool has_kernel = kernels::kernel_table().q4_0x16_gemm != nullptr;
    EXPECT_EQ((*packed)->image_bytes() > 0, has_kernel) << shape.name;
    const int V = shape.vocab;
    const std::vector<int> prompt = {1, 5, 17, 3, 42, 8, 33, 2, 61, 7, 12, 50};
    const auto ref_logits = ref.forward(prompt);
    std::vector<std::vector<float>> out;
    for (Model* m : {packed->get(), rows->get()}) {
      auto kv = KvCache::create(m->config(), 1, 64, DType::kF32);
      ASSERT_TRUE(kv.is_ok());
      Batch batch;
      for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int32_t>(i), 0, true);
      std::vector<float> logits(prompt.size() * V);
      ASSERT_TRUE(m->forward(batch, *kv, logits, nullptr).is_ok());
      out.push_back(logits);
    }
    for (size_t t = 0; t < prompt.size(); ++t) {
      std::vector<double> want(out[1].begin() + t * V, out[1].begin() + (t + 1) * V);
      EXPECT_LE(rel_error(std::span<const float>(out[0]).subspan(t * V, V), want), kTypes[4].tolerance)
          << shape.name << " row " << t;
      EXPECT_LE(rel_error(std::span<const float>(out[0]).subspan(t * V, V), ref_logits[t]),
                kTypes[4].tolerance)
          << shape.name << " row " << t;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<LlamaReferenceTest::ParamType>& info) {
  std::string s = std::string(std::get<0>(info.param).name) + "_" +
                  std::string(kernels::dtype_name(std::get<1>(info.param).dtype));
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(ShapesAndTypes, LlamaReferenceTest,
                         ::testing::Combine(::testing::ValuesIn(kShapes), ::testing::ValuesIn(kTypes)),
                         case_name);

}  // namespace llama_reference_test
}  // namespace tessera::model
