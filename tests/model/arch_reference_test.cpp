// The registered families (qwen2, qwen3, mistral, phi3, gemma2, gemma3; llama has
// llama_reference_test) against a float64 reference written plainly below, sharing no code with
// the engine: for each family a tiny model (2 layers; Gemma 3: 6, one period of its 5 local : 1
// global layout) with f32 weights, a few tokens, prefill and decode through the KV cache,
// two sequences in one batch, a paged cache. Then a walk over the registry with `tessera synth`'s
// random-weight model of every family.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace arch_reference_test {

using kernels::DType;
using Vec = std::vector<double>;

// One family's hyperparameters and traits, as the test's reference understands them.
struct Family {
  const char* arch;
  int dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, vocab;
  bool neox;       // RoPE on (x[i], x[i + H/2]) instead of (x[2i], x[2i+1])
  bool qkv_bias;   // blk.N.attn_{q,k,v}.bias
  bool qk_norm;    // blk.N.attn_{q,k}_norm.weight, RMSNorm per head before RoPE
  int window;      // sliding window (0: none)
  bool tied;
  bool fused;      // attn_qkv ([Q+2KV, D]) and ffn_up holding gate then up ([2F, D])
  // Gemma (2 or 3; 0: not): embeddings times sqrt(D), GELU-tanh gate, RMSNorm of the attention
  // and FFN outputs (post_attention_norm, post_ffw_norm) before the residual adds. The norm
  // weights are used as stored: llama.cpp's converter has already added Gemma's 1.
  int gemma = 0;
  int window_period = 0;     // > 0: the window only on layers l with l % period < period - 1
  double global_base = 0.0;  // > 0: the file's RoPE base on global layers (local ones: 10000)
  double global_factor = 1.0;  // linear RoPE scaling on global layers (Gemma 3)
  double attn_cap = 0.0, final_cap = 0.0;  // soft-caps: cap * tanh(x / cap); 0: none
  double attn_scale = 0.0;   // scores q · k * attn_scale; 0: 1 / sqrt(head_dim)
  const char* label = nullptr;  // test name when one arch appears twice
};

const Family kFamilies[] = {
    {"qwen2", 64, 2, 4, 2, 16, 96, 90, true, true, false, 0, true, false},
    // head size 32 with dim 64 and 4 heads: Q is wider than the model (Qwen3 0.6B's shape).
    {"qwen3", 64, 2, 4, 2, 32, 96, 90, true, false, true, 0, false, false},
    {"mistral", 64, 2, 4, 1, 16, 96, 90, false, false, false, 4, false, false},
    {"phi3", 64, 2, 4, 2, 16, 96, 90, true, false, false, 0, false, true},
    // Window 4 on layer 0 only (layer 1 global); caps small enough to bite on these weights
    // (llama.cpp's defaults are 50 and 30); head size 32 with dim / heads = 16.
    {"gemma2", 64, 2, 4, 2, 32, 96, 90, true, false, false, 4, true, false, 2, 2, 0.0, 1.0, 1.5,
     4.0, 0.0},
    // 46 layers: llama.cpp takes it for Gemma 2 27B and scales scores by 1/sqrt(dim / heads)
    // instead of 1/sqrt(head_dim).
    {"gemma2", 64, 46, 4, 2, 32, 96, 90, true, false, false, 4, true, false, 2, 2, 0.0, 1.0, 1.5,
     4.0, 0.25, "gemma2_27b_scale"},
    // Layers 0-4 local (window 4, RoPE base 10000), layer 5 global (base 1e6, linear factor 8).
    {"gemma3", 64, 6, 4, 2, 32, 96, 90, true, false, true, 4, true, false, 3, 6, 1e6, 8.0, 0.0,
     5.0, 0.0},
};

struct RefLayer {
  Vec attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;  // matrices row-major [out][in]
  Vec bq, bk, bv, q_norm, k_norm;
  Vec attn_post_norm, ffn_post_norm;
};

