// Cost models against numbers worked out by hand from the datasheet figures and the formulas in
// cost_model.h; accelerator and shape registries and their errors; the measured model against a
// hand-written `bench model --json` record.
#include "tessera/sim/cost_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessera/sim/accelerator.h"

namespace tessera::sim {
namespace {

// llama-3-8b: 8,030,261,248 parameters; 32 layers, d_model 4096, 8 KV heads of 128.
constexpr double kLlama8bParams = 8030261248.0;
constexpr double kLlama8bBf16Bytes = 2.0 * kLlama8bParams;
constexpr double kLlama8bKvPerToken = 2.0 * 32 * 8 * 128 * 2;  // 131,072 bytes
// H100 SXM: 3.35 TB/s at 0.8, 989 TFLOP/s at 0.6, 1 ms step overhead, NVLink 450 GB/s.
constexpr double kH100Bw = 3.35e12 * 0.8;
constexpr double kH100Flops = 989e12 * 0.6;
constexpr double kOverhead = 1e-3;

std::unique_ptr<CostModel> llama8b_on_h100(int tp) {
  auto shape = find_model_shape("llama-3-8b", "bf16");
  EXPECT_TRUE(shape.is_ok()) << shape.status().to_string();
  auto spec = find_accelerator("h100");
  EXPECT_TRUE(spec.is_ok()) << spec.status().to_string();
  RooflineOptions o;
  o.tp = tp;
  auto cost = make_roofline_cost(*shape, *spec, o);
  EXPECT_TRUE(cost.is_ok()) << cost.status().to_string();
  return std::move(cost).value();
}

TEST(ModelShape, BytesFromDtype) {
  auto bf16 = find_model_shape("llama-3-8b");
  ASSERT_TRUE(bf16.is_ok());
  EXPECT_EQ(bf16->weight_bytes(), static_cast<int64_t>(kLlama8bBf16Bytes));
  EXPECT_EQ(bf16->kv_bytes_per_token(), 131072);
  auto q8 = find_model_shape("llama-3-8b", "q8_0");
  ASSERT_TRUE(q8.is_ok());
  EXPECT_DOUBLE_EQ(q8->bytes_per_weight, 34.0 / 32.0);
  auto q4 = find_model_shape("llama-3-8b", "Q4_0");
  ASSERT_TRUE(q4.is_ok());
  EXPECT_DOUBLE_EQ(q4->bytes_per_weight, 18.0 / 32.0);
  auto q4k = find_model_shape("llama-3-8b", "q4_k");
  ASSERT_TRUE(q4k.is_ok());
  EXPECT_DOUBLE_EQ(q4k->bytes_per_weight, 144.0 / 256.0);
  auto f32 = find_model_shape("smollm2-135m", "f32");
  ASSERT_TRUE(f32.is_ok());
  EXPECT_DOUBLE_EQ(f32->bytes_per_weight, 4.0);
  // smollm2-135m: 30 layers x 3 KV heads x 64 x 2 (K, V) x 2 bytes.
  EXPECT_EQ(f32->kv_bytes_per_token(), 2 * 30 * 3 * 64 * 2);
  // llama-2-13b has no GQA: 40 KV heads.
  auto l13 = find_model_shape("llama-2-13b");
  ASSERT_TRUE(l13.is_ok());
  EXPECT_EQ(l13->kv_bytes_per_token(), 2 * 40 * 40 * 128 * 2);
  for (const auto& name : model_shape_names()) {
    EXPECT_TRUE(find_model_shape(name).is_ok()) << name;
  }
}

TEST(ModelShape, ErrorsNameTheChoices) {
  auto bad = find_model_shape("llama-9-1t");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("llama-3-70b"), std::string::npos);
  EXPECT_NE(bad.status().message().find("smollm2-135m"), std::string::npos);
  auto bad_dtype = find_model_shape("llama-3-8b", "fp7");
  ASSERT_FALSE(bad_dtype.is_ok());
  EXPECT_NE(bad_dtype.status().message().find("q8_0"), std::string::npos);
}

TEST(Accelerator, BuiltinsAndErrors) {
  EXPECT_EQ(accelerator_names(), (std::vector<std::string>{"h100", "h200", "tpu-v5e"}));
  auto h200 = find_accelerator("h200");
  ASSERT_TRUE(h200.is_ok());
  EXPECT_DOUBLE_EQ(h200->memory_bytes, 141e9);
  EXPECT_DOUBLE_EQ(h200->memory_bw_Bps, 4.8e12);
  auto v5e = find_accelerator("tpu-v5e");
  ASSERT_TRUE(v5e.is_ok());
  EXPECT_DOUBLE_EQ(v5e->flops, 197e12);
  EXPECT_DOUBLE_EQ(v5e->memory_bw_Bps, 819e9);
  auto bad = find_accelerator("b200");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  for (const char* n : {"h100", "h200", "tpu-v5e"}) {
    EXPECT_NE(bad.status().message().find(n), std::string::npos) << bad.status().message();
  }
}

nlohmann::json full_spec_json() {
  return {{"name", "l40s"},           {"memory_bytes", 48e9},     {"memory_bw_Bps", 864e9},
          {"flops", 362e12},          {"host_link_Bps", 25e9},    {"disk_Bps", 3e9},
          {"interconnect_Bps", 25e9}, {"step_overhead_s", 0.002}, {"bw_efficiency", 0.75},
          {"flops_efficiency", 0.5}};
}

TEST(Accelerator, FromJson) {
  auto ok = accelerator_from_json(full_spec_json());
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->name, "l40s");
  EXPECT_DOUBLE_EQ(ok->memory_bw_Bps, 864e9);
  EXPECT_DOUBLE_EQ(ok->step_overhead_s, 0.002);
  EXPECT_DOUBLE_EQ(ok->cost_per_hour, 0.0);  // optional

