// LoRA fine-tuning: the adapters' float64 gradients against central finite differences; the
// float32 pass against the float64 one, bit-identical on repeats; fresh adapters computing the
// base; training lowering the loss with the base untouched; the PEFT and GGUF files giving back
// the trained matrices exactly through model::load_lora_adapter; and the inference forward with
// the adapter applied (the serving path) against the merged model (tessera lora merge) and the
// trainer's own logits. Also the base loader on a quantized file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/model/architecture.h"
#include "tessera/model/batch.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/synth.h"
#include "tessera/train/base_model.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/llama_trainer.h"
#include "tessera/train/lora_layout.h"
#include "tessera/train/lora_writer.h"
#include "tessera/train/pretrain.h"
#include "test_util.h"

namespace tessera::train {
namespace lora_test {

LlamaShape tiny_shape() {
  LlamaShape s;
  s.vocab = 13;
  s.dim = 8;
  s.layers = 2;
  s.heads = 2;
  s.kv_heads = 1;
  s.ffn = 12;
  s.context = 8;
  return s;
}

template <class T>
std::vector<T> random_values(int64_t n, uint32_t seed, double sd, double mean = 0.0) {
  std::vector<T> p(static_cast<size_t>(n));
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(mean, sd);
  for (T& v : p) v = static_cast<T>(nd(rng));
  return p;
}

std::vector<double> random_base(const LlamaShape& s, uint32_t seed) {
  int64_t n = 0;
  const auto layout = llama_param_layout(s, &n);
  std::vector<double> p = random_values<double>(n, seed, 0.4);
  for (const ParamTensor& t : layout) {
    if (!t.matrix) {
      for (int64_t i = 0; i < t.size; ++i) p[t.offset + i] = 1.0 + 0.5 * p[t.offset + i];
    }
  }
  return p;
}

LoraLayout all_targets(const LlamaShape& s, int64_t rank, double alpha) {
  LoraConfig c;
  c.rank = rank;
  c.alpha = alpha;
  c.targets = *parse_lora_targets("all");
  auto l = make_lora_layout(s, c);
  EXPECT_TRUE(l.is_ok()) << l.status().to_string();
  return *l;
}

struct Data {
  int64_t batch = 2, t = 5;
  std::vector<int32_t> tokens = {1, 5, 2, 9, 12, 0, 3, 3, 7, 11};
  std::vector<int32_t> targets = {5, 2, 9, 12, 4, 3, 3, 7, 11, -1};
};

TEST(LoraLayout, TargetsParseAndLayoutIsContiguous) {
  auto t = parse_lora_targets("v, q,q_proj,mlp.down_proj");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(*t, (std::vector<LoraTarget>{LoraTarget::kQ, LoraTarget::kV, LoraTarget::kDown}));
  EXPECT_EQ(parse_lora_targets("all")->size(), 7u);
  auto bad = parse_lora_targets("q,lm_head");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("lm_head"), std::string::npos);
  EXPECT_FALSE(parse_lora_targets(" , ").is_ok());

  const LlamaShape s = tiny_shape();
  LoraConfig c;
  c.rank = 3;
  c.alpha = 6;
  c.targets = *t;
  auto l = make_lora_layout(s, c);
  ASSERT_TRUE(l.is_ok());
  ASSERT_EQ(l->tensors.size(), 6u);
  EXPECT_DOUBLE_EQ(l->scale, 2.0);
  EXPECT_EQ(l->tensors[0].target, "blk.0.attn_q.weight");
  EXPECT_EQ(l->tensors[5].target, "blk.1.ffn_down.weight");
  EXPECT_EQ(l->tensors[5].n_in, 12);
  EXPECT_EQ(l->tensors[5].n_out, 8);
  EXPECT_EQ(l->find(1, LoraTarget::kK), nullptr);
  int64_t off = 0;
  for (const LoraTensor& x : l->tensors) {
    EXPECT_EQ(x.a_offset, off);
    EXPECT_EQ(x.b_offset, off + 3 * x.n_in);
    off = x.b_offset + 3 * x.n_out;
  }
  EXPECT_EQ(off, l->n_params);
  c.rank = 0;
  EXPECT_FALSE(make_lora_layout(s, c).is_ok());
  c.rank = 2;
  c.alpha = -1;
  EXPECT_FALSE(make_lora_layout(s, c).is_ok());

