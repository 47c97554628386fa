// Every training op: the float64 backward against central finite differences of its own forward
// (loss = sum(r * y) with random r, so dy = r), and the float32 kernel-table versions (one thread
// and a pool) against the float64 ones, forward and backward.
#include "tessera/train/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace tessera::train {
namespace ops_test {

using Vec = std::vector<double>;

Vec randn(size_t n, uint32_t seed, double sd = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, sd);
  Vec v(n);
  for (double& x : v) x = nd(rng);
  return v;
}

std::vector<float> to_f32(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }

double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks grad (the analytic d loss / d x) against central differences of loss(x) over every
// element of x (or a stride of them for large inputs).
void expect_matches_finite_differences(Vec& x, const Vec& grad, const std::function<double()>& loss,
                                       const char* what, double tol = 1e-6) {
  ASSERT_EQ(x.size(), grad.size()) << what;
  const size_t step = std::max<size_t>(1, x.size() / 97);
  for (size_t i = 0; i < x.size(); i += step) {
    const double keep = x[i], h = 1e-5 * std::max(1.0, std::abs(keep));
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    const double fd = (up - down) / (2 * h);
    EXPECT_NEAR(grad[i], fd, tol * std::max(1.0, std::abs(fd))) << what << " element " << i;
  }
}

void expect_close(const std::vector<float>& got, const Vec& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, scale)) << what << " element " << i;
  }
}

TEST(TrainOps, MatmulGradients) {
  const int64_t n = 5, k = 7, m = 6;
  Vec x = randn(n * k, 1), w = randn(m * k, 2), r = randn(n * m, 3);
  auto loss = [&] {
    Vec y(n * m);
    matmul_forward(x.data(), w.data(), y.data(), n, k, m);
    return dot(y, r);
  };
  Vec dx(n * k, 0.0), dw(m * k, 0.0);
  matmul_backward(r.data(), x.data(), w.data(), dx.data(), dw.data(), n, k, m);
  expect_matches_finite_differences(x, dx, loss, "dx");
  expect_matches_finite_differences(w, dw, loss, "dw");
  // Plain definition of the forward.
  Vec y(n * m);
  matmul_forward(x.data(), w.data(), y.data(), n, k, m);
  EXPECT_NEAR(y[2 * m + 3], [&] {
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += x[2 * k + i] * w[3 * k + i];
    return s;
  }(), 1e-12);

  // f32 on the kernel table, with and without a pool, odd sizes past the SIMD widths.
  const int64_t N = 9, K = 37, M = 21;
  Vec X = randn(N * K, 4), W = randn(M * K, 5), R = randn(N * M, 6);
  Vec Y(N * M), DX(N * K, 0.0), DW(M * K, 0.0);
  matmul_forward(X.data(), W.data(), Y.data(), N, K, M);
  matmul_backward(R.data(), X.data(), W.data(), DX.data(), DW.data(), N, K, M);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto xf = to_f32(X), wf = to_f32(W), rf = to_f32(R);
    std::vector<float> yf(N * M), dxf(N * K, 0.0f), dwf(M * K, 0.0f);
    matmul_forward(xf.data(), wf.data(), yf.data(), N, K, M, p);
    matmul_backward(rf.data(), xf.data(), wf.data(), dxf.data(), dwf.data(), N, K, M, p);
    expect_close(yf, Y, 1e-5, "f32 y");
    expect_close(dxf, DX, 1e-5, "f32 dx");
    expect_close(dwf, DW, 1e-5, "f32 dw");
  }
}

TEST(TrainOps, RmsNormGradients) {
  const int64_t n = 4, c = 11;
  Vec x = randn(n * c, 7), w = randn(c, 8), r = randn(n * c, 9);
  auto loss = [&] {
    Vec y(n * c), rstd(n);
    rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), n, c, 1e-5);
    return dot(y, r);
  };
  Vec y(n * c), rstd(n), dx(n * c, 0.0), dw(c, 0.0);
  rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), n, c, 1e-5);
  rmsnorm_backward(r.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), n, c);
  expect_matches_finite_differences(x, dx, loss, "dx");
  expect_matches_finite_differences(w, dw, loss, "dw");
  auto xf = to_f32(x), wf = to_f32(w), rf = to_f32(r);
  std::vector<float> yf(n * c), rf_std(n), dxf(n * c, 0.0f), dwf(c, 0.0f);
  rmsnorm_forward(xf.data(), wf.data(), yf.data(), rf_std.data(), n, c, 1e-5f);
  rmsnorm_backward(rf.data(), xf.data(), wf.data(), rf_std.data(), dxf.data(), dwf.data(), n, c);
  expect_close(yf, y, 1e-5, "f32 y");
  expect_close(dxf, dx, 1e-5, "f32 dx");
  expect_close(dwf, dw, 1e-5, "f32 dw");
}