  nlohmann::json missing = full_spec_json();
  missing.erase("flops");
  missing.erase("disk_Bps");
  auto m = accelerator_from_json(missing);
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("flops"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("disk_Bps"), std::string::npos) << m.status().message();

  nlohmann::json wrong_type = full_spec_json();
  wrong_type["memory_bytes"] = "48GB";
  auto w = accelerator_from_json(wrong_type);
  ASSERT_FALSE(w.is_ok());
  EXPECT_NE(w.status().message().find("memory_bytes"), std::string::npos);

  nlohmann::json out_of_range = full_spec_json();
  out_of_range["bw_efficiency"] = 1.5;
  auto r = accelerator_from_json(out_of_range);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("bw_efficiency"), std::string::npos);
}

TEST(RooflineCost, DecodeIsBandwidthBound) {
  auto cost = llama8b_on_h100(1);
  EXPECT_EQ(cost->weight_bytes(), static_cast<int64_t>(kLlama8bBf16Bytes));
  EXPECT_EQ(cost->kv_bytes_per_token(), 131072);
  EXPECT_EQ(cost->accelerators(), 1);
  // One row, empty context: weights + one token of KV written, over 2.68 TB/s, ~6.99 ms.
  const double one = cost->step_s(StepWork{0, 1, 0, 0});
  EXPECT_NEAR(one, kOverhead + (kLlama8bBf16Bytes + kLlama8bKvPerToken) / kH100Bw, 1e-12);
  EXPECT_NEAR(one, 6.99e-3, 0.01e-3);
  // 64 rows at 1,000 positions each: still bandwidth-bound; KV read adds 64,000 tokens of KV.
  const double batch = cost->step_s(StepWork{0, 64, 64000, 64000});
  const double bytes = kLlama8bBf16Bytes + (64000 + 64) * kLlama8bKvPerToken;
  const double flops = 2 * kLlama8bParams * 64 + 4.0 * 32 * 4096 * 64000;
  ASSERT_LT(flops / kH100Flops, bytes / kH100Bw);
  EXPECT_NEAR(batch, kOverhead + bytes / kH100Bw, 1e-12);
  EXPECT_EQ(cost->step_s(StepWork{}), 0.0);
}

TEST(RooflineCost, LargePrefillIsComputeBound) {
  auto cost = llama8b_on_h100(1);
  const int64_t n = 4096;
  const int64_t ctx = n * (n + 1) / 2;
  const double s = cost->step_s(StepWork{static_cast<int32_t>(n), 0, ctx, n});
  const double flops = 2 * kLlama8bParams * n + 4.0 * 32 * 4096 * static_cast<double>(ctx);
  const double bytes = kLlama8bBf16Bytes + (n + n) * kLlama8bKvPerToken;
  ASSERT_GT(flops / kH100Flops, bytes / kH100Bw);
  EXPECT_NEAR(s, kOverhead + flops / kH100Flops, 1e-12);
  EXPECT_NEAR(s, 0.1193, 0.0005);  // 70.2 TFLOP at 593 TFLOP/s = 118.3 ms, + 1 ms
}

