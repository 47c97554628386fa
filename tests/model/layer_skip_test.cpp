#include "tessera/model/layer_skip.h"

#include <gtest/gtest.h>

#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::model {
namespace layer_skip_test {

TEST(LayerSkip, ParsesLayerLists) {
  EXPECT_EQ(parse_layer_list("3").value(), (std::vector<int32_t>{3}));
  EXPECT_EQ(parse_layer_list("1,4-6,9").value(), (std::vector<int32_t>{1, 4, 5, 6, 9}));
  for (const char* bad : {"", "a", "3-", "-2", "5-3", "1,,2", "1.5"}) {
    EXPECT_EQ(parse_layer_list(bad).status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

// The skipping model reads the same weights: with a layer skipped its logits differ from the
// full model's, and they equal those of a model whose skipped layer contributes nothing (the
// residual passes through): checked by skipping the layer on both sides of a batch split.
TEST(LayerSkip, SkipsLayersOfTheSameWeights) {
  testing::TempDir dir;
  SynthOptions o;
  o.shape = *find_synth_shape("tiny");
  o.dtype = kernels::DType::kF32;
  ASSERT_TRUE(write_synthetic_model(o, dir.file("m.gguf")).is_ok());
  std::shared_ptr<Model> full(load_model(dir.file("m.gguf")).value());
  const int64_t n_layers = full->config().n_layers;
  ASSERT_GE(n_layers, 2);
  EXPECT_EQ(LayerSkipModel::create(full, {}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LayerSkipModel::create(full, {static_cast<int32_t>(n_layers)}).status().code(),
            ErrorCode::kInvalidArgument);
  std::vector<int32_t> all;
  for (int32_t l = 0; l < n_layers; ++l) all.push_back(l);
  EXPECT_EQ(LayerSkipModel::create(full, all).status().code(), ErrorCode::kInvalidArgument);

  auto skip = LayerSkipModel::create(full, {0}).value();
  EXPECT_EQ(skip->n_skipped(), 1);
  const int64_t V = full->config().n_vocab;
  const auto run = [&](Model& m, int split) {
    auto kv = KvCache::create(m.config(), 1, 16, kernels::DType::kF32).value();
    std::vector<float> logits(static_cast<size_t>(V));
    const std::vector<int32_t> toks = {1, 17, 99, 3, 250};
    Batch a;
    for (int i = 0; i < split; ++i) a.add(toks[static_cast<size_t>(i)], i, 0, false);
    if (split > 0) {
      EXPECT_TRUE(m.forward(a, kv, {}, nullptr).is_ok());
    }
    Batch b;
    for (int i = split; i < 5; ++i) b.add(toks[static_cast<size_t>(i)], i, 0, i == 4);
    EXPECT_TRUE(m.forward(b, kv, logits, nullptr).is_ok());
    return logits;
  };
  const std::vector<float> f = run(*full, 0);
  const std::vector<float> s0 = run(*skip, 0);
  const std::vector<float> s2 = run(*skip, 2);
  EXPECT_NE(f, s0);
  EXPECT_EQ(s0, s2);  // the skipped layer's (unwritten) cache is never read
  EXPECT_EQ(run(*full, 0), f);  // the full model is untouched by its skipping view
}

}  // namespace layer_skip_test
}  // namespace tessera::model