// The float64 reference forward pass.
struct Ref {
  Family f{};
  double eps = 1e-6, rope_base = 10000.0;
  Vec embd, output_norm, output;  // output empty: tied
  std::vector<RefLayer> layers;

  static Vec matvec(const Vec& w, const Vec& x, int rows) {
    Vec y(static_cast<size_t>(rows), 0.0);
    for (int r = 0; r < rows; ++r)
      for (size_t c = 0; c < x.size(); ++c) y[r] += w[r * x.size() + c] * x[c];
    return y;
  }
  Vec rmsnorm(const double* x, const Vec& w) const {
    const size_t n = w.size();
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    Vec y(n);
    for (size_t i = 0; i < n; ++i) y[i] = x[i] * s * w[i];
    return y;
  }
  bool local(int l) const { return f.window_period == 0 || l % f.window_period < f.window_period - 1; }
  void rope(Vec& v, int n_h, int pos, int l) const {
    const int hd = f.head_dim;
    const bool global = f.global_base > 0 && !local(l);
    const double base = global ? f.global_base : rope_base;
    const double factor = global ? f.global_factor : 1.0;
    for (int h = 0; h < n_h; ++h)
      for (int i = 0; i < hd / 2; ++i) {
        const double a = pos * std::pow(base, -2.0 * i / hd) / factor;
        const int i0 = f.neox ? i : 2 * i;
        const int i1 = f.neox ? i + hd / 2 : 2 * i + 1;
        const double x0 = v[h * hd + i0], x1 = v[h * hd + i1];
        v[h * hd + i0] = x0 * std::cos(a) - x1 * std::sin(a);
        v[h * hd + i1] = x0 * std::sin(a) + x1 * std::cos(a);
      }
  }

  // Logits for every position of `tokens` (positions 0..T-1).
  std::vector<Vec> forward(const std::vector<int>& tokens) const {
    const int hd = f.head_dim, T = static_cast<int>(tokens.size());
    const int qd = f.n_heads * hd, kvd = f.n_kv_heads * hd;
    std::vector<Vec> x(T);
    for (int t = 0; t < T; ++t) {
      x[t].assign(embd.begin() + tokens[t] * f.dim, embd.begin() + (tokens[t] + 1) * f.dim);
      if (f.gemma)
        for (double& e : x[t]) e *= std::sqrt(static_cast<double>(f.dim));
    }
    const double scale = f.attn_scale > 0 ? f.attn_scale : 1.0 / std::sqrt(static_cast<double>(hd));
    for (int l = 0; l < f.n_layers; ++l) {
      const RefLayer& L = layers[l];
      const int window = local(l) ? f.window : 0;
      std::vector<Vec> q(T), k(T), v(T);
      for (int t = 0; t < T; ++t) {
        const Vec xn = rmsnorm(x[t].data(), L.attn_norm);
        q[t] = matvec(L.wq, xn, qd);
        k[t] = matvec(L.wk, xn, kvd);
        v[t] = matvec(L.wv, xn, kvd);
        if (f.qkv_bias) {
          for (int i = 0; i < qd; ++i) q[t][i] += L.bq[i];
          for (int i = 0; i < kvd; ++i) k[t][i] += L.bk[i], v[t][i] += L.bv[i];
        }
        if (f.qk_norm) {
          for (int h = 0; h < f.n_heads; ++h) {
            const Vec n = rmsnorm(q[t].data() + h * hd, L.q_norm);
            std::copy(n.begin(), n.end(), q[t].begin() + h * hd);
          }
          for (int h = 0; h < f.n_kv_heads; ++h) {
            const Vec n = rmsnorm(k[t].data() + h * hd, L.k_norm);
            std::copy(n.begin(), n.end(), k[t].begin() + h * hd);
          }
        }
        rope(q[t], f.n_heads, t, l);
        rope(k[t], f.n_kv_heads, t, l);
      }
      for (int t = 0; t < T; ++t) {
        const int p0 = window > 0 ? std::max(0, t - window + 1) : 0;
        Vec att(qd, 0.0);
        for (int h = 0; h < f.n_heads; ++h) {
          const int g = h / (f.n_heads / f.n_kv_heads);
          Vec s;
          double mx = -1e300;
          for (int p = p0; p <= t; ++p) {
            double d = 0;
            for (int i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[p][g * hd + i];
            d *= scale;
            if (f.attn_cap > 0) d = f.attn_cap * std::tanh(d / f.attn_cap);
            s.push_back(d);
            mx = std::max(mx, s.back());
          }
          double sum = 0;
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (int p = p0; p <= t; ++p)
            for (int i = 0; i < hd; ++i) att[h * hd + i] += s[p - p0] / sum * v[p][g * hd + i];
        }
        Vec o = matvec(L.wo, att, f.dim);
        if (f.gemma) o = rmsnorm(o.data(), L.attn_post_norm);
        for (int i = 0; i < f.dim; ++i) x[t][i] += o[i];
        const Vec xn = rmsnorm(x[t].data(), L.ffn_norm);
        Vec g = matvec(L.w_gate, xn, f.ffn);
        const Vec u = matvec(L.w_up, xn, f.ffn);
        for (int i = 0; i < f.ffn; ++i) {
          const double gi = g[i];
          g[i] = f.gemma ? 0.5 * gi * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (gi + 0.044715 * gi * gi * gi)))
                         : gi / (1.0 + std::exp(-gi));
          g[i] *= u[i];
        }
        Vec d = matvec(L.w_down, g, f.dim);
        if (f.gemma) d = rmsnorm(d.data(), L.ffn_post_norm);
        for (int i = 0; i < f.dim; ++i) x[t][i] += d[i];
      }
    }
    std::vector<Vec> logits(T);
    for (int t = 0; t < T; ++t) {
      logits[t] = matvec(output.empty() ? embd : output, rmsnorm(x[t].data(), output_norm), f.vocab);
      if (f.final_cap > 0)
        for (double& e : logits[t]) e = f.final_cap * std::tanh(e / f.final_cap);
    }
    return logits;
  }
};