  // PEFT's init: A within +-1/sqrt(in) and not all zero, B zero.
  std::vector<float> p(static_cast<size_t>(l->n_params), 7.0f);
  init_lora_params(*l, p, 1);
  for (const LoraTensor& x : l->tensors) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(x.n_in));
    float largest = 0;
    for (int64_t i = 0; i < 3 * x.n_in; ++i) largest = std::max(largest, std::abs(p[x.a_offset + i]));
    EXPECT_LE(largest, bound);
    EXPECT_GT(largest, 0.3f * bound);
    for (int64_t i = 0; i < 3 * x.n_out; ++i) EXPECT_EQ(p[x.b_offset + i], 0.0f);
  }
}

TEST(LoraTrainer, RecomputationGivesTheSameAdapterGradients) {
  const LlamaShape s = tiny_shape();
  const LoraLayout lora = all_targets(s, 3, 5.0);
  const std::vector<double> base64 = random_base(s, 1);
  const std::vector<float> base(base64.begin(), base64.end());
  std::vector<float> ad = random_values<float>(lora.n_params, 2, 0.3);
  const Data d;
  LlamaTrainer<float> plain(s), rc(s);
  rc.set_recompute(true);
  std::vector<float> g1(ad.size(), 0.0f), g2(ad.size(), 0.0f);
  EXPECT_EQ(plain.forward_backward_lora(base, lora, ad, d.tokens.data(), d.targets.data(), d.batch, d.t, g1),
            rc.forward_backward_lora(base, lora, ad, d.tokens.data(), d.targets.data(), d.batch, d.t, g2));
  EXPECT_EQ(g1, g2);
}

TEST(LoraTrainer, AdapterGradientsMatchFiniteDifferences) {
  const LlamaShape s = tiny_shape();
  const LoraLayout lora = all_targets(s, 3, 5.0);
  LlamaTrainer<double> tr(s);
  const std::vector<double> base = random_base(s, 1);
  std::vector<double> ad = random_values<double>(lora.n_params, 2, 0.3);
  const Data d;
  std::vector<double> grads(ad.size(), 0.0);
  const double loss = tr.forward_backward_lora(base, lora, ad, d.tokens.data(), d.targets.data(),
                                               d.batch, d.t, grads);
  EXPECT_GT(loss, 0.5);
  auto loss_at = [&] {
    return tr.forward_backward_lora(base, lora, ad, d.tokens.data(), d.targets.data(), d.batch,
                                    d.t, {});
  };
  for (const LoraTensor& t : lora.tensors) {
    for (auto [off, n, name] : {std::tuple{t.a_offset, 3 * t.n_in, "A"}, {t.b_offset, 3 * t.n_out, "B"}}) {
      double largest = 0.0;
      for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 11)) {
        const size_t j = static_cast<size_t>(off + i);
        const double keep = ad[j], h = 1e-5;
        ad[j] = keep + h;
        const double up = loss_at();
        ad[j] = keep - h;
        const double down = loss_at();
        ad[j] = keep;
        const double fd = (up - down) / (2 * h);
        EXPECT_NEAR(grads[j], fd, 1e-7 + 1e-5 * std::abs(fd)) << t.target << " " << name << " " << i;
        largest = std::max(largest, std::abs(fd));
      }
      EXPECT_GT(largest, 1e-4) << t.target << " " << name;
    }
  }
}