TEST(RooflineCost, TensorParallelHalvesWeightTimeAndAddsAllReduce) {
  auto tp1 = llama8b_on_h100(1);
  auto tp2 = llama8b_on_h100(2);
  EXPECT_EQ(tp2->accelerators(), 2);
  EXPECT_EQ(tp2->weight_bytes(), tp1->weight_bytes());  // per replica
  const StepWork w{0, 8, 8 * 512, 8 * 512};
  const double mem1 = (kLlama8bBf16Bytes + (8 * 512 + 8) * kLlama8bKvPerToken) / kH100Bw;
  EXPECT_NEAR(tp1->step_s(w), kOverhead + mem1, 1e-12);
  // tp 2: half the memory time, plus 2 all-reduces per layer of 8 x 4096 x 2 bytes over 450
  // GB/s (a ring at tp 2 moves S bytes per all-reduce).
  const double allreduce = 2.0 * 32 * (8 * 4096 * 2.0) / 450e9;
  EXPECT_NEAR(tp2->step_s(w), kOverhead + mem1 / 2 + allreduce, 1e-12);
  EXPECT_GT(allreduce, 0.0);
  // Twice the memory for KV: (160 GB - 16 GB) vs (80 GB - 16 GB), times 0.9.
  EXPECT_EQ(tp1->kv_capacity_tokens(),
            static_cast<int64_t>((80e9 - kLlama8bBf16Bytes) * 0.9 / kLlama8bKvPerToken));
  EXPECT_EQ(tp2->kv_capacity_tokens(),
            static_cast<int64_t>((160e9 - kLlama8bBf16Bytes) * 0.9 / kLlama8bKvPerToken));
  // Memory moves: one disk stream for a load; each accelerator its shard over its host link.
  EXPECT_NEAR(tp1->load_s(), kLlama8bBf16Bytes / 5e9, 1e-9);
  EXPECT_NEAR(tp2->load_s(), kLlama8bBf16Bytes / 5e9, 1e-9);
  EXPECT_NEAR(tp1->resume_s(), kLlama8bBf16Bytes / 55e9, 1e-12);
  EXPECT_NEAR(tp2->resume_s(), kLlama8bBf16Bytes / 110e9, 1e-12);
  EXPECT_NEAR(tp2->suspend_s(), tp2->resume_s(), 1e-12);
  EXPECT_NE(tp2->describe().find("2 x h100"), std::string::npos) << tp2->describe();
}

TEST(RooflineCost, WeightsThatDoNotFitAreAnError) {
  auto shape = find_model_shape("llama-3-70b", "bf16");  // 141 GB of weights
  ASSERT_TRUE(shape.is_ok());
  auto h100 = find_accelerator("h100");
  ASSERT_TRUE(h100.is_ok());
  RooflineOptions o;
  o.tp = 1;
  auto one = make_roofline_cost(*shape, *h100, o);
  ASSERT_FALSE(one.is_ok());
  EXPECT_EQ(one.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(one.status().message().find("tp >= 2"), std::string::npos) << one.status().message();
  o.tp = 2;
  EXPECT_TRUE(make_roofline_cost(*shape, *h100, o).is_ok());
  auto v5e = find_accelerator("tpu-v5e");
  ASSERT_TRUE(v5e.is_ok());
  auto small = find_model_shape("llama-3-8b", "bf16");
  ASSERT_TRUE(small.is_ok());
  o.tp = 1;
  EXPECT_FALSE(make_roofline_cost(*small, *v5e, o).is_ok());  // 16 GB of weights in 16 GB
  o.tp = 0;
  auto zero = make_roofline_cost(*small, *h100, o);
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.status().code(), ErrorCode::kInvalidArgument);
}