// Writes a GGUF of family `f` with random f32 weights at `path` and the same weights into `ref`.
void write_model(const Family& f, const std::string& path, Ref& ref) {
  std::mt19937_64 rng(77 + f.dim + f.head_dim);
  auto draw = [&](int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    return v;
  };
  GgufWriter w;
  auto& m = w.metadata();
  const std::string a = f.arch;
  m.set("general.architecture", GgufValue::string(a));
  m.set(a + ".embedding_length", GgufValue::u32(f.dim));
  m.set(a + ".block_count", GgufValue::u32(f.n_layers));
  m.set(a + ".attention.head_count", GgufValue::u32(f.n_heads));
  m.set(a + ".attention.head_count_kv", GgufValue::u32(f.n_kv_heads));
  m.set(a + ".attention.key_length", GgufValue::u32(f.head_dim));
  m.set(a + ".attention.value_length", GgufValue::u32(f.head_dim));
  m.set(a + ".feed_forward_length", GgufValue::u32(f.ffn));
  m.set(a + ".context_length", GgufValue::u32(64));
  m.set(a + ".vocab_size", GgufValue::u32(f.vocab));
  m.set(a + ".rope.freq_base", GgufValue::f32(f.global_base > 0 ? static_cast<float>(f.global_base)
                                                                 : 10000.0f));
  if (f.global_factor != 1.0) {
    m.set(a + ".rope.scaling.type", GgufValue::string("linear"));
    m.set(a + ".rope.scaling.factor", GgufValue::f32(static_cast<float>(f.global_factor)));
  }
  m.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::f32(1e-6f));
  if (f.window > 0) m.set(a + ".attention.sliding_window", GgufValue::u32(f.window));
  if (f.attn_cap > 0) m.set(a + ".attn_logit_softcapping", GgufValue::f32(static_cast<float>(f.attn_cap)));
  if (f.final_cap > 0) m.set(a + ".final_logit_softcapping", GgufValue::f32(static_cast<float>(f.final_cap)));
  ref.f = f;
  auto put = [&](const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, std::move(shape),
                             {reinterpret_cast<const std::byte*>(v.data()), v.size() * 4})
                    .is_ok())
        << name;
  };
  // Fused families: matrices drawn here, written later as one tensor (rows concatenated).
  std::vector<float> pending;
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, float lo, float hi, Vec& out) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const std::vector<float> v = draw(n, lo, hi);
    out.assign(v.begin(), v.end());
    if (name.empty()) {
      pending.insert(pending.end(), v.begin(), v.end());
    } else {
      put(name, std::move(shape), v);
    }
  };
  auto flush = [&](const std::string& name, int64_t cols) {
    put(name, {cols, static_cast<int64_t>(pending.size()) / cols}, pending);
    pending.clear();
  };
  const int qd = f.n_heads * f.head_dim, kvd = f.n_kv_heads * f.head_dim;
  tensor("token_embd.weight", {f.dim, f.vocab}, -0.5f, 0.5f, ref.embd);
  ref.layers.resize(f.n_layers);
  for (int l = 0; l < f.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    RefLayer& L = ref.layers[l];
    tensor(p + "attn_norm.weight", {f.dim}, 0.5f, 1.5f, L.attn_norm);
    tensor(f.fused ? "" : p + "attn_q.weight", {f.dim, qd}, -0.2f, 0.2f, L.wq);
    tensor(f.fused ? "" : p + "attn_k.weight", {f.dim, kvd}, -0.2f, 0.2f, L.wk);
    tensor(f.fused ? "" : p + "attn_v.weight", {f.dim, kvd}, -0.2f, 0.2f, L.wv);
    if (f.fused) flush(p + "attn_qkv.weight", f.dim);
    tensor(p + "attn_output.weight", {qd, f.dim}, -0.2f, 0.2f, L.wo);
    if (f.qkv_bias) {
      tensor(p + "attn_q.bias", {qd}, -0.5f, 0.5f, L.bq);
      tensor(p + "attn_k.bias", {kvd}, -0.5f, 0.5f, L.bk);
      tensor(p + "attn_v.bias", {kvd}, -0.5f, 0.5f, L.bv);
    }
    if (f.qk_norm) {
      tensor(p + "attn_q_norm.weight", {f.head_dim}, 0.5f, 1.5f, L.q_norm);
      tensor(p + "attn_k_norm.weight", {f.head_dim}, 0.5f, 1.5f, L.k_norm);
    }
    if (f.gemma) tensor(p + "post_attention_norm.weight", {f.dim}, 0.5f, 1.5f, L.attn_post_norm);
    tensor(p + "ffn_norm.weight", {f.dim}, 0.5f, 1.5f, L.ffn_norm);
    tensor(f.fused ? "" : p + "ffn_gate.weight", {f.dim, f.ffn}, -0.2f, 0.2f, L.w_gate);
    tensor(f.fused ? "" : p + "ffn_up.weight", {f.dim, f.ffn}, -0.2f, 0.2f, L.w_up);
    if (f.fused) flush(p + "ffn_up.weight", f.dim);
    tensor(p + "ffn_down.weight", {f.ffn, f.dim}, -0.2f, 0.2f, L.w_down);
    if (f.gemma) tensor(p + "post_ffw_norm.weight", {f.dim}, 0.5f, 1.5f, L.ffn_post_norm);
  }
  tensor("output_norm.weight", {f.dim}, 0.5f, 1.5f, ref.output_norm);
  if (!f.tied) tensor("output.weight", {f.dim, f.vocab}, -0.5f, 0.5f, ref.output);
  ASSERT_TRUE(w.write(path).is_ok());
}

