// N:M pruning (model/prune.h): selection keeps exactly N of every M and the largest scores,
// Wanda's choice differs from magnitude's when the column norms differ (hand-built), and a pruned
// model written packed (2:4 types) and dense loads, runs, and gives the same logits within the
// dtype's tolerance; the errors name what is wrong.
#include "tessera/model/prune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/sparse_quants.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace prune_test {

using kernels::DType;

TEST(Prune, PatternMethodAndTensorNames) {
  EXPECT_EQ(parse_prune_pattern("2:4").value().n, 2);
  EXPECT_EQ(parse_prune_pattern("4:8").value().m, 8);
  for (const char* bad : {"4:2", "2", "0:4", "2:4x", "2:128", ":4"}) {
    auto p = parse_prune_pattern(bad);
    ASSERT_FALSE(p.is_ok()) << bad;
    EXPECT_NE(p.status().message().find("N:M"), std::string::npos);
  }
  EXPECT_EQ(parse_prune_method("wanda").value(), PruneMethod::kWanda);
  EXPECT_FALSE(parse_prune_method("sparsegpt").is_ok());
  EXPECT_TRUE(is_prunable_tensor("blk.0.attn_q.weight"));
  EXPECT_TRUE(is_prunable_tensor("blk.21.ffn_down.weight"));
  EXPECT_TRUE(is_prunable_tensor("blk.3.attn_output.weight"));
  EXPECT_FALSE(is_prunable_tensor("blk.0.attn_norm.weight"));
  EXPECT_FALSE(is_prunable_tensor("token_embd.weight"));
  EXPECT_FALSE(is_prunable_tensor("output.weight"));
  EXPECT_FALSE(is_prunable_tensor("blk.x.attn_q.weight"));
  EXPECT_FALSE(is_prunable_tensor("blk.0.attn_q.weight.extra"));
}

TEST(Prune, SelectionKeepsExactlyNOfMAndTheLargest) {
  const float score[12] = {1, 5, 3, 2, 0, 0, 0, 0, 7, 7, 1, 9};
  uint8_t keep[12];
  select_n_of_m(score, 12, {2, 4}, keep);
  const uint8_t want24[12] = {0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1};  // ties: the earlier column
  for (int j = 0; j < 12; ++j) EXPECT_EQ(keep[j], want24[j]) << j;
  select_n_of_m(score, 12, {1, 4}, keep);
  const uint8_t want14[12] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  for (int j = 0; j < 12; ++j) EXPECT_EQ(keep[j], want14[j]) << j;
  // Exactly N of M on random scores, for several patterns.
  std::vector<float> s(960);
  for (size_t j = 0; j < s.size(); ++j) s[j] = std::sin(static_cast<float>(j) * 1.7f);
  std::vector<uint8_t> k(s.size());
  for (PrunePattern p : {PrunePattern{2, 4}, PrunePattern{1, 4}, PrunePattern{4, 8}, PrunePattern{3, 16}}) {
    select_n_of_m(s.data(), static_cast<int64_t>(s.size()), p, k.data());
    for (size_t g = 0; g < s.size(); g += static_cast<size_t>(p.m)) {
      int kept = 0;
      float min_kept = INFINITY, max_dropped = -INFINITY;
      for (int j = 0; j < p.m; ++j) {
        kept += k[g + j];
        if (k[g + j]) min_kept = std::min(min_kept, s[g + j]);
        else max_dropped = std::max(max_dropped, s[g + j]);
      }
      EXPECT_EQ(kept, p.n);
      EXPECT_GE(min_kept, max_dropped);
    }
  }
}

// Wanda weighs each weight by its input column's activation norm: the small weights of the
// columns that carry large activations win over the large weights of quiet columns.
TEST(Prune, WandaDiffersFromMagnitudeWhenColumnNormsDiffer) {
  const float w[4] = {1.0f, -0.9f, 0.2f, -0.1f};
  const float norms[4] = {0.1f, 0.1f, 10.0f, 10.0f};
  float score[4];
  uint8_t keep[4];
  prune_scores(w, nullptr, 4, score);
  select_n_of_m(score, 4, {2, 4}, keep);
  EXPECT_EQ(keep[0] + keep[1], 2);  // magnitude: 1.0 and 0.9
  prune_scores(w, norms, 4, score);
  select_n_of_m(score, 4, {2, 4}, keep);
  EXPECT_EQ(keep[2] + keep[3], 2);  // Wanda: 0.2 * 10 and 0.1 * 10 beat 1.0 * 0.1
  // Equal norms change nothing.
  const float flat[4] = {3, 3, 3, 3};
  prune_scores(w, flat, 4, score);
  select_n_of_m(score, 4, {2, 4}, keep);
  EXPECT_EQ(keep[0] + keep[1], 2);
}

SynthShape small_shape() {
  SynthShape s;
  s.name = "prune-test";
  s.dim = 128;
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.ffn_dim = 256;
  s.n_vocab = 512;
  s.context_length = 64;
  return s;
}

std::vector<float> logits_of(const std::string& path) {
  auto m = load_model(path);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  if (!m.is_ok()) return {};
  auto kv = KvCache::create((*m)->config(), 1, 16, DType::kF32).value();
  std::vector<float> out(static_cast<size_t>((*m)->config().n_vocab));
  Batch b;
  const std::vector<int32_t> toks = {1, 17, 99, 3, 250};
  for (size_t i = 0; i < toks.size(); ++i) {
    b.add(toks[i], static_cast<int32_t>(i), 0, i + 1 == toks.size());
  }
  EXPECT_TRUE((*m)->forward(b, kv, out, nullptr).is_ok());
  return out;
}

