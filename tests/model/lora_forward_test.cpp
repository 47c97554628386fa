// Batched LoRA in the forward pass: rows of one step use different adapters (or none), and each
// sequence's logits equal those of the model with its adapter merged in (tessera lora merge, the
// plain W + scale * B * A) within float rounding, greedy choices identical; batch composition does
// not change a row's result; unregistered ids are refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace lora_forward_test {

using kernels::DType;

constexpr int kAdapters = 8;

struct Seq {
  std::vector<int32_t> tokens;
  int32_t adapter;  // -1: base only
};

// Every registered family (the adapters are applied by the shared decoder). Parameter: the
// family name.
class LoraForwardTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.dtype = DType::kF32;
    o.seed = 3;
    o.arch = GetParam();
    ASSERT_TRUE(write_synthetic_model(o, dir_.file("base.gguf")).is_ok());
    auto f = open_model_file(dir_.file("base.gguf"));
    ASSERT_TRUE(f.is_ok());
    base_file_ = std::make_shared<const ModelFile>(std::move(*f));
    auto m = load_model(dir_.file("base.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(*m);
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 0.08f);
    const char* kinds[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    const int64_t ins[] = {128, 128, 128, 128, 128, 128, 384};
    const int64_t outs[] = {128, 64, 64, 128, 384, 384, 128};
    for (int a = 0; a < kAdapters; ++a) {
      GgufWriter w;
      w.metadata().set("general.architecture", GgufValue::string(GetParam()));
      w.metadata().set("general.type", GgufValue::string("adapter"));
      w.metadata().set("adapter.type", GgufValue::string("lora"));
      w.metadata().set("adapter.lora.alpha", GgufValue::f32(static_cast<float>(2 * (a + 1))));
      const int64_t rank = 1 + a * 3;  // ranks 1 .. 22
      // A and B in f32, f16 or bf16 (held as the file has them: the half types with half the bytes).
      const DType dtype = a % 3 == 0 ? DType::kF32 : a % 3 == 1 ? DType::kF16 : DType::kBF16;
      const auto& conv = kernels::kernels_for(kernels::scalar_kernel_table(), dtype);
      auto bytes_of = [&](const std::vector<float>& v) {
        std::vector<std::byte> out(kernels::dtype_row_bytes(dtype, static_cast<int64_t>(v.size())));
        conv.from_float(v.data(), out.data(), static_cast<int64_t>(v.size()));
        return out;
      };
      for (int layer = 0; layer < 2; ++layer) {
        for (int k = 0; k < 7; ++k) {
          if ((a + k + layer) % 3 == 0) continue;  // each adapter leaves some matrices alone
          std::vector<float> av(static_cast<size_t>(rank * ins[k])), bv(static_cast<size_t>(outs[k] * rank));
          for (float& v : av) v = nd(rng);
          for (float& v : bv) v = nd(rng);
          const std::string stem = fmt::format("blk.{}.{}.weight", layer, kinds[k]);
          ASSERT_TRUE(w.add_tensor(stem + ".lora_a", dtype, {ins[k], rank}, bytes_of(av)).is_ok());
          ASSERT_TRUE(w.add_tensor(stem + ".lora_b", dtype, {rank, outs[k]}, bytes_of(bv)).is_ok());
        }
      }
      const std::string path = dir_.file(fmt::format("a{}.gguf", a));
      ASSERT_TRUE(w.write(path).is_ok());
      auto lora = load_lora_adapter(path, *base_file_);
      ASSERT_TRUE(lora.is_ok()) << lora.status().to_string();
      auto shared = std::make_shared<const LoraAdapter>(std::move(*lora));
      for (const LoraMatrix& lm : shared->matrices) ASSERT_EQ(lm.dtype, dtype) << lm.target;
      ASSERT_TRUE(model_->set_adapter(a, shared).is_ok());
      const std::string merged = dir_.file(fmt::format("m{}.gguf", a));
      ASSERT_TRUE(merge_lora(*base_file_, *shared, merged).is_ok());
      auto mm = load_model(merged);
      ASSERT_TRUE(mm.is_ok()) << mm.status().to_string();
      merged_.push_back(std::move(*mm));
    }
  }

  // Logits of every position of `s` from `m` alone (one sequence, one batch).
  std::vector<float> alone(Model& m, const Seq& s) {
    auto kv = KvCache::create(m.config(), 1, 64, DType::kF32);
    EXPECT_TRUE(kv.is_ok());
    Batch b;
    for (size_t i = 0; i < s.tokens.size(); ++i) b.add(s.tokens[i], static_cast<int32_t>(i), 0, true);
    std::vector<float> out(s.tokens.size() * V());
    EXPECT_TRUE(m.forward(b, *kv, out, nullptr).is_ok());
    return out;
  }

  int64_t V() const { return model_->config().n_vocab; }

  // All sequences in one batch through the adapter path, rows interleaved (round-robin over
  // sequences) when `interleave`, else each sequence's rows together; then each sequence's
  // logits against its merged (or base) model alone.
  void check(const std::vector<Seq>& seqs, bool interleave, ThreadPool* pool) {
    auto kv = KvCache::create(model_->config(), static_cast<int32_t>(seqs.size()), 64, DType::kF32);
    ASSERT_TRUE(kv.is_ok());
    Batch b;
    std::vector<std::pair<size_t, size_t>> row_of;  // (sequence, position) of each row
    size_t longest = 0;
    for (const auto& s : seqs) longest = std::max(longest, s.tokens.size());
    if (interleave) {
      for (size_t p = 0; p < longest; ++p) {
        for (size_t q = 0; q < seqs.size(); ++q) {
          if (p < seqs[q].tokens.size()) row_of.emplace_back(q, p);
        }
      }
    } else {
      for (size_t q = 0; q < seqs.size(); ++q) {
        for (size_t p = 0; p < seqs[q].tokens.size(); ++p) row_of.emplace_back(q, p);
      }
    }
    for (const auto& [q, p] : row_of) {
      b.add(seqs[q].tokens[p], static_cast<int32_t>(p), static_cast<int32_t>(q), true, seqs[q].adapter);
    }
    std::vector<float> logits(row_of.size() * V());
    ASSERT_TRUE(model_->forward(b, *kv, logits, pool).is_ok());
    for (size_t q = 0; q < seqs.size(); ++q) {
      Model& ref = seqs[q].adapter < 0 ? *model_ : *merged_[static_cast<size_t>(seqs[q].adapter)];
      const std::vector<float> want = alone(ref, seqs[q]);
      for (size_t r = 0; r < row_of.size(); ++r) {
        if (row_of[r].first != q) continue;
        const size_t p = row_of[r].second;
        const float* got = logits.data() + r * V();
        const float* exp = want.data() + p * V();
        float worst = 0.0f, scale = 0.0f;
        for (int64_t v = 0; v < V(); ++v) {
          worst = std::max(worst, std::abs(got[v] - exp[v]));
          scale = std::max(scale, std::abs(exp[v]));
        }
        EXPECT_LE(worst, 1e-4f * std::max(1.0f, scale))
            << "sequence " << q << " (adapter " << seqs[q].adapter << ") position " << p;
        EXPECT_EQ(std::max_element(got, got + V()) - got, std::max_element(exp, exp + V()) - exp)
            << "greedy choice, sequence " << q << " position " << p;
      }
    }
  }

  std::vector<Seq> make(const std::vector<int32_t>& adapters) {
    std::vector<Seq> out;
    std::mt19937 rng(static_cast<uint32_t>(adapters.size()));
    for (int32_t a : adapters) {
      Seq s;
      s.adapter = a;
      const int n = 3 + static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) s.tokens.push_back(static_cast<int32_t>(1 + rng() % 1000));
      out.push_back(std::move(s));
    }
    return out;
  }

  testing::TempDir dir_;
  std::shared_ptr<const ModelFile> base_file_;
  std::unique_ptr<Model> model_;
  std::vector<std::unique_ptr<Model>> merged_;
};