// A `bench model --json` record shaped like the real one (cmd_bench.cpp), with round numbers:
// W = 100 MB per step, k = 10,000 KV bytes per position, A = 50,000 attention FLOPs per
// (token, position), 2P = 200 M FLOPs per token; pp128 at 2,000 t/s, tg32 at 200 t/s.
nlohmann::json bench_record(bool with_pp = true) {
  const double w = 100e6, k = 1e4, a = 5e4, m = 200e6;
  const double pp_pos = 128.0 * 129 / 2, tg_pos = 32.0 * 33 / 2;
  nlohmann::json results = nlohmann::json::array();
  if (with_pp) {
    results.push_back({{"test", "pp128"},
                       {"n_tokens", 128},
                       {"reps", 3},
                       {"tokens_per_second_mean", 1990.0},
                       {"tokens_per_second_median", 2000.0},
                       {"bytes_per_run", w + pp_pos * k},
                       {"flops_per_run", 128 * m + pp_pos * a}});
  }
  results.push_back({{"test", "tg32"},
                     {"n_tokens", 32},
                     {"reps", 3},
                     {"tokens_per_second_mean", 210.0},
                     {"tokens_per_second_median", 200.0},
                     {"bytes_per_run", 32 * w + tg_pos * k},
                     {"flops_per_run", 32 * m + tg_pos * a}});
  return {{"environment", {{"threads", 2}}},
          {"machine", {{"read_gbps", 30.0}, {"fma_gflops", 200.0}}},
          {"model",
           {{"name", "synthetic test"}, {"bytes", 101000000}, {"repacked_bytes", 100000000}}},
          {"results", results}};
}

TEST(MeasuredCost, FitsTheRecordByHand) {
  MeasuredCostOptions o;
  o.kv_capacity_tokens = 4096;
  o.resume_s = 0.05;
  auto cost = measured_cost_from_json(bench_record(), o);
  ASSERT_TRUE(cost.is_ok()) << cost.status().to_string();
  // tg: 32 steps in 0.16 s moving 32 x 100 MB + 528 x 10 kB: per position 10 kB at that rate.
  const double tg_s = 32 / 200.0;
  const double tg_bytes = 32 * 100e6 + 528 * 1e4;
  const double per_pos = 1e4 * tg_s / tg_bytes;
  // pp: 128 tokens in 0.064 s doing 128 x 200 MFLOP + 8,256 x 50 kFLOP.
  const double pp_s = 128 / 2000.0;
  const double pp_flops = 128 * 200e6 + 8256 * 5e4;
  const double per_attn = 5e4 * pp_s / pp_flops;
  // Decode reads 10 kB per position at tg's rate (0.50 us) > attends it (0.12 us): KV-bound.
  ASSERT_GT(per_pos, per_attn);
  const double tg_step = 1 / 200.0 - 16.5 * per_pos;
  // pp128 reads 128 positions but attends 8,256: attention-bound.
  ASSERT_GT(8256 * per_attn, 128 * per_pos);
  const double per_row = (pp_s - 8256 * per_attn - tg_step) / 127;
  EXPECT_NEAR((*cost)->step_s(StepWork{0, 1, 0, 0}), tg_step, 1e-12);
  EXPECT_NEAR((*cost)->step_s(StepWork{0, 8, 0, 0}), tg_step + 7 * per_row, 1e-12);
  EXPECT_NEAR((*cost)->step_s(StepWork{0, 4, 4000, 4000}), tg_step + 3 * per_row + 4000 * per_pos,
              1e-12);
  EXPECT_NEAR((*cost)->step_s(StepWork{512, 0, 512 * 513 / 2, 512}),
              tg_step + 511 * per_row + 512 * 513 / 2 * per_attn, 1e-12);
  // The model reproduces both measurements: pp128 from an empty cache, tg32's mean step.
  EXPECT_NEAR((*cost)->step_s(StepWork{128, 0, 8256, 128}), pp_s, 1e-12);
  double tg_total = 0;
  for (int i = 1; i <= 32; ++i) tg_total += (*cost)->step_s(StepWork{0, 1, i, i});
  EXPECT_NEAR(tg_total, tg_s, 1e-12);
  // Sizes: the record's repacked bytes, k solved from the two results, the options as given.
  EXPECT_EQ((*cost)->weight_bytes(), 100000000);
  EXPECT_EQ((*cost)->kv_bytes_per_token(), 10000);
  EXPECT_EQ((*cost)->kv_capacity_tokens(), 4096);
  EXPECT_DOUBLE_EQ((*cost)->resume_s(), 0.05);
  EXPECT_EQ((*cost)->accelerators(), 1);
  EXPECT_NE((*cost)->describe().find("synthetic test"), std::string::npos);
}