TEST(TrainOps, RopeBackwardIsTheInverseRotation) {
  const int64_t n = 3, heads = 2, d = 8;
  const std::vector<int32_t> pos = {0, 5, 17};
  Vec x = randn(n * heads * d, 10), r = randn(n * heads * d, 11);
  auto loss = [&] {
    Vec y = x;
    rope(y.data(), pos.data(), n, heads, d, 10000.0, false);
    return dot(y, r);
  };
  Vec g = r;
  rope(g.data(), pos.data(), n, heads, d, 10000.0, true);
  expect_matches_finite_differences(x, g, loss, "dx");
  // Pair (2i, 2i+1) of position 5 turns by 5 * 10000^(-2i/8): check i = 1 plainly.
  Vec y = x;
  rope(y.data(), pos.data(), n, heads, d, 10000.0, false);
  const double th = 5.0 * std::pow(10000.0, -2.0 / 8.0);
  const double a = x[1 * heads * d + 2], b = x[1 * heads * d + 3];
  EXPECT_NEAR(y[1 * heads * d + 2], a * std::cos(th) - b * std::sin(th), 1e-12);
  EXPECT_NEAR(y[1 * heads * d + 3], a * std::sin(th) + b * std::cos(th), 1e-12);
  auto xf = to_f32(x);
  rope(xf.data(), pos.data(), n, heads, d, 10000.0f, false);
  expect_close(xf, y, 1e-6, "f32 rope");
}

TEST(TrainOps, AttentionGradients) {
  AttentionShape s;
  s.batch = 2;
  s.t = 5;
  s.heads = 4;
  s.kv_heads = 2;
  s.d = 3;
  const int64_t n = s.batch * s.t, qd = s.heads * s.d, kd = s.kv_heads * s.d;
  Vec q = randn(n * qd, 12), k = randn(n * kd, 13), v = randn(n * kd, 14), r = randn(n * qd, 15);
  Vec probs(s.batch * s.heads * s.t * s.t);
  auto loss = [&] {
    Vec out(n * qd);
    attention_forward(q.data(), k.data(), v.data(), out.data(), probs.data(), s);
    return dot(out, r);
  };
  Vec out(n * qd);
  attention_forward(q.data(), k.data(), v.data(), out.data(), probs.data(), s);
  Vec dq(n * qd, 0.0), dk(n * kd, 0.0), dv(n * kd, 0.0);
  attention_backward(r.data(), q.data(), k.data(), v.data(), probs.data(), dq.data(), dk.data(),
                     dv.data(), s);
  // Causality: the first position of each sequence attends only to itself.
  for (int64_t i = 0; i < s.d; ++i) EXPECT_NEAR(out[i], v[i], 1e-12);
  expect_matches_finite_differences(q, dq, loss, "dq");
  expect_matches_finite_differences(k, dk, loss, "dk");
  expect_matches_finite_differences(v, dv, loss, "dv");

  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto qf = to_f32(q), kf = to_f32(k), vf = to_f32(v), rf = to_f32(r);
    std::vector<float> of(n * qd), pf(probs.size()), dqf(n * qd, 0.0f), dkf(n * kd, 0.0f),
        dvf(n * kd, 0.0f);
    attention_forward(qf.data(), kf.data(), vf.data(), of.data(), pf.data(), s, p);
    attention_backward(rf.data(), qf.data(), kf.data(), vf.data(), pf.data(), dqf.data(),
                       dkf.data(), dvf.data(), s, p);
    expect_close(of, out, 1e-5, "f32 out");
    expect_close(dqf, dq, 1e-5, "f32 dq");
    expect_close(dkf, dk, 1e-5, "f32 dk");
    expect_close(dvf, dv, 1e-5, "f32 dv");
  }
}

