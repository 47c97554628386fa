// Engine::set_adapter against requests in flight: unregistering an adapter that an unfinished
// request uses is refused (kUnavailable) and the request completes with the adapter's output (the
// same tokens as an undisturbed run, not the base's); once it has finished the adapter goes, and
// new requests naming it are refused. This is what the fleet's adapter suspension waits on.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "tessera/engine/engine.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace engine_adapter_test {

class EngineAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kF32;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_.file("tiny.gguf")).is_ok());
    // A GGUF LoRA on the q/v/down matrices, large enough to change greedy choices.
    model::GgufWriter w;
    w.metadata().set("general.architecture", model::GgufValue::string("llama"));
    w.metadata().set("general.type", model::GgufValue::string("adapter"));
    w.metadata().set("adapter.type", model::GgufValue::string("lora"));
    w.metadata().set("adapter.lora.alpha", model::GgufValue::f32(16.0f));
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 0.2f);
    const struct { const char* name; int64_t in, out; } kinds[] = {
        {"attn_q", 128, 128}, {"attn_v", 128, 64}, {"ffn_down", 384, 128}};
    for (int layer = 0; layer < 2; ++layer) {
      for (const auto& k : kinds) {
        std::vector<float> a(8 * k.in), b(k.out * 8);
        for (float& v : a) v = nd(rng);
        for (float& v : b) v = nd(rng);
        const std::string stem = fmt::format("blk.{}.{}.weight", layer, k.name);
        ASSERT_TRUE(w.add_tensor(stem + ".lora_a", kernels::DType::kF32, {k.in, 8},
                                 std::as_bytes(std::span(a))).is_ok());
        ASSERT_TRUE(w.add_tensor(stem + ".lora_b", kernels::DType::kF32, {8, k.out},
                                 std::as_bytes(std::span(b))).is_ok());
      }
    }
    ASSERT_TRUE(w.write(dir_.file("style.gguf")).is_ok());
    auto m = model::load_model(dir_.file("tiny.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::shared_ptr<model::Model>(std::move(m).value());
    auto t = model::make_tokenizer(model_->file().metadata);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    tokenizer_ = std::shared_ptr<const model::Tokenizer>(std::move(t).value());
    auto lora = model::load_lora_adapter(dir_.file("style.gguf"), model_->file());
    ASSERT_TRUE(lora.is_ok()) << lora.status().to_string();
    adapter_ = std::make_shared<const model::LoraAdapter>(std::move(lora).value());
  }

  std::unique_ptr<Engine> make() {
    EngineOptions o;
    o.n_threads = 1;
    o.ctx_size = 128;
    auto e = Engine::create(model_, tokenizer_, o);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? std::move(e).value() : nullptr;
  }

  static Request greedy(int32_t adapter_id) {
    Request r;
    r.prompt = {1, 17, 93, 211, 45, 8};
    r.sampling.temperature = 0.0f;
    r.max_tokens = 12;
    r.ignore_eos = true;
    r.adapter_id = adapter_id;
    return r;
  }

  struct Outcome {
    std::vector<int32_t> tokens;
    FinishEvent finish;
    bool finished = false;
  };
  static EventSink sink_into(Outcome& o) {
    return [&o](Event&& ev) {
      if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
        o.tokens.push_back(t->token);
      } else {
        o.finish = std::get<FinishEvent>(ev.body);
        o.finished = true;
      }
    };
  }
  // An undisturbed greedy run on a fresh engine (adapter 0 registered when `adapter`).
  std::vector<int32_t> alone(bool adapter) {
    auto e = make();
    if (adapter) {
      EXPECT_TRUE(e->set_adapter(0, adapter_).is_ok());
    }
    Outcome o;
    EXPECT_TRUE(e->submit(greedy(adapter ? 0 : -1), sink_into(o)).is_ok());
    for (int guard = 0; guard < 10000 && e->step(); ++guard) {
    }
    EXPECT_TRUE(o.finished);
    return o.tokens;
  }

  testing::TempDir dir_;
  std::shared_ptr<model::Model> model_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
  std::shared_ptr<const model::LoraAdapter> adapter_;
};

TEST_F(EngineAdapterTest, UnloadingAnAdapterInUseIsRefusedAndTheRequestCompletes) {
  const std::vector<int32_t> with_adapter = alone(true);
  const std::vector<int32_t> base = alone(false);
  ASSERT_EQ(with_adapter.size(), 12u);
  ASSERT_NE(with_adapter, base) << "the adapter must change the greedy output for this test";

  auto e = make();
  ASSERT_TRUE(e->set_adapter(0, adapter_).is_ok());
  Outcome o;
  ASSERT_TRUE(e->submit(greedy(0), sink_into(o)).is_ok());
  // Queued, not started: already a user of the adapter.
  Status st = e->set_adapter(0, nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable) << st.to_string();
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.message();
  for (int i = 0; i < 3; ++i) e->step();
  ASSERT_FALSE(o.finished);
  ASSERT_FALSE(o.tokens.empty());  // mid-generation
  st = e->set_adapter(0, nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable) << st.to_string();
  for (int guard = 0; guard < 10000 && e->step(); ++guard) {
  }
  ASSERT_TRUE(o.finished);
  EXPECT_EQ(o.finish.reason, FinishReason::kLength);
  EXPECT_EQ(o.tokens, with_adapter);  // the adapter stayed in place to the end
  // Finished: now it goes, and requests naming it are refused.
  EXPECT_TRUE(e->set_adapter(0, nullptr).is_ok());
  Outcome late;
  auto refused = e->submit(greedy(0), sink_into(late));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(late.finished);
}

}  // namespace engine_adapter_test
}  // namespace tessera::engine
