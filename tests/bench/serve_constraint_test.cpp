// `bench serve` under structured output: --response-format files, the constraint counters read
// from /metrics text, and a run on the in-process engine that reports the constraint engine's
// time per constrained output token (and none without a response_format).
#include <gtest/gtest.h>

#include <fstream>

#include "tessera/bench/constraint_counters.h"
#include "tessera/bench/response_format.h"
#include "tessera/bench/serve_bench.h"
#include "tessera/bench/serve_printer.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::bench {
namespace serve_constraint_test {

TEST(ConstraintCounters, SumsBothFamiliesOverModels) {
  const std::string text =
      "# TYPE tessera_constraint_seconds_total counter\n"
      "tessera_constraint_seconds_total{model=\"a\"} 0.25\n"
      "tessera_constraint_seconds_total{model=\"b\"} 0.75\n"
      "tessera_constrained_tokens_total{model=\"a\"} 10000\n"
      "tessera_constrained_tokens_total{model=\"b\"} 10000\n"
      "tessera_constrained_tokens_total_other 5\n";
  const auto c = parse_constraint_counters(text);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->seconds, 1.0);
  EXPECT_DOUBLE_EQ(c->tokens, 20000);
  EXPECT_DOUBLE_EQ(c->us_per_token(), 50.0);
  const ConstraintCounters d = *c - ConstraintCounters{0.5, 10000};
  EXPECT_DOUBLE_EQ(d.us_per_token(), 50.0);
  EXPECT_EQ(ConstraintCounters{}.us_per_token(), 0.0);
  EXPECT_FALSE(parse_constraint_counters("tessera_spec_draft_tokens_total 3\n").has_value());
  EXPECT_FALSE(scrape_constraint_counters("http://127.0.0.1:1", 0.5).has_value());
  EXPECT_EQ(format_constraint_cost(*c),
            "constraint engine: 50.0 µs per constrained output token (20000 tokens, 1.000 s)");
}

TEST(ResponseFormat, ASchemaIsSentAsJsonSchemaAndAnObjectAsItIs) {
  auto bare = make_response_format(nlohmann::json::parse(R"({"type": "object"})"));
  ASSERT_TRUE(bare.is_ok()) << bare.status().to_string();
  EXPECT_EQ(bare->body["type"], "json_schema");
  EXPECT_EQ(bare->body["json_schema"]["schema"]["type"], "object");
  EXPECT_NE(bare->schema, nullptr);
  auto rf = make_response_format(nlohmann::json::parse(
      R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer"}}})"));
  ASSERT_TRUE(rf.is_ok()) << rf.status().to_string();
  EXPECT_EQ(rf->body["json_schema"]["name"], "x");
  auto obj = make_response_format(nlohmann::json::parse(R"({"type": "json_object"})"));
  ASSERT_TRUE(obj.is_ok());
  EXPECT_NE(obj->schema, nullptr);
  auto text = make_response_format(nlohmann::json::parse(R"({"type": "text"})"));
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(text->schema, nullptr);
  EXPECT_FALSE(make_response_format(nlohmann::json::parse(R"({"type": "json_schema"})")).is_ok());
  EXPECT_FALSE(make_response_format(nlohmann::json::parse("[1]")).is_ok());
  testing::TempDir dir;
  std::ofstream(dir.file("bad.json")) << "{\"type\": ";
  EXPECT_NE(load_response_format(dir.file("bad.json")).status().message().find("not valid JSON"),
            std::string::npos);
  EXPECT_FALSE(load_response_format(dir.file("missing.json")).is_ok());
}

class ServeConstraintTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
    std::ofstream(dir_->file("schema.json"))
        << R"({"type": "object", "properties": {"n": {"type": "integer"},
               "ok": {"type": "boolean"}}, "required": ["n", "ok"],
               "additionalProperties": false})";
  }
  static void TearDownTestSuite() { delete dir_; }

  static ServeBenchOptions inproc_options() {
    ServeBenchOptions o;
    o.target = "inproc:" + dir_->file("tiny.gguf");
    o.scenario = "offline";
    o.num_prompts = 4;
    o.warmup = 0;
    o.input_len = "8";
    o.output_len = "48";
    o.threads = 1;
    o.ctx_size = 256;
    o.load_inproc = [](const std::string& path) -> Result<InprocModel> {
      TS_ASSIGN_OR_RETURN(auto m, model::load_model(path));
      std::shared_ptr<model::Model> shared(std::move(m));
      TS_ASSIGN_OR_RETURN(auto t, model::make_tokenizer(shared->file().metadata));
      return InprocModel{shared, std::shared_ptr<const model::Tokenizer>(std::move(t)), {}};
    };
    return o;
  }

  static testing::TempDir* dir_;
};
testing::TempDir* ServeConstraintTest::dir_ = nullptr;

TEST_F(ServeConstraintTest, InprocRunReportsTheConstraintCostPerToken) {
  ServeBenchOptions o = inproc_options();
  o.response_format = dir_->file("schema.json");
  auto r = run_serve_benchmark(o, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->constraint_delta.has_value());
  const ServeMetrics& m = r->points.at(0).metrics;
  EXPECT_EQ(m.completed, 4);
  // Every output token was chosen under the constraint (no warm-up queries here).
  EXPECT_EQ(r->constraint_delta->tokens, static_cast<double>(m.total_output_tokens));
  EXPECT_GT(r->constraint_delta->seconds, 0.0);
  EXPECT_EQ(r->backend["response_format"]["type"], "json_schema");
  EXPECT_EQ(r->backend["constrained_tokens"].get<double>(), r->constraint_delta->tokens);
  EXPECT_GT(r->backend["constraint_us_per_token"].get<double>(), 0.0);
  const nlohmann::json summary = summary_json({}, r->backend, "", r->points, 0.99);
  EXPECT_TRUE(summary["backend"].contains("constraint_us_per_token")) << summary.dump();
  EXPECT_NE(format_constraint_cost(*r->constraint_delta).find("per constrained output token"),
            std::string::npos);
}

TEST_F(ServeConstraintTest, FreeTextRunCountsNoConstrainedTokens) {
  auto r = run_serve_benchmark(inproc_options(), {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->constraint_delta.has_value());
  EXPECT_EQ(r->constraint_delta->tokens, 0.0);
  EXPECT_EQ(r->constraint_delta->seconds, 0.0);
  EXPECT_FALSE(r->backend.contains("constraint_us_per_token"));
  EXPECT_FALSE(r->backend.contains("response_format"));
}

TEST(ServeTarget, NullTargetRefusesAResponseFormat) {
  ServeBenchOptions o;
  o.target = "null";
  o.response_format = "schema.json";
  EXPECT_NE(make_serve_target(o).status().message().find("--response-format"), std::string::npos);
}

}  // namespace serve_constraint_test
}  // namespace tessera::bench