double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += a[i] * a[i];
  }
  return std::sqrt(num / den);
}

// For each dense type: prune packed and dense, check the tensor types and that half the pruned
// weights are zero, and compare logits (packed vs dense: the same kept values for F16 and Q8_0,
// so equal up to kernel rounding; Q4_0_2of4 has one scale per 64 weights, dense Q4_0 per 32).
TEST(Prune, PackedAndDenseCopiesLoadAndAgree) {
  testing::TempDir dir;
  for (DType t : {DType::kF16, DType::kQ8_0, DType::kQ4_0}) {
    const std::string name(kernels::dtype_name(t));
    SynthOptions so;
    so.shape = small_shape();
    so.dtype = t;
    const std::string base = dir.file(name + ".gguf");
    ASSERT_TRUE(write_synthetic_model(so, base).is_ok());
    auto in = open_model_file(base);
    ASSERT_TRUE(in.is_ok());
    PruneOptions po;
    po.n_threads = 2;
    auto packed = prune_model(*in, dir.file(name + "-24.gguf"), po);
    ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
    po.dense = true;
    auto dense = prune_model(*in, dir.file(name + "-24d.gguf"), po);
    ASSERT_TRUE(dense.is_ok()) << dense.status().to_string();
    EXPECT_EQ(packed->n_pruned, 2 * 7);
    EXPECT_EQ(packed->n_weights_zeroed * 2, packed->n_weights_pruned);
    EXPECT_LT(packed->bytes_out, dense->bytes_out);
    const DType sparse = kernels::sparse_2of4_type_for(t).value();
    for (const auto& e : packed->entries) {
      EXPECT_EQ(e.to, e.pruned ? sparse : e.from) << e.tensor;
      EXPECT_EQ(e.pruned, is_prunable_tensor(e.tensor)) << e.tensor;
    }
    for (const auto& e : dense->entries) EXPECT_EQ(e.to, e.from) << e.tensor;
    auto out = open_model_file(dir.file(name + "-24.gguf"));
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(out->metadata.get_string("tessera.prune.pattern").value(), "2:4");
    EXPECT_EQ(out->metadata.get_string("tessera.prune.method").value(), "magnitude");

    const auto l_base = logits_of(base);
    const auto l_packed = logits_of(dir.file(name + "-24.gguf"));
    const auto l_dense = logits_of(dir.file(name + "-24d.gguf"));
    ASSERT_EQ(l_packed.size(), l_dense.size());
    const double tol = t == DType::kQ4_0 ? 0.15 : (t == DType::kQ8_0 ? 2e-3 : 1e-4);
    EXPECT_LT(relative_rms(l_packed, l_dense), tol) << name;
    EXPECT_GT(relative_rms(l_base, l_dense), 10 * relative_rms(l_packed, l_dense) + 1e-6)
        << name << ": pruning changed the model less than packing it";
  }
}

TEST(Prune, WandaUsesTheNormsAndErrorsAreClear) {
  testing::TempDir dir;
  SynthOptions so;
  so.shape = small_shape();
  so.dtype = DType::kF16;
  ASSERT_TRUE(write_synthetic_model(so, dir.file("m.gguf")).is_ok());
  auto in = open_model_file(dir.file("m.gguf"));
  ASSERT_TRUE(in.is_ok());
  PruneOptions po;
  po.method = PruneMethod::kWanda;
  auto no_norms = prune_model(*in, dir.file("w.gguf"), po);
  ASSERT_FALSE(no_norms.is_ok());
  EXPECT_NE(no_norms.status().message().find("--calib"), std::string::npos);
  // Norms that grow along the columns: Wanda keeps later columns more often than magnitude.
  po.column_norms = [](std::string_view tensor) {
    const int64_t n = tensor.find("ffn_down") != std::string_view::npos ? 256 : 128;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) v[j] = (j % 4 == 3) ? 100.0f : 1.0f;
    return v;
  };
  auto wanda = prune_model(*in, dir.file("w.gguf"), po);
  ASSERT_TRUE(wanda.is_ok()) << wanda.status().to_string();
  auto wf = open_model_file(dir.file("w.gguf"));
  ASSERT_TRUE(wf.is_ok());
  const TensorInfo* q = wf->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kF16_2of4);
  std::vector<float> row(128);
  int64_t kept_last = 0, groups = 0;
  for (int64_t r = 0; r < q->n_rows(); ++r) {
    kernels::kernels_for(DType::kF16_2of4).to_float(q->data + r * q->n_bytes / q->n_rows(), row.data(), 128);
    for (int g = 0; g < 128; g += 4, ++groups) kept_last += row[g + 3] != 0.0f ? 1 : 0;
  }
  EXPECT_GT(kept_last, groups * 9 / 10);  // magnitude alone would keep it in about half

  po.column_norms = [](std::string_view) { return std::vector<float>(3); };
  auto bad = prune_model(*in, dir.file("w.gguf"), po);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("activation norms"), std::string::npos);

  PruneOptions p14;
  p14.pattern = {1, 4};
  auto packed14 = prune_model(*in, dir.file("x.gguf"), p14);
  ASSERT_FALSE(packed14.is_ok());
  EXPECT_NE(packed14.status().message().find("--dense"), std::string::npos);
  p14.dense = true;
  EXPECT_TRUE(prune_model(*in, dir.file("x.gguf"), p14).is_ok());

  PruneOptions bf;
  bf.type = DType::kBF16;
  auto bad_type = prune_model(*in, dir.file("y.gguf"), bf);
  ASSERT_FALSE(bad_type.is_ok());
  EXPECT_NE(bad_type.status().message().find("f16, q8_0 or q4_0"), std::string::npos);
}

}  // namespace prune_test
}  // namespace tessera::model