TEST_P(LoraForwardTest, AdaptersChangeTheOutput) {
  // Guards the comparisons below against adapters too small to matter.
  const Seq s = make({0})[0];
  const auto base = alone(*model_, s);
  const auto merged = alone(*merged_[0], s);
  float diff = 0.0f;
  for (size_t i = 0; i < base.size(); ++i) diff = std::max(diff, std::abs(base[i] - merged[i]));
  EXPECT_GT(diff, 0.05f);
}

TEST_P(LoraForwardTest, OneAdapterWithBaseRows) {
  check(make({2, -1}), false, nullptr);
  check(make({-1, 5, -1}), true, nullptr);
}

TEST_P(LoraForwardTest, ThreeAdaptersWithBaseRows) {
  check(make({1, -1, 4, 7}), false, nullptr);
  check(make({1, -1, 4, 7, 1}), true, nullptr);  // adapter 1's rows scattered
}

TEST_P(LoraForwardTest, EightAdaptersWithBaseRowsAndThreads) {
  ThreadPool pool(2);
  check(make({0, 1, 2, 3, -1, 4, 5, 6, 7, -1}), true, &pool);
  check(make({7, 6, 5, 4, 3, 2, 1, 0, -1}), false, &pool);
}

TEST_P(LoraForwardTest, UnregisteredIdsAreRefusedAndRemovalWorks) {
  auto kv = KvCache::create(model_->config(), 1, 64, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch b;
  b.add(5, 0, 0, true, 9);
  std::vector<float> logits(V());
  auto st = model_->forward(b, *kv, logits, nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("adapter id 9"), std::string::npos) << st.to_string();
  ASSERT_TRUE(model_->set_adapter(3, nullptr).is_ok());
  b.clear();
  b.add(5, 0, 0, true, 3);
  EXPECT_FALSE(model_->forward(b, *kv, logits, nullptr).is_ok());
  EXPECT_FALSE(model_->set_adapter(-2, nullptr).is_ok());
}

INSTANTIATE_TEST_SUITE_P(Families, LoraForwardTest,
                         ::testing::Values("llama", "qwen2", "qwen3", "mistral"));

}  // namespace lora_forward_test
}  // namespace tessera::model
