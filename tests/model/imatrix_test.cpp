// Calibration statistics and importance matrices: the llama forward pass reports every weight
// matmul's input (checked against the model's own embedding and norms recomputed here for the
// first layer's Q/K/V input), collect_activation_stats sums them per chunk, the GGUF imatrix
// round-trips, hostile files (GGUF and legacy .dat: truncated, wrong shapes, NaN, zero counts)
// get clear errors, and `quantize --imatrix` weights the matrices it has statistics for, lists
// the rest, refuses a column mismatch and writes the same bytes as before without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include <fmt/format.h>

#include "tessera/kernels/kernel_table.h"
#include "tessera/model/activation_stats.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/imatrix_file.h"
#include "tessera/model/quantize.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace imatrix_test {

using kernels::DType;

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(raw.size());
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

struct TinyModel {
  testing::TempDir dir;
  std::string path;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

std::unique_ptr<TinyModel> tiny_model() {
  auto t = std::make_unique<TinyModel>();
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  t->path = t->dir.file("m.gguf");
  EXPECT_TRUE(write_synthetic_model(o, t->path).is_ok());
  auto m = load_model(t->path);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  t->model = std::move(m).value();
  auto tok = load_tokenizer_for(*t->model, "");
  EXPECT_TRUE(tok.is_ok());
  t->tokenizer = std::move(tok).value();
  return t;
}

std::string calibration_text() {
  std::string s;
  for (int i = 0; i < 60; ++i) {
    s += fmt::format("The quick brown fox {} jumps over the lazy dog and counts to {}. ", i, i * 7);
  }
  return s;
}

// Every matrix of every layer is observed, with its own row length, and every chunk token.
TEST(ActivationStats, ObservesEveryMatrixAndToken) {
  auto t = tiny_model();
  const ModelConfig& c = t->model->config();
  ActivationStatsOptions o;
  o.ctx = 32;
  o.max_chunks = 3;
  int64_t progress_calls = 0;
  o.progress = [&](int64_t, int64_t) { ++progress_calls; };
  auto s = collect_activation_stats(*t->model, *t->tokenizer, calibration_text(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->n_chunks, 3);
  EXPECT_EQ(progress_calls, 3);
  EXPECT_EQ(s->chunk_size, 32);
  EXPECT_EQ(static_cast<int64_t>(s->tensors.size()), 7 * c.n_layers + 1);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                          "ffn_down"}) {
      const std::string name = fmt::format("blk.{}.{}.weight", l, m);
      ASSERT_TRUE(s->tensors.count(name)) << name;
      const auto& st = s->tensors.at(name);
      EXPECT_EQ(st.count, 96) << name;
      const int64_t cols = std::string(m) == "attn_output" ? c.q_dim()
                           : std::string(m) == "ffn_down"  ? c.ffn_dim
                                                           : c.dim;
      EXPECT_EQ(static_cast<int64_t>(st.sum_sq.size()), cols) << name;
      for (double v : st.sum_sq) EXPECT_TRUE(std::isfinite(v) && v >= 0) << name;
    }
    // Q, K and V share one input.
    EXPECT_EQ(s->tensors.at(fmt::format("blk.{}.attn_q.weight", l)).sum_sq,
              s->tensors.at(fmt::format("blk.{}.attn_v.weight", l)).sum_sq);
  }
  const std::string out = c.tied_output ? "token_embd.weight" : "output.weight";
  ASSERT_TRUE(s->tensors.count(out));
  EXPECT_EQ(s->tensors.at(out).count, 96);
  const auto rms = s->column_rms("blk.0.ffn_down.weight");
  ASSERT_EQ(static_cast<int64_t>(rms.size()), c.ffn_dim);
  EXPECT_GT(rms[0], 0.0f);
  EXPECT_TRUE(s->column_rms("no.such.weight").empty());
  // The observer is removed afterwards: a forward pass runs without it.
  auto kv = KvCache::create(c, 1, 8, DType::kF32).value();
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));
  Batch b;
  b.add(1, 0, 0, true);
  EXPECT_TRUE(t->model->forward(b, kv, logits, nullptr).is_ok());
}

