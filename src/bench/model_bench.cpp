#include "tessera/bench/model_bench.h"

#include <fmt/format.h>

#include <algorithm>

#include "tessera/base/ab_switch.h"
#include "tessera/base/clock.h"
#include "tessera/base/rng.h"

namespace tessera::bench {

WorkModel work_model(const model::Model& m, kernels::DType kv_dtype) {
  const auto& c = m.config();
  WorkModel w;
  double params = 0;
  for (const auto& t : m.file().tensors) {
    if (t.n_dims != 2) continue;
    if (t.name == "token_embd.weight" && !c.tied_output) continue;  // lookup reads one row
    w.weight_bytes += static_cast<double>(t.n_bytes);
    params += static_cast<double>(t.n_elements());
  }
  w.matmul_flops_per_token = 2.0 * params;
  w.kv_bytes_per_position =
      2.0 * static_cast<double>(c.n_layers) * static_cast<double>(kernels::dtype_row_bytes(kv_dtype, c.kv_dim()));
  w.attn_flops_per_position = 4.0 * static_cast<double>(c.n_layers * c.n_heads * c.head_dim);
  return w;
}

namespace {

std::vector<int32_t> random_tokens(int64_t n_vocab, int32_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n_vocab));
  return t;
}

// Times of one repetition: the whole of it, and with A/B each variant's share (ab_switch.h).
struct RepTimes {
  double seconds = 0.0;
  double variant_seconds[2] = {0.0, 0.0};
};

// One repetition of pp: all prompt tokens in one batch, logits for the last. With `ab`, the
// prompt runs once per variant, `first` first.
Result<RepTimes> run_pp(model::Model& m, ThreadPool& pool, const std::vector<int32_t>& tokens,
                        bool ab, int first) {
  TS_ASSIGN_OR_RETURN(model::KvCache kv, model::KvCache::create(m.config(), 1, tokens.size()));
  model::Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) {
    b.add(tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size());
  }
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  RepTimes r;
  for (int k = 0; k < (ab ? 2 : 1); ++k) {
    const int variant = ab ? (first + k) % 2 : 0;
    set_ab_variant(variant);
    const int64_t t0 = real_clock()->now_ns();
    const Status s = m.forward(b, kv, logits, &pool);
    const double dt = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
    set_ab_variant(0);
    TS_RETURN_IF_ERROR(s);
    r.seconds += dt / (ab ? 2 : 1);  // a repetition's time is one prompt's (the mean of two)
    r.variant_seconds[variant] += dt;
  }
  return r;
}

// One repetition of tg: one token per step at positions 0..n-1. With `ab`, steps 0-1 run
// variant 0, 2-3 variant 1, and so on.
Result<RepTimes> run_tg(model::Model& m, ThreadPool& pool, const std::vector<int32_t>& tokens,
                        bool ab) {
  TS_ASSIGN_OR_RETURN(model::KvCache kv, model::KvCache::create(m.config(), 1, tokens.size()));
  model::Batch b;
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  RepTimes r;
  const int64_t start = real_clock()->now_ns();
  for (size_t i = 0; i < tokens.size(); ++i) {
    b.clear();
    b.add(tokens[i], static_cast<int32_t>(i), 0, true);
    if (!ab) {
      TS_RETURN_IF_ERROR(m.forward(b, kv, logits, &pool));
      continue;
    }
    const int variant = static_cast<int>((i / 2) % 2);
    set_ab_variant(variant);
    const int64_t t0 = real_clock()->now_ns();
    const Status s = m.forward(b, kv, logits, &pool);
    r.variant_seconds[variant] += static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
    set_ab_variant(0);
    TS_RETURN_IF_ERROR(s);
  }
  r.seconds = static_cast<double>(real_clock()->now_ns() - start) * 1e-9;
  return r;
}

