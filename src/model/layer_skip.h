// LayerSkipModel: a model run with some of its layers skipped, sharing the weights of the full
// model it wraps (no second file, no copy). A cheaper, less accurate copy of the model: the
// draft for self-speculative decoding (engine/model_drafter.h). Its KV cache has every layer's
// shape (the skipped layers' rows stay unused).
// Thread-safety: as Model; it calls the wrapped model, which must not run concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/model/model.h"

namespace tessera::model {

class LayerSkipModel final : public Model {
 public:
  // Errors: kInvalidArgument for a layer out of range, no layer or every layer skipped;
  // kUnsupported when `base`'s architecture cannot skip layers.
  static Result<std::shared_ptr<LayerSkipModel>> create(std::shared_ptr<Model> base,
                                                        const std::vector<int32_t>& skipped);
  const ModelConfig& config() const override { return base_->config(); }
  const ModelFile& file() const override { return base_->file(); }
  Status forward(const Batch& batch, KvCache& kv, std::span<float> logits,
                 ThreadPool* pool) override {
    return base_->forward_skipping(batch, kv, logits, pool, skip_);
  }
  int32_t n_skipped() const;

 private:
  LayerSkipModel(std::shared_ptr<Model> base, std::vector<uint8_t> skip)
      : base_(std::move(base)), skip_(std::move(skip)) {}
  std::shared_ptr<Model> base_;
  std::vector<uint8_t> skip_;  // [n_layers]
};

// Parses a layer list such as "3,5-8,12" (ascending or not, no duplicates needed).
// Errors: kInvalidArgument naming the part that is not a number or a range.
Result<std::vector<int32_t>> parse_layer_list(const std::string& text);

}  // namespace tessera::model
