// ModelOps (engine/model_ops.h) over the tiny synthetic model: work runs on the caller's thread
// before start(), waits for run() after it (and wakes the scheduler thread), is refused after
// close(), which applies queued adapter changes and fails queued embeddings; the adapter
// registry refuses unknown ids and unregistering an id in use.
#include "tessera/engine/model_ops.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace model_ops_test {

class ModelOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kF32;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    auto m = model::load_model(dir_->file("tiny.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(m).value();
    ModelOps::Options o;
    o.max_rows = 16;
    o.max_tokens = 32;
    o.wake = [this] { ++wakes_; };
    ops_.emplace(*model_, std::move(o));
  }

  // A rank-1 update of layer 0's query matrix (its values do not matter here).
  std::shared_ptr<const model::LoraAdapter> adapter(
      const std::string& target = "blk.0.attn_q.weight") {
    const int64_t dim = model_->config().dim;
    auto a = std::make_shared<model::LoraAdapter>();
    model::LoraMatrix m;
    m.target = target;
    m.rank = 1;
    m.n_in = dim;
    m.n_out = dim;
    m.a.assign(static_cast<size_t>(dim), 0.01f);
    m.bt.assign(static_cast<size_t>(dim), 0.01f);
    a->matrices.push_back(std::move(m));
    return a;
  }

  // Hands `tokens` to embed() and returns what reached `done` so far (none: not yet called).
  std::shared_ptr<std::optional<Result<std::vector<float>>>> embed(std::vector<int32_t> tokens) {
    auto got = std::make_shared<std::optional<Result<std::vector<float>>>>();
    ops_->embed(std::move(tokens), Pooling::kMean,
                [got](Result<std::vector<float>> r) { got->emplace(std::move(r)); });
    return got;
  }

  static testing::TempDir* dir_;
  std::unique_ptr<model::Model> model_;
  std::optional<ModelOps> ops_;
  std::atomic<int> wakes_{0};
};
testing::TempDir* ModelOpsTest::dir_ = nullptr;

TEST_F(ModelOpsTest, BeforeStartEmbeddingsRunOnTheCallersThread) {
  auto got = embed({1, 2, 3});
  ASSERT_TRUE(got->has_value());
  ASSERT_TRUE((*got)->is_ok()) << (*got)->status().to_string();
  EXPECT_EQ(static_cast<int64_t>((**got)->size()), model_->config().dim);
  EXPECT_EQ(wakes_, 0);
}

TEST_F(ModelOpsTest, BadEmbeddingInputsAreRefusedAtOnce) {
  ops_->start();
  EXPECT_EQ((*embed({}))->status().code(), ErrorCode::kInvalidArgument);
  const auto n_vocab = static_cast<int32_t>(model_->config().n_vocab);
  EXPECT_EQ((*embed({n_vocab}))->status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*embed(std::vector<int32_t>(33, 1)))->status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ops_->pending());
  EXPECT_EQ(wakes_, 0);
}

TEST_F(ModelOpsTest, AfterStartEmbeddingsWaitForRun) {
  ops_->start();
  auto got = embed({1, 2, 3});
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(ops_->pending());
  EXPECT_EQ(wakes_, 1);
  ops_->run();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE((*got)->is_ok()) << (*got)->status().to_string();
  EXPECT_FALSE(ops_->pending());
}

TEST_F(ModelOpsTest, CloseFailsQueuedEmbeddingsAndRefusesNewWork) {
  ops_->start();
  auto queued = embed({1, 2, 3});
  ops_->close();
  ASSERT_TRUE(queued->has_value());
  EXPECT_EQ((*queued)->status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ((*embed({1}))->status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(ops_->set_adapter(0, adapter()).code(), ErrorCode::kUnavailable);
  EXPECT_FALSE(ops_->pending());
}

TEST_F(ModelOpsTest, RequestsNameOnlyRegisteredAdaptersAndAnIdInUseStays) {
  EXPECT_TRUE(ops_->acquire_adapter(-1).is_ok());
  EXPECT_EQ(ops_->acquire_adapter(0).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(ops_->set_adapter(0, adapter()).is_ok());
  ASSERT_TRUE(ops_->acquire_adapter(0).is_ok());
  EXPECT_EQ(ops_->set_adapter(0, nullptr).code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(ops_->set_adapter(0, adapter()).is_ok());  // replacing it is fine
  ops_->release_adapter(0);
  EXPECT_TRUE(ops_->set_adapter(0, nullptr).is_ok());
  EXPECT_EQ(ops_->acquire_adapter(0).code(), ErrorCode::kInvalidArgument);
  // The model's refusal is returned and registers nothing.
  EXPECT_EQ(ops_->set_adapter(1, adapter("blk.99.attn_q.weight")).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ops_->acquire_adapter(1).code(), ErrorCode::kInvalidArgument);
}

TEST_F(ModelOpsTest, AfterStartAnAdapterChangeReturnsOnceRunAppliesIt) {
  ops_->start();
  auto change = std::async(std::launch::async, [&] { return ops_->set_adapter(2, adapter()); });
  while (wakes_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(change.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  EXPECT_TRUE(ops_->pending());
  ops_->run();
  EXPECT_TRUE(change.get().is_ok());
  EXPECT_TRUE(ops_->acquire_adapter(2).is_ok());
}

TEST_F(ModelOpsTest, CloseAppliesAQueuedAdapterChange) {
  ops_->start();
  auto change = std::async(std::launch::async, [&] { return ops_->set_adapter(3, adapter()); });
  while (wakes_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ops_->close();
  EXPECT_TRUE(change.get().is_ok());
}

}  // namespace model_ops_test
}  // namespace tessera::engine