// The first layer's Q/K/V input is rmsnorm(embedding) * attn_norm: recomputed here from the
// tensors for one chunk and compared with the statistics.
TEST(ActivationStats, FirstLayerInputMatchesAReference) {
  auto t = tiny_model();
  const ModelConfig& c = t->model->config();
  ActivationStatsOptions o;
  o.ctx = 16;
  o.max_chunks = 1;
  const std::string text = calibration_text();
  auto s = collect_activation_stats(*t->model, *t->tokenizer, text, o);
  ASSERT_TRUE(s.is_ok());
  std::vector<int32_t> toks = t->tokenizer->encode(text, true, false);
  const ModelFile& f = t->model->file();
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  const TensorInfo* norm = f.find_tensor("blk.0.attn_norm.weight");
  ASSERT_TRUE(emb && norm && emb->dtype == DType::kF32 && norm->dtype == DType::kF32);
  std::vector<double> ref(static_cast<size_t>(c.dim), 0.0);
  for (int j = 0; j < 16; ++j) {
    int32_t tok = toks[static_cast<size_t>(j)];
    if (j == 0 && t->tokenizer->bos_id() >= 0) tok = t->tokenizer->bos_id();
    const auto* e = reinterpret_cast<const float*>(emb->data) + static_cast<int64_t>(tok) * c.dim;
    const auto* g = reinterpret_cast<const float*>(norm->data);
    double ms = 0;
    for (int64_t i = 0; i < c.dim; ++i) ms += static_cast<double>(e[i]) * e[i];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(c.dim) + c.rms_eps);
    for (int64_t i = 0; i < c.dim; ++i) {
      const double v = e[i] * inv * g[i];
      ref[static_cast<size_t>(i)] += v * v;
    }
  }
  const auto& got = s->tensors.at("blk.0.attn_k.weight").sum_sq;
  for (int64_t i = 0; i < c.dim; ++i) {
    EXPECT_NEAR(got[static_cast<size_t>(i)], ref[static_cast<size_t>(i)],
                1e-4 * (1.0 + ref[static_cast<size_t>(i)]))
        << i;
  }
}

TEST(ActivationStats, Errors) {
  auto t = tiny_model();
  ActivationStatsOptions o;
  o.ctx = 4;
  EXPECT_EQ(collect_activation_stats(*t->model, *t->tokenizer, "some text", o).status().code(),
            ErrorCode::kInvalidArgument);
  o.ctx = 512;
  auto r = collect_activation_stats(*t->model, *t->tokenizer, "too short", o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("fewer than one chunk"), std::string::npos);
}

ActivationStats small_stats() {
  ActivationStats s;
  s.n_chunks = 4;
  s.chunk_size = 512;
  s.dataset = "brown-calib.txt";
  s.tensors["blk.0.attn_q.weight"] = {{1.0, 2.5, 0.0, 7.25}, 2048, {}};
  s.tensors["output.weight"] = {{3.0, 4.0}, 2048, {}};
  return s;
}