// Past one causal block (the f32 products run over blocks of query and key rows): f32 against
// f64 on sequences of several blocks, and the same bits with and without a pool.
TEST(TrainOps, AttentionFloat32OverSeveralCausalBlocks) {
  AttentionShape s;
  s.batch = 2;
  s.t = 101;
  s.heads = 4;
  s.kv_heads = 2;
  s.d = 16;
  const int64_t n = s.batch * s.t, qd = s.heads * s.d, kd = s.kv_heads * s.d;
  Vec q = randn(n * qd, 31), k = randn(n * kd, 32), v = randn(n * kd, 33), r = randn(n * qd, 34);
  Vec out(n * qd), probs(s.batch * s.heads * s.t * s.t);
  attention_forward(q.data(), k.data(), v.data(), out.data(), probs.data(), s);
  Vec dq(n * qd, 0.0), dk(n * kd, 0.0), dv(n * kd, 0.0);
  attention_backward(r.data(), q.data(), k.data(), v.data(), probs.data(), dq.data(), dk.data(),
                     dv.data(), s);
  ThreadPool pool(2);
  std::vector<float> first;
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto qf = to_f32(q), kf = to_f32(k), vf = to_f32(v), rf = to_f32(r);
    std::vector<float> of(n * qd), pf(probs.size()), dqf(n * qd, 0.0f), dkf(n * kd, 0.0f),
        dvf(n * kd, 0.0f);
    attention_forward(qf.data(), kf.data(), vf.data(), of.data(), pf.data(), s, p);
    attention_backward(rf.data(), qf.data(), kf.data(), vf.data(), pf.data(), dqf.data(),
                       dkf.data(), dvf.data(), s, p);
    expect_close(of, out, 1e-5, "f32 out");
    expect_close(pf, probs, 1e-5, "f32 probs");
    expect_close(dqf, dq, 1e-5, "f32 dq");
    expect_close(dkf, dk, 1e-5, "f32 dk");
    expect_close(dvf, dv, 1e-5, "f32 dv");
    std::vector<float> all = of;
    for (const auto* part : {&dqf, &dkf, &dvf}) all.insert(all.end(), part->begin(), part->end());
    if (first.empty()) {
      first = all;
    } else {
      EXPECT_EQ(0, std::memcmp(all.data(), first.data(), all.size() * sizeof(float)));
    }
  }
}

TEST(TrainOps, SwigluGradients) {
  const int64_t n = 40;
  Vec g = randn(n, 16, 3.0), u = randn(n, 17), r = randn(n, 18);
  auto loss = [&] {
    Vec h(n);
    swiglu_forward(g.data(), u.data(), h.data(), n);
    return dot(h, r);
  };
  Vec dg(n, 0.0), du(n, 0.0);
  swiglu_backward(r.data(), g.data(), u.data(), dg.data(), du.data(), n);
  expect_matches_finite_differences(g, dg, loss, "dg");
  expect_matches_finite_differences(u, du, loss, "du");
  Vec h(n);
  swiglu_forward(g.data(), u.data(), h.data(), n);
  EXPECT_NEAR(h[3], g[3] / (1 + std::exp(-g[3])) * u[3], 1e-12);
}

TEST(TrainOps, CrossEntropyGradientsAndIgnoredTargets) {
  const int64_t n = 6, v = 9;
  Vec z = randn(n * v, 19, 2.0);
  const std::vector<int32_t> targets = {3, 0, -1, 8, 5, 2};
  auto loss = [&] { return cross_entropy(z.data(), targets.data(), n, v, nullptr, 1.0); };
  Vec dz(n * v, 0.0);
  const double l = cross_entropy(z.data(), targets.data(), n, v, dz.data(), 1.0);
  expect_matches_finite_differences(z, dz, loss, "dlogits");
  // Plain: mean over the five counted rows of log-sum-exp minus the target's logit.
  double want = 0.0;
  for (int64_t r = 0; r < n; ++r) {
    if (targets[r] < 0) continue;
    double s = 0.0;
    for (int64_t i = 0; i < v; ++i) s += std::exp(z[r * v + i]);
    want += std::log(s) - z[r * v + targets[r]];
  }
  EXPECT_NEAR(l, want / 5.0, 1e-12);
  for (int64_t i = 0; i < v; ++i) EXPECT_EQ(dz[2 * v + i], 0.0) << "ignored row";
  ThreadPool pool(2);
  auto zf = to_f32(z);
  std::vector<float> dzf(n * v, 0.0f);
  EXPECT_NEAR(cross_entropy(zf.data(), targets.data(), n, v, dzf.data(), 1.0f, &pool), l, 1e-5);
  expect_close(dzf, dz, 1e-6, "f32 dlogits");
  const std::vector<int32_t> none(n, -1);
  EXPECT_EQ(cross_entropy(z.data(), none.data(), n, v, nullptr, 1.0), 0.0);
}

}  // namespace ops_test
}  // namespace tessera::train