TEST(MeasuredCost, RecordedConstantsWinAndTgAloneWorks) {
  nlohmann::json rec = bench_record();
  rec["model"]["kv_bytes_per_position"] = 20000;
  MeasuredCostOptions o;
  o.kv_capacity_tokens = 100;
  o.weight_bytes = 123;
  auto cost = measured_cost_from_json(rec, o);
  ASSERT_TRUE(cost.is_ok()) << cost.status().to_string();
  EXPECT_EQ((*cost)->kv_bytes_per_token(), 20000);
  EXPECT_EQ((*cost)->weight_bytes(), 123);

  // Without pp: every row costs a whole tg step; no attention term.
  auto tg_only = measured_cost_from_json(bench_record(false), o);
  ASSERT_TRUE(tg_only.is_ok()) << tg_only.status().to_string();
  const double step1 = (*tg_only)->step_s(StepWork{0, 1, 0, 0});
  EXPECT_NEAR((*tg_only)->step_s(StepWork{0, 3, 0, 0}), 3 * step1, 1e-12);
}

TEST(MeasuredCost, GivenStepCostsReplaceTheRecords) {
  MeasuredCostOptions o;
  o.kv_capacity_tokens = 4096;
  auto fitted = measured_cost_from_json(bench_record(), o);
  ASSERT_TRUE(fitted.is_ok());
  o.tg_step_s = 0.008;  // e.g. what a live run's engines took
  o.per_row_s = 0.0006;
  auto given = measured_cost_from_json(bench_record(), o);
  ASSERT_TRUE(given.is_ok()) << given.status().to_string();
  EXPECT_NEAR((*given)->step_s(StepWork{0, 1, 0, 0}), 0.008, 1e-15);
  EXPECT_NEAR((*given)->step_s(StepWork{0, 5, 0, 0}), 0.008 + 4 * 0.0006, 1e-15);
  // The context terms stay the record's.
  const double ctx = (*fitted)->step_s(StepWork{0, 1, 1000, 1000}) - (*fitted)->step_s(StepWork{0, 1, 0, 0});
  EXPECT_NEAR((*given)->step_s(StepWork{0, 1, 1000, 1000}), 0.008 + ctx, 1e-12);
  EXPECT_NE((*given)->describe().find("given"), std::string::npos);
  o.per_row_s = -1.0;
  EXPECT_FALSE(measured_cost_from_json(bench_record(), o).is_ok());
}

TEST(MeasuredCost, Errors) {
  MeasuredCostOptions o;
  o.kv_capacity_tokens = 0;
  EXPECT_FALSE(measured_cost_from_json(bench_record(), o).is_ok());  // no KV capacity
  o.kv_capacity_tokens = 10;
  nlohmann::json no_tg = bench_record();
  no_tg["results"].erase(1);
  auto e = measured_cost_from_json(no_tg, o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("tg"), std::string::npos);
  EXPECT_FALSE(measured_cost_from_json(nlohmann::json::object(), o).is_ok());
  nlohmann::json zero = bench_record();
  zero["results"][1]["tokens_per_second_median"] = 0.0;
  EXPECT_FALSE(measured_cost_from_json(zero, o).is_ok());
}

TEST(MeasuredCost, ApplyResumeRecord) {
  // Fields as `tessera bench resume --json` prints them (cmd_bench_resume.cpp).
  const nlohmann::json rec = {{"model", "m.gguf"},
                              {"weight_bytes", 142884864},
                              {"host_resume_s", {0.03, 0.01, 0.02}},
                              {"disk_resume_s", {0.4, 0.2, 0.3, 0.5}},
                              {"warm_ttft_s", {0.001}}};
  MeasuredCostOptions o;
  o.suspend_s = 0.007;
  ASSERT_TRUE(apply_resume_record(rec, o).is_ok());
  EXPECT_EQ(o.weight_bytes, 142884864);
  EXPECT_DOUBLE_EQ(o.resume_s, 0.02);
  EXPECT_DOUBLE_EQ(o.load_s, 0.35);
  EXPECT_DOUBLE_EQ(o.suspend_s, 0.007);  // not measured there: kept
  EXPECT_FALSE(apply_resume_record(nlohmann::json{{"weight_bytes", 1}}, o).is_ok());
}

}  // namespace
}  // namespace tessera::sim