// --covariance: each matrix's whole x x^T, symmetric, its diagonal the sums of squares; it
// round-trips as <name>.in_cov [n, n].
TEST(ActivationStats, CovarianceHoldsTheSumsOfSquaresOnItsDiagonal) {
  auto t = tiny_model();
  ActivationStatsOptions o;
  o.ctx = 16;
  o.max_chunks = 2;
  o.covariance = true;
  auto s = collect_activation_stats(*t->model, *t->tokenizer, calibration_text(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (const auto& [name, st] : s->tensors) {
    const auto n = static_cast<int64_t>(st.sum_sq.size());
    ASSERT_EQ(static_cast<int64_t>(st.sum_xxt.size()), n * n) << name;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(st.sum_xxt[i * n + i], st.sum_sq[i], 1e-9 * (1.0 + st.sum_sq[i])) << name;
      for (int64_t j = 0; j < i; ++j) EXPECT_EQ(st.sum_xxt[i * n + j], st.sum_xxt[j * n + i]);
    }
  }
  testing::TempDir dir;
  ASSERT_TRUE(write_imatrix(*s, dir.file("c.gguf")).is_ok());
  auto r = read_imatrix(dir.file("c.gguf"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const auto& a = s->tensors.at("blk.0.ffn_down.weight");
  const auto& b = r->tensors.at("blk.0.ffn_down.weight");
  ASSERT_EQ(b.sum_xxt.size(), a.sum_xxt.size());
  for (size_t i = 0; i < a.sum_xxt.size(); ++i) {
    EXPECT_FLOAT_EQ(static_cast<float>(b.sum_xxt[i]), static_cast<float>(a.sum_xxt[i]));
  }
  // Without the flag, none.
  o.covariance = false;
  auto plain = collect_activation_stats(*t->model, *t->tokenizer, calibration_text(), o);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(plain->tensors.begin()->second.sum_xxt.empty());
}

TEST(ImatrixFile, GgufRoundTrip) {
  testing::TempDir dir;
  const ActivationStats s = small_stats();
  ASSERT_TRUE(write_imatrix(s, dir.file("i.gguf")).is_ok());
  auto r = read_imatrix(dir.file("i.gguf"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->n_chunks, 4);
  EXPECT_EQ(r->chunk_size, 512);
  EXPECT_EQ(r->dataset, "brown-calib.txt");
  ASSERT_EQ(r->tensors.size(), 2u);
  EXPECT_EQ(r->tensors.at("blk.0.attn_q.weight").sum_sq, s.tensors.at("blk.0.attn_q.weight").sum_sq);
  EXPECT_EQ(r->tensors.at("blk.0.attn_q.weight").count, 2048);
  // The layout llama.cpp reads: general.type, <name>.in_sum2 [n, 1], <name>.counts [1, 1].
  auto f = open_model_file(dir.file("i.gguf"));
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->metadata.get_string("general.type").value(), "imatrix");
  EXPECT_EQ(f->metadata.get_int("imatrix.chunk_count").value(), 4);
  const TensorInfo* t = f->find_tensor("blk.0.attn_q.weight.in_sum2");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne[0], 4);
  EXPECT_EQ(t->ne[1], 1);
  ASSERT_NE(f->find_tensor("blk.0.attn_q.weight.counts"), nullptr);
}

// Legacy bytes built here from the format's description (imatrix_file.h).
struct Legacy {
  std::vector<std::byte> b;
  void i32(int32_t v) { raw(&v, 4); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) { i32(static_cast<int32_t>(s.size())); raw(s.data(), s.size()); }
  void raw(const void* p, size_t n) {
    const auto* c = static_cast<const std::byte*>(p);
    b.insert(b.end(), c, c + n);
  }
};

Legacy legacy_file(float value = 0.5f, int32_t ncall = 10) {
  Legacy l;
  l.i32(1);
  l.str("blk.0.ffn_down.weight");
  l.i32(ncall);
  l.i32(3);
  l.f32(value);
  l.f32(1.5f);
  l.f32(0.0f);
  l.i32(10);
  l.str("calib.txt");
  return l;
}

TEST(ImatrixFile, ReadsLegacyDat) {
  const Legacy l = legacy_file();
  auto r = parse_imatrix(l.b);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->n_chunks, 10);
  EXPECT_EQ(r->dataset, "calib.txt");
  const auto& t = r->tensors.at("blk.0.ffn_down.weight");
  EXPECT_EQ(t.count, 10);
  EXPECT_EQ(t.sum_sq, (std::vector<double>{0.5, 1.5, 0.0}));
}

void expect_corrupt(std::span<const std::byte> bytes, const std::string& needle,
                    ErrorCode code = ErrorCode::kCorruptData) {
  auto r = parse_imatrix(bytes);
  ASSERT_FALSE(r.is_ok()) << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
}

TEST(ImatrixFile, HostileLegacyFiles) {
  const Legacy good = legacy_file();
  // Truncated at every length short of the whole entries: an error, never a crash.
  for (size_t n = 0; n < 4 + 4 + 21 + 8 + 12; ++n) {
    auto r = parse_imatrix(std::span<const std::byte>(good.b.data(), n));
    EXPECT_FALSE(r.is_ok()) << n;
  }
  expect_corrupt(legacy_file(NAN).b, "finite");
  expect_corrupt(legacy_file(-1.0f).b, "finite value >= 0");
  expect_corrupt(legacy_file(0.5f, 0).b, "count 0");
  Legacy huge;
  huge.i32(1 << 30);
  huge.i32(0);
  expect_corrupt(huge.b, "entry count");
  Legacy values;
  values.i32(1);
  values.str("a.weight");
  values.i32(1);
  values.i32(1 << 28);  // more values than bytes
  values.f32(1.0f);
  expect_corrupt(values.b, "claims 268435456 values");
}

TEST(ImatrixFile, HostileGgufFiles) {
  const auto write = [](auto&& fill) {
    GgufWriter w;
    w.metadata().set("general.type", GgufValue::string("imatrix"));
    fill(w);
    return w.serialize();
  };
  const auto f32 = [](std::vector<float> v) {
    auto b = std::as_bytes(std::span<const float>(v));
    return std::vector<std::byte>(b.begin(), b.end());
  };
  const auto add = [&](GgufWriter& w, const std::string& name, std::vector<int64_t> shape,
                       std::vector<float> v) {
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, std::move(shape), f32(std::move(v))).is_ok());
  };
  expect_corrupt(write([&](GgufWriter& w) { add(w, "a.weight.in_sum2", {2, 1}, {1, 2}); }),
                 "but no .counts");
  expect_corrupt(write([&](GgufWriter& w) { add(w, "a.weight.counts", {1, 1}, {3}); }),
                 "but no .in_sum2");
  expect_corrupt(write([&](GgufWriter& w) {
                   add(w, "a.weight.in_sum2", {2, 1}, {1, 2});
                   add(w, "a.weight.counts", {2, 1}, {3, 3});
                 }),
                 "expected [n, k] and [1, k]");
  expect_corrupt(write([&](GgufWriter& w) {
                   add(w, "a.weight.in_sum2", {2, 1}, {1, NAN});
                   add(w, "a.weight.counts", {1, 1}, {3});
                 }),
                 "column 1");
  expect_corrupt(write([&](GgufWriter& w) {
                   add(w, "a.weight.in_sum2", {2, 1}, {1, 2});
                   add(w, "a.weight.counts", {1, 1}, {0});
                 }),
                 "count 0");
  expect_corrupt(write([&](GgufWriter& w) {
                   add(w, "a.weight.in_sum2", {2, 2}, {1, 2, 3, 4});
                   add(w, "a.weight.counts", {1, 2}, {3, 3});
                 }),
                 "mixture-of-experts", ErrorCode::kUnsupported);
  expect_corrupt(write([&](GgufWriter& w) { add(w, "blk.0.attn_q.weight", {2, 1}, {1, 2}); }),
                 "neither");
  // The covariance tensor (Tessera's addition): square, finite, with its in_sum2.
  expect_corrupt(write([&](GgufWriter& w) { add(w, "a.weight.in_cov", {1, 1}, {1}); }),
                 "but no .in_sum2");
  const auto with_cov = [&](std::vector<int64_t> shape, std::vector<float> v) {
    return write([&](GgufWriter& w) {
      add(w, "a.weight.in_sum2", {2, 1}, {1, 2});
      add(w, "a.weight.counts", {1, 1}, {3});
      add(w, "a.weight.in_cov", std::move(shape), std::move(v));
    });
  };
  expect_corrupt(with_cov({3, 3}, std::vector<float>(9, 1.0f)), "expected f32 [2, 2]");
  expect_corrupt(with_cov({4, 1}, {1, 0, 0, 2}), "expected f32 [2, 2]");
  expect_corrupt(with_cov({2, 2}, {1, 0, INFINITY, 2}), "not finite");
  auto ok = parse_imatrix(with_cov({2, 2}, {1, 0.5f, 0.5f, 2}));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->tensors.at("a.weight").sum_xxt, (std::vector<double>{1, 0.5, 0.5, 2}));
  expect_corrupt(write([](GgufWriter&) {}), "no tensors");
  // A model file is not an importance matrix.
  auto model = write([&](GgufWriter& w) {
    w.metadata().set("general.type", GgufValue::string("model"));
    add(w, "a.weight.in_sum2", {2, 1}, {1, 2});
  });
  expect_corrupt(model, "expected 'imatrix'");
  // Truncated GGUF: the reader's own checks. (The writer pads the file to 32 bytes after the last
  // tensor, 4 bytes of counts: cutting 30 bytes cuts into them.)
  testing::TempDir dir;
  ASSERT_TRUE(write_imatrix(small_stats(), dir.file("i.gguf")).is_ok());
  const auto bytes = file_bytes(dir.file("i.gguf"));
  for (size_t n : {size_t{3}, size_t{20}, bytes.size() / 2, bytes.size() - 30}) {
    EXPECT_FALSE(parse_imatrix(std::span<const std::byte>(bytes.data(), n)).is_ok()) << n;
  }
  EXPECT_EQ(read_imatrix(dir.file("missing.gguf")).status().code(), ErrorCode::kNotFound);
}