// Largest |got - want| over the largest |want|.
double rel_error(std::span<const float> got, const Vec& want) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  return max_diff / std::max(max_ref, 1e-12);
}

// f32 weights and an f32 cache: what remains is f32 accumulation.
constexpr double kTolerance = 1e-4;
const std::vector<int> kPrompt = {1, 5, 17, 3, 42, 8, 33, 2, 61, 7, 12};

class ArchReferenceTest : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    path_ = dir_.file("m.gguf");
    write_model(GetParam(), path_, ref_);
    if (HasFatalFailure()) return;
    auto m = load_model(path_);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(m).value();
    ASSERT_EQ(model_->config().architecture, GetParam().arch);
  }
  testing::TempDir dir_;
  std::string path_;
  Ref ref_;
  std::unique_ptr<Model> model_;
};

TEST_P(ArchReferenceTest, LogitsMatchFloat64Reference) {
  const int V = GetParam().vocab;
  const auto want = ref_.forward(kPrompt);
  // 1. The whole prompt in one batch (prefill tiles; with a window, rows past it alone).
  auto kv = KvCache::create(model_->config(), 2, 32, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch batch;
  for (size_t i = 0; i < kPrompt.size(); ++i) batch.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> logits(kPrompt.size() * V);
  ASSERT_TRUE(model_->forward(batch, *kv, logits, nullptr).is_ok());
  for (size_t t = 0; t < kPrompt.size(); ++t) {
    EXPECT_LE(rel_error(std::span<const float>(logits).subspan(t * V, V), want[t]), kTolerance)
        << "row " << t;
  }
  // 2. Prefill, then one-token decode steps through the cache (slot 1), with a thread pool.
  ThreadPool pool(2);
  const size_t n_pre = 3;
  batch.clear();
  for (size_t i = 0; i < n_pre; ++i) batch.add(kPrompt[i], static_cast<int32_t>(i), 1, i + 1 == n_pre);
  ASSERT_TRUE(model_->forward(batch, *kv, logits, &pool).is_ok());
  EXPECT_LE(rel_error(std::span<const float>(logits).first(V), want[n_pre - 1]), kTolerance);
  for (size_t t = n_pre; t < kPrompt.size(); ++t) {
    batch.clear();
    batch.add(kPrompt[t], static_cast<int32_t>(t), 1, true);
    ASSERT_TRUE(model_->forward(batch, *kv, logits, &pool).is_ok());
    EXPECT_LE(rel_error(std::span<const float>(logits).first(V), want[t]), kTolerance)
        << "decode at position " << t;
  }
}

TEST_P(ArchReferenceTest, TwoSequencesInOnePagedBatch) {
  const int V = GetParam().vocab;
  const std::vector<int> a = {4, 9, 1, 22, 13, 40, 6, 19};
  const std::vector<int> b = {30, 2, 7};
  // Blocks of 3 positions, handed out out of order: a window's start falls inside a block.
  auto kv = KvCache::create_paged(model_->config(), 2, 8, 3, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  const std::vector<int32_t> table_a = {5, 0, 3}, table_b = {7, 2};
  kv->set_block_table(0, table_a);
  kv->set_block_table(1, table_b);
  Batch batch;  // the two sequences' rows interleaved
  for (size_t i = 0; i < a.size(); ++i) {
    batch.add(a[i], static_cast<int32_t>(i), 0, i + 1 == a.size());
    if (i < b.size()) batch.add(b[i], static_cast<int32_t>(i), 1, i + 1 == b.size());
  }
  std::vector<float> logits(2 * V);
  ASSERT_TRUE(model_->forward(batch, *kv, logits, nullptr).is_ok());
  // Logit rows come in batch order: b's last row precedes a's.
  EXPECT_LE(rel_error(std::span<const float>(logits).first(V), ref_.forward(b).back()), kTolerance);
  EXPECT_LE(rel_error(std::span<const float>(logits).subspan(V, V), ref_.forward(a).back()), kTolerance);
}

// Every matmul's input reaches the observer under the GGUF names, for every family.
TEST_P(ArchReferenceTest, ObserverSeesEveryMatmul) {
  struct Names : MatmulInputObserver {
    std::vector<std::string> seen;
    void observe(std::string_view t, const float*, int64_t, int64_t) override { seen.emplace_back(t); }
  } names;
  ASSERT_TRUE(model_->set_matmul_input_observer(&names));
  auto kv = KvCache::create(model_->config(), 1, 8, DType::kF32);
  ASSERT_TRUE(kv.is_ok());
  Batch batch;
  batch.add(3, 0, 0, true);
  std::vector<float> logits(static_cast<size_t>(GetParam().vocab));
  ASSERT_TRUE(model_->forward(batch, *kv, logits, nullptr).is_ok());
  // A fused tensor is reported once under its own name.
  const size_t per_layer = GetParam().fused ? 4 : 7;  // qkv, output, gate+up, down
  ASSERT_EQ(names.seen.size(), per_layer * GetParam().n_layers + 1);
  EXPECT_EQ(names.seen[0], GetParam().fused ? "blk.0.attn_qkv.weight" : "blk.0.attn_q.weight");
  if (GetParam().fused) {
    EXPECT_EQ(names.seen[2], "blk.0.ffn_up.weight");
  }
  EXPECT_EQ(names.seen.back(), GetParam().tied ? "token_embd.weight" : "output.weight");
}

std::string family_name(const ::testing::TestParamInfo<Family>& p) {
  return p.param.label != nullptr ? p.param.label : p.param.arch;
}

INSTANTIATE_TEST_SUITE_P(Families, ArchReferenceTest, ::testing::ValuesIn(kFamilies), family_name);

// A family's own tensors are required: a qwen2 file without Q bias, a qwen3 file without a
// K norm are refused with the tensor's name.
TEST(ArchErrors, MissingFamilyTensorsAreNamed) {
  testing::TempDir dir;
  for (const auto& [arch, missing] : {std::pair{"qwen2", "blk.0.attn_q.bias"},
                                      std::pair{"qwen3", "blk.0.attn_q_norm.weight"}}) {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.shape.n_vocab = 512;
    o.arch = "llama";  // llama's tensors under the family's name
    const std::string path = dir.file(std::string(arch) + ".gguf");
    ASSERT_TRUE(write_synthetic_model(o, path).is_ok());
    auto f = open_model_file(path);
    ASSERT_TRUE(f.is_ok());
    ModelFile file = std::move(f).value();
    // Rename the keys: general.architecture and the prefix.
    Metadata renamed;
    for (const auto& [key, value] : file.metadata.entries()) {
      if (key == "general.architecture") {
        renamed.set(key, GgufValue::string(arch));
      } else if (key.rfind("llama.", 0) == 0) {
        renamed.set(std::string(arch) + key.substr(5), value);
      } else {
        renamed.set(key, value);
      }
    }
    file.metadata = renamed;
    auto m = build_model(std::make_shared<const ModelFile>(std::move(file)));
    ASSERT_FALSE(m.is_ok()) << arch;
    EXPECT_NE(m.status().to_string().find(missing), std::string::npos) << m.status().to_string();
  }
}

TEST(ArchErrors, BadSlidingWindowIsRefused) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  o.shape.n_vocab = 512;
  o.arch = "mistral";
  o.sliding_window = 4;
  const std::string path = dir.file("m.gguf");
  ASSERT_TRUE(write_synthetic_model(o, path).is_ok());
  auto f = open_model_file(path);
  ASSERT_TRUE(f.is_ok());
  f->metadata.set("mistral.attention.sliding_window", GgufValue::u32(0));
  auto m = build_model(std::make_shared<const ModelFile>(std::move(f).value()));
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().to_string().find("sliding_window"), std::string::npos);
  o.arch = "qwen2";  // synth writes windows for mistral only
  EXPECT_FALSE(write_synthetic_model(o, path).is_ok());
}

