// The train layer's job setup (pretrain_job.h, lora_job.h, training_data.h, run_exports.h): what
// is checked before anything trains (the LoRA output format against -o, a missing base, an
// unreadable text), the data-order file's NumPy header and rows, and a tiny pretraining job end
// to end (prepared, run, its GGUF and state written, resumed to the same parameters).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/train/checkpoint.h"
#include "tessera/train/lora_job.h"
#include "tessera/train/pretrain_job.h"
#include "tessera/train/run_exports.h"
#include "tessera/train/training_data.h"
#include "test_util.h"

namespace tessera::train {
namespace train_jobs_test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LoraJob lora_job(const std::string& out, LoraOutput format, const std::string& name) {
  LoraJob job;
  job.base = "base.gguf";
  job.out = out;
  job.format = format;
  job.format_name = name;
  return job;
}

TEST(LoraJob, ParsesOutputFormats) {
  EXPECT_EQ(*parse_lora_output("peft"), LoraOutput::kPeft);
  EXPECT_EQ(*parse_lora_output("gguf"), LoraOutput::kGguf);
  EXPECT_EQ(*parse_lora_output("both"), LoraOutput::kBoth);
  EXPECT_EQ(parse_lora_output("onnx").status().code(), ErrorCode::kInvalidArgument);
}

TEST(LoraJob, ValidatesTheOutputAgainstTheFormat) {
  EXPECT_TRUE(validate(lora_job("adapter", LoraOutput::kPeft, "peft")).is_ok());
  EXPECT_TRUE(validate(lora_job("adapter", LoraOutput::kBoth, "both")).is_ok());
  EXPECT_TRUE(validate(lora_job("a.gguf", LoraOutput::kGguf, "gguf")).is_ok());
  const Status peft_to_file = validate(lora_job("a.gguf", LoraOutput::kBoth, "both"));
  EXPECT_EQ(peft_to_file.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(peft_to_file.message().find("--lora-format both writes a PEFT directory"),
            std::string::npos);
  const Status gguf_to_dir = validate(lora_job("adapter", LoraOutput::kGguf, "gguf"));
  EXPECT_NE(gguf_to_dir.message().find("must end in .gguf"), std::string::npos);
  LoraJob no_base = lora_job("adapter", LoraOutput::kPeft, "peft");
  no_base.base.clear();
  EXPECT_NE(validate(no_base).message().find("--lora needs --base"), std::string::npos);
}

TEST(TrainingData, AnUnreadableTextIsNotFound) {
  auto text = read_training_text("/nonexistent/corpus.txt");
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(text.status().message(), "cannot read --text '/nonexistent/corpus.txt'");
}

TEST(RunExports, DataOrderIsANumpyArrayOfTheDrawnWindows) {
  testing::TempDir dir;
  const std::vector<int32_t> tokens = {10, 11, 12, 13, 14, 15, 16, 17};
  const std::vector<int64_t> starts = {0, 3, 5, 1};  // 2 steps of 2 windows of t + 1 = 3 tokens
  const std::string path = dir.file("order.npy");
  ASSERT_TRUE(write_data_order_npy(path, starts, tokens, 2, 2).is_ok());
  const std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);  // the data starts 64-byte aligned
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'shape': (2, 2, 3)"), std::string::npos);
  EXPECT_EQ(header.back(), '\n');
  std::vector<int32_t> data((bytes.size() - 10 - header_len) / sizeof(int32_t));
  std::memcpy(data.data(), bytes.data() + 10 + header_len, data.size() * sizeof(int32_t));
  EXPECT_EQ(data, (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 15, 16, 17, 11, 12, 13}));
}

PretrainJob tiny_job(const testing::TempDir& dir) {
  PretrainJob job;
  job.text = dir.file("text.txt");
  job.out = dir.file("model.gguf");
  job.o.shape.dim = 16;
  job.o.shape.layers = 1;
  job.o.shape.heads = 2;
  job.o.shape.kv_heads = 2;
  job.o.shape.ffn = 32;
  job.o.shape.context = 8;
  job.o.batch = 2;
  job.o.steps = 4;
  job.o.warmup = 1;
  job.o.eval_every = 2;
  job.o.eval_windows = 2;
  return job;
}

TEST(PretrainJob, RunsWritesAndResumesToTheSameParameters) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat. a dog ran in the park. ";
  std::ofstream(dir.file("text.txt")) << text;
  ThreadPool pool(1);

  PretrainJob whole = tiny_job(dir);
  auto setup = prepare_pretrain(whole);
  ASSERT_TRUE(setup.is_ok()) << setup.status().to_string();
  EXPECT_EQ(whole.o.shape.vocab, setup->data.n_vocab);
  int64_t seen = 0;
  auto report = run_pretrain(whole, *setup, &pool, [&](const StepRecord&) { ++seen; });
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(seen, 4);
  const std::vector<float> final_params = setup->params;

  PretrainJob first = tiny_job(dir);
  first.out = dir.file("half.gguf");
  first.stop_at_step = 2;
  auto s1 = prepare_pretrain(first);
  ASSERT_TRUE(s1.is_ok());
  ASSERT_TRUE(run_pretrain(first, *s1, &pool, nullptr).is_ok());
  EXPECT_EQ(s1->state.step, 2);

  PretrainJob second = tiny_job(dir);
  second.out = dir.file("resumed.gguf");
  second.resume = first.out;
  auto s2 = prepare_pretrain(second);
  ASSERT_TRUE(s2.is_ok()) << s2.status().to_string();
  EXPECT_EQ(s2->state.step, 2);
  ASSERT_TRUE(run_pretrain(second, *s2, &pool, nullptr).is_ok());
  EXPECT_EQ(s2->params, final_params);
  auto written = read_llama_gguf_params(second.out, second.o.shape);
  ASSERT_TRUE(written.is_ok());
  EXPECT_EQ(*written, final_params);
}

}  // namespace train_jobs_test
}  // namespace tessera::train
