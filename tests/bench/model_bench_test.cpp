#include "tessera/bench/model_bench.h"

#include <gtest/gtest.h>

#include <vector>

#include "tessera/base/ab_switch.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::bench {
namespace model_bench_test {

// The "tiny" synthetic shape in F32 (dim 128, 2 layers, 4 heads, 2 kv, ffn 384, vocab 1024).
Result<std::unique_ptr<model::Model>> load_tiny(const testing::TempDir& dir) {
  model::SynthOptions o;
  o.shape = *model::find_synth_shape("tiny");
  o.dtype = kernels::DType::kF32;
  TS_RETURN_IF_ERROR(model::write_synthetic_model(o, dir.file("t.gguf")));
  return model::load_model(dir.file("t.gguf"));
}

// Delegates to a real model and records the A/B switch at every forward step.
class SwitchRecorder final : public model::Model {
 public:
  explicit SwitchRecorder(model::Model& inner) : inner_(inner) {}
  const model::ModelConfig& config() const override { return inner_.config(); }
  const model::ModelFile& file() const override { return inner_.file(); }
  Status forward(const model::Batch& b, model::KvCache& kv, std::span<float> logits,
                 ThreadPool* pool) override {
    seen.push_back(ab_variant());
    return inner_.forward(b, kv, logits, pool);
  }
  std::vector<int> seen;

 private:
  model::Model& inner_;
};

TEST(ModelBench, AbAlternatesTheSwitchInPairsOfStepsAndPromptsPerRepetition) {
  testing::TempDir dir;
  auto m = load_tiny(dir);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  SwitchRecorder rec(**m);
  ThreadPool pool(1);
  ModelBenchOptions bo;
  bo.prompt_tokens = 4;
  bo.gen_tokens = 0;
  bo.reps = 2;
  bo.ab = true;
  ASSERT_TRUE(run_model_bench(rec, pool, bo).is_ok());
  // Warm-up (repetition 0's order), then repetition 0: variant 0 first, repetition 1: 1 first.
  EXPECT_EQ(rec.seen, (std::vector<int>{0, 1, 0, 1, 1, 0}));
  rec.seen.clear();
  bo.prompt_tokens = 0;
  bo.gen_tokens = 6;
  bo.reps = 1;
  ASSERT_TRUE(run_model_bench(rec, pool, bo).is_ok());
  EXPECT_EQ(rec.seen, (std::vector<int>{0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}));  // warm-up, rep
  EXPECT_EQ(ab_variant(), 0);
}

TEST(ModelBench, WorkModelCountsWhatAStepReads) {
  testing::TempDir dir;
  auto m = load_tiny(dir);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const WorkModel w = work_model(**m);
  // Per layer: q 128x128, k and v 64x128, o 128x128, gate/up/down 384x128; plus output 1024x128.
  const double params = 2 * (128.0 * 128 * 2 + 64.0 * 128 * 2 + 384.0 * 128 * 3) + 1024.0 * 128;
  EXPECT_DOUBLE_EQ(w.weight_bytes, params * 4);
  EXPECT_DOUBLE_EQ(w.matmul_flops_per_token, 2 * params);
  EXPECT_DOUBLE_EQ(w.kv_bytes_per_position, 2.0 * 2 * 64 * 2);  // K and V, 2 layers, f16

  ThreadPool pool(1);
  ModelBenchOptions bo;
  bo.prompt_tokens = 16;
  bo.gen_tokens = 8;
  bo.reps = 2;
  auto r = run_model_bench(**m, pool, bo);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "pp16");
  EXPECT_EQ((*r)[1].name, "tg8");
  EXPECT_EQ((*r)[1].tokens_per_second.n, 2u);
  EXPECT_GT((*r)[1].tokens_per_second.mean, 0);
  EXPECT_DOUBLE_EQ((*r)[1].bytes_per_run, 8 * w.weight_bytes + 36 * w.kv_bytes_per_position);
  EXPECT_EQ((*r)[1].adjacent_mbu().n, 0u);  // no probe, no adjacent figure

  // With a probe: one pass around each repetition, and a per-repetition MBU against them.
  auto probe = ReadProbe::create(1 << 20, pool);
  ASSERT_TRUE(probe.is_ok()) << probe.status().to_string();
  EXPECT_EQ(probe->bytes(), 1 << 20);
  bo.probe = &*probe;
  r = run_model_bench(**m, pool, bo);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (const TestResult& t : *r) {
    ASSERT_EQ(t.adjacent_probe.size(), 2u) << t.name;
    EXPECT_GT(t.adjacent_probe[0], 0) << t.name;
    const Summary mbu = t.adjacent_mbu();
    EXPECT_EQ(mbu.n, 2u) << t.name;
    std::vector<double> want;
    for (size_t i = 0; i < 2; ++i) want.push_back(t.bytes_per_run / t.seconds[i] / 1e9 / t.adjacent_probe[i]);
    EXPECT_DOUBLE_EQ(mbu.median, summarize(want).median) << t.name;
  }
  bo.probe = nullptr;

  // A/B without code reading the switch: a ratio per repetition for both tests (a null run),
  // tokens/s per prompt as without it, and the switch left at 0.
  bo.ab = true;
  bo.reps = 3;
  r = run_model_bench(**m, pool, bo);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (const TestResult& t : *r) {
    ASSERT_EQ(t.ab_time_ratios.size(), 3u) << t.name;
    for (double x : t.ab_time_ratios) EXPECT_GT(x, 0) << t.name;
    EXPECT_EQ(t.seconds.size(), 3u) << t.name;
  }
  EXPECT_EQ(ab_variant(), 0);
  bo.ab = false;
  r = run_model_bench(**m, pool, bo);
  ASSERT_TRUE(r.is_ok());
  for (const TestResult& t : *r) EXPECT_TRUE(t.ab_time_ratios.empty()) << t.name;

  bo.gen_tokens = 100000;
  EXPECT_EQ(run_model_bench(**m, pool, bo).status().code(), ErrorCode::kOutOfRange);
}

}  // namespace model_bench_test
}  // namespace tessera::bench