TEST(LoraTrainer, FreshAdaptersComputeTheBaseAndFloat32MatchesFloat64) {
  const LlamaShape s = tiny_shape();
  const LoraLayout lora = all_targets(s, 2, 4.0);
  const std::vector<double> b64 = random_base(s, 3);
  const std::vector<float> b32(b64.begin(), b64.end());
  const Data d;
  // B = 0: the base's loss and logits exactly.
  ThreadPool pool(2);
  LlamaTrainer<float> tr(s, &pool);
  std::vector<float> fresh(static_cast<size_t>(lora.n_params));
  init_lora_params(lora, fresh, 9);
  const double base_loss = tr.forward_backward(b32, d.tokens.data(), d.targets.data(), d.batch, d.t, {});
  const std::vector<float> base_logits(tr.logits().begin(), tr.logits().end());
  EXPECT_EQ(tr.forward_backward_lora(b32, lora, fresh, d.tokens.data(), d.targets.data(), d.batch, d.t, {}),
            base_loss);
  EXPECT_EQ(std::vector<float>(tr.logits().begin(), tr.logits().end()), base_logits);

  const std::vector<double> a64 = random_values<double>(lora.n_params, 4, 0.3);
  const std::vector<float> a32(a64.begin(), a64.end());
  LlamaTrainer<double> ref(s);
  std::vector<double> g64(a64.size(), 0.0);
  const double l64 = ref.forward_backward_lora(b64, lora, a64, d.tokens.data(), d.targets.data(), d.batch, d.t, g64);
  std::vector<float> g32(a32.size(), 0.0f), again(a32.size(), 0.0f);
  const double l32 = tr.forward_backward_lora(b32, lora, a32, d.tokens.data(), d.targets.data(), d.batch, d.t, g32);
  EXPECT_NEAR(l32, l64, 1e-5);
  double scale = 0.0;
  for (double g : g64) scale = std::max(scale, std::abs(g));
  for (size_t i = 0; i < g64.size(); ++i) EXPECT_NEAR(g32[i], g64[i], 2e-5 * scale) << i;
  tr.forward_backward_lora(b32, lora, a32, d.tokens.data(), d.targets.data(), d.batch, d.t, again);
  EXPECT_EQ(again, g32);
}

// A base pretrained briefly on one pattern, fine-tuned on another.
struct Corpus {
  std::vector<int32_t> a, b;
  Corpus() {
    for (int i = 0; i < 4000; ++i) a.push_back(static_cast<int32_t>((i * 3) % 13));
    for (int i = 0; i < 4000; ++i) b.push_back(static_cast<int32_t>((i * 5 + i / 7) % 13));
  }
};

TEST(LoraFinetune, LowersTheLossAndLeavesTheBaseAlone) {
  PretrainOptions o;
  o.shape = tiny_shape();
  o.shape.dim = 16;
  o.shape.ffn = 32;
  o.batch = 4;
  o.steps = 30;
  o.lr = 1e-2;
  o.warmup = 3;
  o.eval_every = 10;
  o.eval_windows = 8;
  const Corpus c;
  const std::span<const int32_t> a(c.a), b(c.b);
  int64_t n = 0;
  llama_param_layout(o.shape, &n);
  std::vector<float> base(static_cast<size_t>(n));
  init_llama_params(o.shape, base, 1);
  ThreadPool pool(2);
  ASSERT_TRUE(pretrain(o, base, a.first(3000), a.last(1000), &pool).is_ok());
  const std::vector<float> before = base;

  LoraConfig lc;
  lc.rank = 4;
  lc.alpha = 8;
  lc.targets = *parse_lora_targets("q,v,o,down");
  auto lora = make_lora_layout(o.shape, lc);
  ASSERT_TRUE(lora.is_ok());
  std::vector<float> ad(static_cast<size_t>(lora->n_params));
  init_lora_params(*lora, ad, 2);
  auto r = finetune_lora(o, *lora, base, ad, b.first(3000), b.last(1000), &pool, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_GT(r->initial_val_loss, 0);
  EXPECT_EQ(r->initial_val_loss, evaluate_loss(*std::make_unique<LlamaTrainer<float>>(o.shape, &pool),
                                               base, b.last(1000), o.eval_windows, o.batch));
  EXPECT_LT(r->final_val_loss, r->initial_val_loss - 0.3);
  EXPECT_LT(r->steps.back().loss, r->steps.front().loss);
  EXPECT_EQ(std::memcmp(base.data(), before.data(), base.size() * sizeof(float)), 0);
  // Deterministic: the same run again gives the same adapters.
  std::vector<float> ad2(static_cast<size_t>(lora->n_params));
  init_lora_params(*lora, ad2, 2);
  ASSERT_TRUE(finetune_lora(o, *lora, base, ad2, b.first(3000), b.last(1000), &pool, {}).is_ok());
  EXPECT_EQ(ad2, ad);
  // Wrong sizes are refused.
  EXPECT_FALSE(finetune_lora(o, *lora, base, std::span(ad).first(3), b.first(3000), b.last(1000), &pool, {}).is_ok());
}

// The trained adapters through both files and the serving side.
class LoraFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = tiny_shape();
    s_.vocab = 40;
    s_.dim = 16;
    s_.heads = 4;
    s_.kv_heads = 2;  // head width 4: the q/k row permutation is not the identity
    s_.ffn = 24;
    s_.context = 16;
    const std::vector<double> b64 = random_base(s_, 5);
    base_.assign(b64.begin(), b64.end());
    ASSERT_TRUE(write_llama_gguf(dir_.file("base.gguf"), s_, base_, nullptr, "base").is_ok());
    lora_ = all_targets(s_, 3, 6.0);
    ad_ = random_values<float>(lora_.n_params, 6, 0.3);
    auto f = model::open_model_file(dir_.file("base.gguf"));
    ASSERT_TRUE(f.is_ok());
    file_ = std::make_shared<const model::ModelFile>(std::move(*f));
  }

  void expect_exact(const model::LoraAdapter& got) {
    ASSERT_EQ(got.matrices.size(), lora_.tensors.size());
    for (size_t i = 0; i < lora_.tensors.size(); ++i) {
      const LoraTensor& t = lora_.tensors[i];
      const model::LoraMatrix& m = got.matrices[i];
      EXPECT_EQ(m.target, t.target);
      ASSERT_EQ(m.rank, 3);
      ASSERT_EQ(m.n_in, t.n_in);
      ASSERT_EQ(m.n_out, t.n_out);
      EXPECT_EQ(m.dtype, kernels::DType::kF32);
      EXPECT_EQ(m.scale, 2.0f);
      EXPECT_EQ(m.a, std::vector<float>(ad_.begin() + t.a_offset, ad_.begin() + t.a_offset + 3 * t.n_in))
          << t.target;
      for (int64_t o = 0; o < t.n_out; ++o) {
        for (int64_t k = 0; k < 3; ++k) {
          ASSERT_EQ(m.bt[static_cast<size_t>(k * t.n_out + o)], ad_[static_cast<size_t>(t.b_offset + o * 3 + k)])
              << t.target << " B[" << o << "][" << k << "]";
        }
      }
    }
  }

  testing::TempDir dir_;
  LlamaShape s_;
  std::vector<float> base_, ad_;
  LoraLayout lora_;
  std::shared_ptr<const model::ModelFile> file_;
};

