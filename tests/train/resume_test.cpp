// Resumable training: N steps, the checkpoint and its training state written and read back, then
// N more steps give the same parameters and losses as 2N steps straight, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "test_util.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/pretrain.h"

namespace tessera::train {
namespace resume_test {

std::vector<int32_t> random_text(int64_t n, uint32_t seed, int32_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return out;
}

PretrainOptions options() {
  PretrainOptions o;
  o.shape.vocab = 12;
  o.shape.dim = 16;
  o.shape.layers = 2;
  o.shape.heads = 2;
  o.shape.kv_heads = 1;
  o.shape.ffn = 24;
  o.shape.context = 8;
  o.batch = 3;
  o.accum = 2;
  o.steps = 12;
  o.lr = 5e-3;
  o.warmup = 3;
  o.eval_every = 4;
  o.seed = 11;
  return o;
}

TEST(Resume, HalfAndResumeEqualsStraightBitForBit) {
  const PretrainOptions o = options();
  int64_t n = 0;
  llama_param_layout(o.shape, &n);
  const auto train = random_text(2000, 1, 12), val = random_text(300, 2, 12);
  ThreadPool pool(2);

  std::vector<float> straight(static_cast<size_t>(n));
  init_llama_params(o.shape, straight, o.seed);
  auto full = pretrain(o, straight, train, val, &pool);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();

  std::vector<float> half(static_cast<size_t>(n));
  init_llama_params(o.shape, half, o.seed);
  TrainState state;
  PretrainHooks hooks;
  hooks.state = &state;
  hooks.on_step = [](const StepRecord& r) { return r.step < 6; };
  auto first = pretrain(o, half, train, val, &pool, hooks);
  ASSERT_TRUE(first.is_ok());
  ASSERT_EQ(first->steps.size(), 6u);
  EXPECT_EQ(state.step, 6);

  testing::TempDir dir;
  const std::string model = dir.file("half.gguf");
  ASSERT_TRUE(write_llama_gguf(model, o.shape, half, nullptr, "half").is_ok());
  ASSERT_TRUE(write_train_state(train_state_path(model), state, o).is_ok());
  auto params = read_llama_gguf_params(model, o.shape);
  ASSERT_TRUE(params.is_ok()) << params.status().to_string();
  auto loaded = read_train_state(train_state_path(model), o);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->rng, state.rng);

  hooks.state = &*loaded;
  hooks.on_step = {};
  auto second = pretrain(o, *params, train, val, &pool, hooks);
  ASSERT_TRUE(second.is_ok());
  ASSERT_EQ(second->steps.size(), 6u);
  EXPECT_EQ(second->steps.front().step, 7);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(second->steps[i].loss, full->steps[6 + i].loss) << "step " << 7 + i;
    EXPECT_EQ(second->steps[i].val_loss, full->steps[6 + i].val_loss);
  }
  EXPECT_EQ(std::memcmp(params->data(), straight.data(), straight.size() * sizeof(float)), 0);
  EXPECT_EQ(loaded->step, 12);
}

TEST(Resume, RefusesAStateOfAnotherRun) {
  PretrainOptions o = options();
  int64_t n = 0;
  llama_param_layout(o.shape, &n);
  TrainState st;
  st.step = 3;
  st.m.assign(static_cast<size_t>(n), 0.0f);
  st.v.assign(static_cast<size_t>(n), 0.0f);
  testing::TempDir dir;
  const std::string path = dir.file("s.state");
  ASSERT_TRUE(write_train_state(path, st, o).is_ok());
  o.lr *= 2;
  auto r = read_train_state(path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("tessera.train.lr"), std::string::npos) << r.status().to_string();
  EXPECT_FALSE(read_llama_gguf_params(path, o.shape).is_ok());  // not a model of this shape

  // The matmul precision is part of the run: a bf16 state does not continue in f32, nor back.
  o.lr /= 2;
  ASSERT_TRUE(read_train_state(path, o).is_ok());
  o.bf16 = true;
  r = read_train_state(path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("computed in f32, this run in bf16"), std::string::npos)
      << r.status().to_string();
  ASSERT_TRUE(write_train_state(path, st, o).is_ok());
  EXPECT_TRUE(read_train_state(path, o).is_ok());
  o.bf16 = false;
  EXPECT_FALSE(read_train_state(path, o).is_ok());
}

}  // namespace resume_test
}  // namespace tessera::train