// Random byte flips and truncations of valid files (both formats), 4000 of each: parse_imatrix
// either refuses them or returns statistics that satisfy the contract, never crashes.
TEST(ImatrixFile, MutatedFilesNeverCrash) {
  testing::TempDir dir;
  ASSERT_TRUE(write_imatrix(small_stats(), dir.file("i.gguf")).is_ok());
  ActivationStats with_cov = small_stats();
  with_cov.tensors.at("output.weight").sum_xxt = {3.0, 1.0, 1.0, 4.0};
  ASSERT_TRUE(write_imatrix(with_cov, dir.file("c.gguf")).is_ok());
  const std::vector<std::vector<std::byte>> seeds = {
      file_bytes(dir.file("i.gguf")), file_bytes(dir.file("c.gguf")), legacy_file().b};
  std::mt19937 rng(42);
  int accepted = 0;
  for (const auto& seed : seeds) {
    for (int iter = 0; iter < 4000; ++iter) {
      std::vector<std::byte> b = seed;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<std::byte>(rng() & 255);
      if (rng() % 4 == 0) b.resize(rng() % b.size());
      auto r = parse_imatrix(b);
      if (!r.is_ok()) continue;
      ++accepted;
      for (const auto& [name, t] : r->tensors) {
        ASSERT_GE(t.count, 1) << name;
        ASSERT_FALSE(t.sum_sq.empty()) << name;
        for (double v : t.sum_sq) ASSERT_TRUE(std::isfinite(v) && v >= 0) << name;
        if (!t.sum_xxt.empty()) {
          ASSERT_EQ(t.sum_xxt.size(), t.sum_sq.size() * t.sum_sq.size()) << name;
          for (double v : t.sum_xxt) ASSERT_TRUE(std::isfinite(v)) << name;
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);  // some flips land in harmless bytes (names, values)
}

// quantize --imatrix: weighted where the file has statistics, listed where not, an error on a
// column mismatch, and without a matrix the bytes of a plain quantization.
TEST(ImatrixQuantize, WeightsListsAndRefuses) {
  auto t = tiny_model();
  ActivationStatsOptions o;
  o.ctx = 32;
  o.max_chunks = 2;
  auto s = collect_activation_stats(*t->model, *t->tokenizer, calibration_text(), o);
  ASSERT_TRUE(s.is_ok());
  s->tensors.erase("blk.0.attn_q.weight");
  auto in = open_model_file(t->path);
  ASSERT_TRUE(in.is_ok());
  const QuantType q4 = find_quant_type("q4_k_m").value();
  auto plain = quantize_model(*in, q4, t->dir.file("plain.gguf"));
  auto plain2 = quantize_model(*in, q4, t->dir.file("plain2.gguf"));
  ASSERT_TRUE(plain.is_ok() && plain2.is_ok());
  EXPECT_EQ(file_bytes(t->dir.file("plain.gguf")), file_bytes(t->dir.file("plain2.gguf")));
  QuantizeOptions qo;
  qo.imatrix = &*s;
  auto weighted = quantize_model(*in, q4, t->dir.file("w.gguf"), qo);
  ASSERT_TRUE(weighted.is_ok()) << weighted.status().to_string();
  EXPECT_GT(weighted->n_weighted, 0);
  // token_embd (not a matmul input unless tied) and the erased attn_q are listed.
  EXPECT_NE(std::find(weighted->without_imatrix.begin(), weighted->without_imatrix.end(),
                      "blk.0.attn_q.weight"),
            weighted->without_imatrix.end());
  EXPECT_NE(file_bytes(t->dir.file("plain.gguf")), file_bytes(t->dir.file("w.gguf")));
  EXPECT_TRUE(load_model(t->dir.file("w.gguf")).is_ok());
  // With the whole second moments: error feedback on every matrix that has them.
  ActivationStatsOptions oc = o;
  oc.covariance = true;
  auto sc = collect_activation_stats(*t->model, *t->tokenizer, calibration_text(), oc);
  ASSERT_TRUE(sc.is_ok());
  QuantizeOptions qc;
  qc.imatrix = &*sc;
  auto fb = quantize_model(*in, q4, t->dir.file("fb.gguf"), qc);
  ASSERT_TRUE(fb.is_ok()) << fb.status().to_string();
  EXPECT_GT(fb->n_error_feedback, 0);
  EXPECT_EQ(fb->n_error_feedback, fb->n_weighted);
  EXPECT_EQ(weighted->n_error_feedback, 0);
  EXPECT_NE(file_bytes(t->dir.file("fb.gguf")), file_bytes(t->dir.file("w.gguf")));
  EXPECT_TRUE(load_model(t->dir.file("fb.gguf")).is_ok());
  s->tensors.at("blk.1.ffn_up.weight").sum_sq.pop_back();
  auto bad = quantize_model(*in, q4, t->dir.file("bad.gguf"), qo);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("blk.1.ffn_up.weight"), std::string::npos);
}

}  // namespace imatrix_test
}  // namespace tessera::model