// A Gemma file's own tokenizer: SentencePiece ("llama" model) with Gemma's ids (<eos> 1, <bos>
// 2), add_bos_token true and add_space_prefix false, as llama.cpp's converter writes them, and
// its chat turns' <end_of_turn> ending generation (as llama.cpp does, by the token's text).
TEST(GemmaTokenizer, LoadsWithBosAndNoSpacePrefix) {
  Metadata vocab = synthetic_vocab(512);
  auto toks = vocab.get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(toks.is_ok());
  GgufArray renamed = **toks;
  renamed.items[1] = GgufValue::string("<eos>");
  renamed.items[2] = GgufValue::string("<bos>");
  renamed.items[511] = GgufValue::string("<end_of_turn>");
  vocab.set("tokenizer.ggml.tokens", GgufValue::array(std::move(renamed)));
  auto types = vocab.get_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.is_ok());
  GgufArray control = **types;
  control.items[511] = GgufValue::i32(3);  // a control token, as in Gemma's vocabulary
  vocab.set("tokenizer.ggml.token_type", GgufValue::array(std::move(control)));
  vocab.set("tokenizer.ggml.bos_token_id", GgufValue::u32(2));
  vocab.set("tokenizer.ggml.eos_token_id", GgufValue::u32(1));
  vocab.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
  vocab.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  testing::TempDir dir;
  for (const char* arch : {"gemma2", "gemma3"}) {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.arch = arch;
    o.vocab = vocab;
    const std::string path = dir.file(std::string(arch) + ".gguf");
    ASSERT_TRUE(write_synthetic_model(o, path).is_ok()) << arch;
    auto m = load_model(path);
    ASSERT_TRUE(m.is_ok()) << arch << ": " << m.status().to_string();
    EXPECT_TRUE((*m)->config().tied_output);
    auto tok = load_tokenizer_for(**m, "");
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    EXPECT_EQ((*tok)->bos_id(), 2);
    EXPECT_EQ((*tok)->eos_id(), 1);
    EXPECT_TRUE((*tok)->is_end_of_generation(1));
    EXPECT_TRUE((*tok)->is_end_of_generation(511));
    EXPECT_EQ((*tok)->encode("<end_of_turn>", false, true), std::vector<int32_t>{511});
    const std::vector<int32_t> ids = (*tok)->encode("hello world", true, false);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids[0], 2);  // BOS added
    // No space prefix: the first piece is "h..." rather than "\u2581h...", and " world" keeps its
    // space marker.
    EXPECT_NE((*tok)->token_text(ids[1]).substr(0, 3), "\xE2\x96\x81");
    EXPECT_EQ((*tok)->decode(ids), "hello world");
    EXPECT_EQ((*tok)->encode("hello", false, false)[0], ids[1]);
  }
}