TEST_F(LoraFiles, PeftAndGgufLoadBackTheTrainedMatricesExactly) {
  ASSERT_TRUE(write_peft_adapter(dir_.file("peft"), s_, lora_, ad_, "base.gguf").is_ok());
  ASSERT_TRUE(write_gguf_lora(dir_.file("a.gguf"), s_, lora_, ad_, "test").is_ok());
  auto peft = model::load_lora_adapter(dir_.file("peft"), *file_);
  ASSERT_TRUE(peft.is_ok()) << peft.status().to_string();
  EXPECT_EQ(peft->format, model::LoraFormat::kPeft);
  EXPECT_EQ(peft->alpha, 6.0f);
  expect_exact(*peft);
  auto gguf = model::load_lora_adapter(dir_.file("a.gguf"), *file_);
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  EXPECT_EQ(gguf->format, model::LoraFormat::kGguf);
  expect_exact(*gguf);
  // A wrong-sized buffer is refused.
  EXPECT_FALSE(write_gguf_lora(dir_.file("b.gguf"), s_, lora_, std::span(ad_).first(5), "x").is_ok());
}

TEST_F(LoraFiles, ServingPathEqualsMergedModelAndTrainer) {
  ASSERT_TRUE(write_gguf_lora(dir_.file("a.gguf"), s_, lora_, ad_, "test").is_ok());
  ASSERT_TRUE(write_peft_adapter(dir_.file("peft"), s_, lora_, ad_, "base.gguf").is_ok());
  auto model = model::load_model(dir_.file("base.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  for (const char* adapter_path : {"a.gguf", "peft"}) {
    auto adapter = model::load_lora_adapter(dir_.file(adapter_path), (*model)->file());
    ASSERT_TRUE(adapter.is_ok()) << adapter.status().to_string();
    ASSERT_TRUE(model::merge_lora(*file_, *adapter, dir_.file("merged.gguf")).is_ok());
    ASSERT_TRUE((*model)->set_adapter(0, std::make_shared<const model::LoraAdapter>(std::move(*adapter))).is_ok());
    auto merged = model::load_model(dir_.file("merged.gguf"));
    ASSERT_TRUE(merged.is_ok()) << merged.status().to_string();

    const std::vector<int32_t> tokens = {3, 17, 29, 5, 5, 38, 1, 12, 30, 7};
    const int64_t T = static_cast<int64_t>(tokens.size()), V = s_.vocab;
    LlamaTrainer<float> tr(s_);
    std::vector<int32_t> targets(tokens.size(), -1);
    tr.forward_backward_lora(base_, lora_, ad_, tokens.data(), targets.data(), 1, T, {});
    const std::vector<float> trained(tr.logits().begin(), tr.logits().end());
    auto logits_of = [&](model::Model& m, int32_t adapter_id) {
      auto kv = model::KvCache::create(m.config(), 1, 32, kernels::DType::kF32);
      EXPECT_TRUE(kv.is_ok());
      model::Batch b;
      for (int64_t t = 0; t < T; ++t) b.add(tokens[t], static_cast<int32_t>(t), 0, true, adapter_id);
      std::vector<float> out(static_cast<size_t>(T * V));
      EXPECT_TRUE(m.forward(b, *kv, out, nullptr).is_ok());
      return out;
    };
    const std::vector<float> served = logits_of(**model, 0), want = logits_of(**merged, -1),
                             base = logits_of(**model, -1);
    float diff_from_base = 0;
    for (int64_t t = 0; t < T; ++t) {
      const float* g = served.data() + t * V;
      const float* w = want.data() + t * V;
      const float* x = trained.data() + t * V;
      for (int64_t v = 0; v < V; ++v) {
        EXPECT_NEAR(g[v], w[v], 1e-4f) << adapter_path << " position " << t << " logit " << v;
        EXPECT_NEAR(g[v], x[v], 1e-4f) << adapter_path << " position " << t << " logit " << v;
        diff_from_base = std::max(diff_from_base, std::abs(g[v] - base[static_cast<size_t>(t * V + v)]));
      }
      EXPECT_EQ(std::max_element(g, g + V) - g, std::max_element(w, w + V) - w) << "greedy at " << t;
    }
    EXPECT_GT(diff_from_base, 0.05f) << adapter_path << ": the adapter must matter";
  }
}

TEST(LoraBase, ReadsAQuantizedBaseAsTheModelComputesIt) {
  testing::TempDir dir;
  model::SynthOptions o;
  o.shape = *model::find_synth_shape("tiny");
  o.dtype = kernels::DType::kQ8_0;
  ASSERT_TRUE(model::write_synthetic_model(o, dir.file("q8.gguf")).is_ok());
  auto b = load_llama_base(dir.file("q8.gguf"));
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_GT(b->n_dequantized, 0);
  auto m = model::load_model(dir.file("q8.gguf"));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(b->shape.vocab, (*m)->config().n_vocab);
  EXPECT_EQ(b->shape.dim, (*m)->config().dim);
  const std::vector<int32_t> tokens = {1, 40, 300, 7, 99};
  const int64_t T = 5, V = b->shape.vocab;
  b->shape.context = T;
  LlamaTrainer<float> tr(b->shape);
  std::vector<int32_t> targets(5, -1);
  tr.forward_backward(b->params, tokens.data(), targets.data(), 1, T, {});
  auto kv = model::KvCache::create((*m)->config(), 1, 16, kernels::DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  model::Batch batch;
  for (int64_t t = 0; t < T; ++t) batch.add(tokens[t], static_cast<int32_t>(t), 0, true);
  std::vector<float> logits(static_cast<size_t>(T * V));
  ASSERT_TRUE((*m)->forward(batch, *kv, logits, nullptr).is_ok());
  // The model's own matmuls quantize activations for Q8_0 rows; the trainer's are f32.
  float worst = 0, scale = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    worst = std::max(worst, std::abs(logits[i] - tr.logits()[i]));
    scale = std::max(scale, std::abs(logits[i]));
  }
  EXPECT_LT(worst, 0.02f * std::max(1.0f, scale));
  // Another family is refused by name.
  o.arch = "qwen2";
  ASSERT_TRUE(model::write_synthetic_model(o, dir.file("qwen.gguf")).is_ok());
  auto q = load_llama_base(dir.file("qwen.gguf"));
  ASSERT_FALSE(q.is_ok());
  EXPECT_NE(q.status().message().find("qwen2"), std::string::npos) << q.status().to_string();
}

}  // namespace lora_test
}  // namespace tessera::train