template <typename Fn>
Result<TestResult> repeat(const std::string& name, int32_t n, int reps, ThreadPool& pool,
                          const ReadProbe* probe, Fn&& once) {
  TestResult r;
  r.name = name;
  r.n_tokens = n;
  TS_RETURN_IF_ERROR(once(0).status());  // warm-up: page in weights, size buffers
  std::vector<double> tps;
  // Two passes each time, the better kept: on this project's VM a pass over memory left idle for
  // a few seconds sometimes read at half speed, and a ceiling is what the machine allows.
  auto probe_now = [&] { return std::max(probe->pass(pool), probe->pass(pool)); };
  double before = probe != nullptr ? probe_now() : 0.0;
  for (int i = 0; i < reps; ++i) {
    TS_ASSIGN_OR_RETURN(const RepTimes t, once(i));
    const double s = t.seconds;
    r.seconds.push_back(s);
    tps.push_back(n / s);
    if (t.variant_seconds[0] > 0 && t.variant_seconds[1] > 0) {
      r.ab_time_ratios.push_back(t.variant_seconds[1] / t.variant_seconds[0]);
    }
    if (probe != nullptr) {
      const double after = probe_now();
      r.adjacent_probe.push_back((before + after) / 2);
      before = after;
    }
  }
  r.tokens_per_second = summarize(tps);
  r.mean_seconds = summarize(r.seconds).mean;
  return r;
}

}  // namespace

Summary TestResult::adjacent_mbu() const {
  std::vector<double> v;
  for (size_t i = 0; i < adjacent_probe.size() && i < seconds.size(); ++i) {
    if (seconds[i] > 0 && adjacent_probe[i] > 0) {
      v.push_back(bytes_per_run / seconds[i] / 1e9 / adjacent_probe[i]);
    }
  }
  return summarize(std::move(v));
}

Result<std::vector<TestResult>> run_model_bench(model::Model& m, ThreadPool& pool,
                                                const ModelBenchOptions& o) {
  const auto& c = m.config();
  const int32_t longest = std::max(o.prompt_tokens, o.gen_tokens);
  if (longest > c.context_length) {
    return out_of_range(fmt::format("{} tokens exceed the model's context of {}", longest,
                                    c.context_length));
  }
  const WorkModel w = work_model(m);
  const int reps = std::max(1, o.reps);
  std::vector<TestResult> out;
  if (o.prompt_tokens > 0) {
    const int32_t n = o.prompt_tokens;
    auto tokens = random_tokens(c.n_vocab, n, o.seed);
    TS_ASSIGN_OR_RETURN(TestResult r, repeat(fmt::format("pp{}", n), n, reps, pool, o.probe,
                                             [&](int i) { return run_pp(m, pool, tokens, o.ab, i % 2); }));
    // One pass over the weights for the whole batch; attention over i+1 positions for row i.
    const double positions = static_cast<double>(n) * (n + 1) / 2.0;
    r.bytes_per_run = w.weight_bytes + positions * w.kv_bytes_per_position;
    r.flops_per_run = n * w.matmul_flops_per_token + positions * w.attn_flops_per_position;
    out.push_back(r);
  }
  if (o.gen_tokens > 0) {
    const int32_t n = o.gen_tokens;
    auto tokens = random_tokens(c.n_vocab, n, o.seed + 1);
    TS_ASSIGN_OR_RETURN(TestResult r, repeat(fmt::format("tg{}", n), n, reps, pool, o.probe,
                                             [&](int) { return run_tg(m, pool, tokens, o.ab); }));
    // Every step reads all weights and the K/V of every cached position.
    const double positions = static_cast<double>(n) * (n + 1) / 2.0;
    r.bytes_per_run = n * w.weight_bytes + positions * w.kv_bytes_per_position;
    r.flops_per_run = n * w.matmul_flops_per_token + positions * w.attn_flops_per_position;
    out.push_back(r);
  }
  return out;
}

}  // namespace tessera::bench