// Every registered family has a synthetic model that loads and runs (and synth writes no family
// the registry lacks).
TEST(ArchRegistry, EveryFamilyRunsItsSyntheticModel) {
  std::vector<std::string> registered;
  for (const Architecture& a : architectures()) registered.emplace_back(a.name);
  EXPECT_EQ(registered, synth_architectures());
  testing::TempDir dir;
  for (const std::string& arch : registered) {
    SynthOptions o;
    o.shape = *find_synth_shape("tiny");
    o.shape.n_vocab = 512;
    o.arch = arch;
    if (arch == "mistral" || arch == "gemma2" || arch == "gemma3") o.sliding_window = 3;
    o.dtype = DType::kQ8_0;
    const std::string path = dir.file(arch + ".gguf");
    ASSERT_TRUE(write_synthetic_model(o, path).is_ok()) << arch;
    auto m = load_model(path);
    ASSERT_TRUE(m.is_ok()) << arch << ": " << m.status().to_string();
    EXPECT_EQ((*m)->config().architecture, arch);
    auto kv = KvCache::create((*m)->config(), 1, 16);
    ASSERT_TRUE(kv.is_ok());
    Batch batch;
    for (int i = 0; i < 6; ++i) batch.add(10 + i, i, 0, true);
    std::vector<float> logits(6 * 512);
    ASSERT_TRUE((*m)->forward(batch, *kv, logits, nullptr).is_ok()) << arch;
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << arch;
  }
}

}  // namespace arch_reference_test
}  // namespace tessera::model
