#include "tessera/model/decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tessera/base/page_buffer.h"

#include "tessera/kernels/attention.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"
#include "tessera/model/decoder_weights.h"
#include "tessera/model/device_decoder.h"
#include "tessera/model/lora_set.h"

// Shapes below: T = rows in the batch, D = model dim, Q = n_heads * head_dim,
// KV = n_kv_heads * head_dim, F = ffn dim, V = vocabulary, H = head_dim.

namespace tessera::model {
namespace {

class DecoderModel final : public Model {
 public:
  DecoderModel(std::shared_ptr<const ModelFile> file, ModelConfig config, ArchTraits traits)
      : file_(std::move(file)), config_(std::move(config)), traits_(std::move(traits)) {}

  Status load() {
    TS_ASSIGN_OR_RETURN(w_, load_decoder_weights(*file_, config_, traits_));
    return Status::ok();
  }
  // Copies every matrix into one image, each in the layout the active kernels prefer, when one
  // of them prefers another layout than the file's (load_options.h).
  Status build_image(const LoadOptions& options);
  const ModelConfig& config() const override { return config_; }
  const ModelFile& file() const override { return *file_; }
  size_t image_bytes() const override { return image_bytes_; }
  Status forward(const Batch& batch, KvCache& kv, std::span<float> logits,
                 ThreadPool* pool) override {
    return run(batch, kv, logits, pool, {}, /*hidden_only=*/false);
  }
  Status forward_hidden(const Batch& batch, KvCache& kv, std::span<float> hidden,
                        ThreadPool* pool) override {
    return run(batch, kv, hidden, pool, {}, /*hidden_only=*/true);
  }
  bool can_skip_layers() const override { return true; }
  Status set_adapter(int32_t id, std::shared_ptr<const LoraAdapter> adapter) override {
    return lora_.set(id, std::move(adapter), config_.n_layers);
  }
  bool set_matmul_input_observer(MatmulInputObserver* observer) override {
    observer_ = observer;
    return true;
  }
  Status forward_skipping(const Batch& batch, KvCache& kv, std::span<float> logits,
                          ThreadPool* pool, std::span<const uint8_t> skip) override {
    if (static_cast<int64_t>(skip.size()) != config_.n_layers) {
      return invalid_argument("the layer skip mask must have one entry per layer");
    }
    return run(batch, kv, logits, pool, skip, /*hidden_only=*/false);
  }

 private:
  // `out` receives logits, or with hidden_only the final-normed hidden rows (dim floats each).
  Status run(const Batch& batch, KvCache& kv, std::span<float> out, ThreadPool* pool,
             std::span<const uint8_t> skip, bool hidden_only);
  // check_batch, then the adapter ids.
  Status validate(const Batch& batch, const KvCache& kv, size_t n_out_floats,
                  int64_t row_floats) const {
    TS_RETURN_IF_ERROR(check_batch(batch, kv, config_, n_out_floats, row_floats));
    for (int32_t id : batch.adapter_ids) {
      if (id >= 0 && !lora_.has(id)) {
        return invalid_argument(fmt::format("adapter id {} is not loaded in this model", id));
      }
    }
    return Status::ok();
  }
  // Reports x (T rows of `cols`) as the input of layer `l`'s matrices first..first+count-1
  // (LayerWeights order: q, k, v, output, gate, up, down) to the observer, if any.
  void observe(int64_t l, int first, int count, const float* x, int64_t T, int64_t cols) {
    if (observer_ == nullptr) return;
    for (int m = first; m < first + count; ++m) {
      const std::string& name = w_.matrix_names[static_cast<size_t>(7 * l + m)];
      if (!name.empty()) observer_->observe(name, x, T, cols);  // empty: part of a fused tensor
    }
  }
  void attention(const Batch& batch, const KvCache& kv, int64_t layer, ThreadPool* pool);
  void resize_scratch(int64_t n_rows);
  // RMSNorm in place of the T rows of tmp_ (a block's attention or FFN output) with `weight`.
  void post_norm(const std::vector<float>& weight, int64_t T) {
    for (int64_t t = 0; t < T; ++t) {
      float* r = tmp_.data() + t * config_.dim;
      kernels::rmsnorm(r, weight.data(), config_.dim, config_.rms_eps, r);
    }
  }
  // y[t] += bias for each of the T rows of bias.size() values.
  static void add_bias(float* y, const std::vector<float>& bias, int64_t T) {
    const auto n = static_cast<int64_t>(bias.size());
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < n; ++i) y[t * n + i] += bias[static_cast<size_t>(i)];
    }
  }

  std::shared_ptr<const ModelFile> file_;
  ModelConfig config_;
  ArchTraits traits_;
  // The file's tensors; after build_image, the matrices point into the image.
  DecoderWeights w_;
  MatmulInputObserver* observer_ = nullptr;
  PageBuffer own_image_;     // the image when no allocator was given
  size_t image_bytes_ = 0;   // 0: matrices point into the file

  // Scratch, reused across calls (sized for the largest batch seen).
  std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, tmp_;
  std::vector<int64_t> attn_cost_;   // attention(): prefix sums of task costs
  std::vector<int64_t> attn_tiles_;  // attention(): first batch row of each tile, then T
  std::vector<int64_t> attn_npos_;   // attention(): positions each row attends to
  std::vector<float> rope_cs_;  // [sets, T, H]: each row's RoPE cos/sin, once per forward
  LoraSet lora_;                // adapters by id (Batch::adapter_ids)
};

Status DecoderModel::build_image(const LoadOptions& options) {
  std::vector<MatrixRef*> mats = {&w_.token_embd};
  if (!config_.tied_output) mats.push_back(&w_.output);
  for (LayerWeights& l : w_.layers) {
    for (MatrixRef* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) mats.push_back(m);
  }
  const kernels::KernelTable& table = kernels::kernel_table();
  bool any = false;
  for (const MatrixRef* m : mats) any = any || kernels::preferred_layout(table, *m) != kernels::MatrixLayout::kRows;
  if (!options.repack || !any) return Status::ok();
  constexpr size_t kAlign = 64;
  size_t total = 0;
  for (const MatrixRef* m : mats) {
    total += (kernels::matrix_bytes(*m, kernels::preferred_layout(table, *m)) + kAlign - 1) / kAlign * kAlign;
  }
  std::byte* image = nullptr;
  if (options.allocate_image) {
    TS_ASSIGN_OR_RETURN(image, options.allocate_image(total));
  } else {
    TS_ASSIGN_OR_RETURN(own_image_, PageBuffer::allocate(total));
    own_image_.advise_huge_pages();
    image = own_image_.data();
  }
  if (reinterpret_cast<uintptr_t>(image) % kAlign != 0) {
    return invalid_argument("the weight image allocator returned memory that is not 64-byte aligned");
  }
  // Each matrix is split over the threads by row groups; once copied, its file pages leave the
  // process, so the resident set peaks near the image plus one matrix, not image plus file.
  ThreadPool pool(options.n_threads > 0 ? options.n_threads : hardware_threads());
  size_t offset = 0;
  for (MatrixRef* m : mats) {
    const auto* src = static_cast<const std::byte*>(m->data);
    const size_t src_bytes = m->bytes();
    *m = kernels::pack_matrix(*m, kernels::preferred_layout(table, *m), image + offset, &pool);
    offset += (m->bytes() + kAlign - 1) / kAlign * kAlign;
    if (file_->mapping != nullptr) file_->mapping->release_range(src, src_bytes);
  }
  if (config_.tied_output) w_.output = w_.token_embd;
  image_bytes_ = total;
  // Every tensor the model reads now lives in the image or in vectors: the file's pages can go.
  if (file_->mapping != nullptr) file_->mapping->release_pages();
  return Status::ok();
}

void DecoderModel::resize_scratch(int64_t n_rows) {
  const ModelConfig& c = config_;
  auto grow = [](std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  };
  grow(x_, n_rows * c.dim);
  grow(xn_, n_rows * std::max(c.dim, c.q_dim()));
  grow(q_, n_rows * c.q_dim());
  grow(k_, n_rows * c.kv_dim());
  grow(v_, n_rows * c.kv_dim());
  grow(att_, n_rows * c.q_dim());
  grow(gate_, n_rows * c.ffn_dim);
  grow(up_, n_rows * c.ffn_dim);
  grow(tmp_, n_rows * c.dim);
  grow(rope_cs_, static_cast<int64_t>(w_.inv_freqs.size()) * n_rows * c.head_dim);
}

// Each row attends over its sequence's cache up to its own position, so rows see the K/V written
// by earlier rows of the same batch (causal within a batch). Rows of one sequence that sit next
// to each other in the batch (a prefill chunk) form tiles of up to 16 query vectors (rows x
// heads per KV head), so one conversion of each K/V row serves the whole tile
// (kernels::attention_rows); work is split over (tile, KV head).
void DecoderModel::attention(const Batch& b, const KvCache& kv, int64_t layer, ThreadPool* pool) {
  const ModelConfig& c = config_;
  const int64_t T = b.size();
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t max_rows = std::clamp<int64_t>(16 / group, 1, kernels::kMaxAttentionRows);
  const int64_t window = w_.layers[static_cast<size_t>(layer)].window;
  attn_npos_.resize(static_cast<size_t>(T));
  for (int64_t row = 0; row < T; ++row) {
    attn_npos_[static_cast<size_t>(row)] = b.positions[static_cast<size_t>(row)] + 1;
  }
  // A row whose window starts past position 0 attends through a view of the cache that starts
  // there (KvRows::first), alone in its tile, since the rows of a tile share one view.
  // Soft-capped scores have a scalar kernel for one row only: every row is then its own tile.
  const float softcap = traits_.attn_softcap;
  auto alone = [&](int64_t row) {
    return softcap > 0.0f || (window > 0 && attn_npos_[static_cast<size_t>(row)] > window);
  };
  attn_tiles_.clear();  // first row of each tile, then T
  for (int64_t row = 0; row < T;) {
    const int64_t first = row;
    const int32_t seq = b.seq_ids[static_cast<size_t>(row)];
    if (alone(row)) {
      ++row;
    } else {
      for (++row; row < T && row - first < max_rows && b.seq_ids[static_cast<size_t>(row)] == seq &&
                  !alone(row);) {
        ++row;
      }
    }
    attn_tiles_.push_back(first);
  }
  attn_tiles_.push_back(T);
  const auto n_tiles = static_cast<int64_t>(attn_tiles_.size()) - 1;
  const int64_t n_tasks = n_tiles * c.n_kv_heads;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t r0 = attn_tiles_[static_cast<size_t>(task / c.n_kv_heads)];
      const int64_t r1 = attn_tiles_[static_cast<size_t>(task / c.n_kv_heads) + 1];
      const int64_t kvh = task % c.n_kv_heads;
      kernels::KvRows rows = kv.rows(layer, b.seq_ids[static_cast<size_t>(r0)]);
      if (r1 - r0 == 1) {
        int64_t n_pos = attn_npos_[static_cast<size_t>(r0)];
        if (window > 0 && n_pos > window) {
          rows.first = n_pos - window;
          n_pos = window;
        }
        if (softcap > 0.0f) {
          kernels::attention_row_softcap(q_.data() + r0 * c.q_dim(), rows, n_pos, c.n_heads,
                                         c.n_kv_heads, c.head_dim, kvh, kvh + 1, softcap,
                                         att_.data() + r0 * c.q_dim());
        } else {
          kernels::attention_row(q_.data() + r0 * c.q_dim(), rows, n_pos, c.n_heads, c.n_kv_heads, c.head_dim, kvh, kvh + 1,
                                 att_.data() + r0 * c.q_dim());
        }
      } else {
        kernels::attention_rows(q_.data() + r0 * c.q_dim(), static_cast<size_t>(c.q_dim()),
                                attn_npos_.data() + r0, r1 - r0, rows, c.n_heads, c.n_kv_heads,
                                c.head_dim, kvh, kvh + 1, att_.data() + r0 * c.q_dim(),
                                static_cast<size_t>(c.q_dim()));
      }
    }
  };
  if (pool == nullptr || pool->size() == 1) {
    run(0, n_tasks);
    return;
  }
  // Split by cost, not by count: a task's work grows with its rows' positions, and a batch mixes
  // long decode rows with the short rows of a prefill chunk, so equal task counts left a thread
  // idle. attn_cost_[i] = cost of the tasks before i (positions plus a fixed part per row).
  attn_cost_.resize(static_cast<size_t>(n_tasks) + 1);
  attn_cost_[0] = 0;
  for (int64_t task = 0; task < n_tasks; ++task) {
    int64_t cost = 0;
    const size_t tile = static_cast<size_t>(task / c.n_kv_heads);
    for (int64_t row = attn_tiles_[tile]; row < attn_tiles_[tile + 1]; ++row) {
      const int64_t n_pos = attn_npos_[static_cast<size_t>(row)];
      cost += (window > 0 ? std::min(n_pos, window) : n_pos) + 32;
    }
    attn_cost_[static_cast<size_t>(task) + 1] = attn_cost_[static_cast<size_t>(task)] + cost;
  }
  const int64_t total = attn_cost_.back();
  pool->run([&](int t, int nt) {
    auto first_at = [&](int64_t cost) {
      return static_cast<int64_t>(std::lower_bound(attn_cost_.begin(), attn_cost_.end(), cost) -
                                  attn_cost_.begin());
    };
    const int64_t t0 = first_at(total * t / nt);
    const int64_t t1 = std::min(n_tasks, first_at(total * (t + 1) / nt));
    if (t0 < t1) run(t0, t1);
  });
}

Status DecoderModel::run(const Batch& b, KvCache& kv, std::span<float> out, ThreadPool* pool,
                         std::span<const uint8_t> skip, bool hidden_only) {
  TS_RETURN_IF_ERROR(validate(b, kv, out.size(), hidden_only ? config_.dim : config_.n_vocab));
  const ModelConfig& c = config_;
  const int64_t T = b.size();
  resize_scratch(T);
  const kernels::DTypeKernels& kv_conv = kernels::kernels_for(kv.dtype());
  // Adapters only when a row uses one (validate() checked that each is registered).
  const std::span<const int32_t> ids = b.adapter_ids;
  const bool lora = std::any_of(ids.begin(), ids.end(), [](int32_t id) { return id >= 0; });

  const float embd_scale = std::sqrt(static_cast<float>(c.dim));
  for (int64_t t = 0; t < T; ++t) {
    float* xt = x_.data() + t * c.dim;
    kernels::dequantize_row(w_.token_embd, b.tokens[static_cast<size_t>(t)], xt);
    if (traits_.scale_embedding) {
      for (int64_t i = 0; i < c.dim; ++i) xt[i] *= embd_scale;
    }
    for (size_t set = 0; set < w_.inv_freqs.size(); ++set) {
      kernels::rope_angles(b.positions[static_cast<size_t>(t)], w_.inv_freqs[set].data(), c.head_dim,
                           rope_cs_.data() + (static_cast<int64_t>(set) * T + t) * c.head_dim);
    }
  }
  // The kernels scale scores by 1/sqrt(H); another scale is folded into Q.
  const float q_scale =
      traits_.attn_scale > 0.0f ? traits_.attn_scale * std::sqrt(static_cast<float>(c.head_dim)) : 1.0f;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (!skip.empty() && skip[static_cast<size_t>(l)] != 0) continue;
    const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
    for (int64_t t = 0; t < T; ++t) {
      kernels::rmsnorm(x_.data() + t * c.dim, w.attn_norm.data(), c.dim, c.rms_eps,
                       xn_.data() + t * c.dim);
    }
    const MatrixRef qkv[] = {w.wq, w.wk, w.wv};
    float* const qkv_out[] = {q_.data(), k_.data(), v_.data()};
    observe(l, 0, 3, xn_.data(), T, c.dim);
    kernels::matmul_shared_input(qkv, xn_.data(), T, qkv_out, pool);
    if (lora) {
      lora_.apply(l, LoraSlot::kQ, ids, xn_.data(), c.dim, q_.data(), c.q_dim(), pool);
      lora_.apply(l, LoraSlot::kK, ids, xn_.data(), c.dim, k_.data(), c.kv_dim(), pool);
      lora_.apply(l, LoraSlot::kV, ids, xn_.data(), c.dim, v_.data(), c.kv_dim(), pool);
    }
    if (!w.bq.empty()) {
      add_bias(q_.data(), w.bq, T);
      add_bias(k_.data(), w.bk, T);
      add_bias(v_.data(), w.bv, T);
    }
    if (!w.q_norm.empty()) {
      for (int64_t h = 0; h < T * c.n_heads; ++h) {
        float* qh = q_.data() + h * c.head_dim;
        kernels::rmsnorm(qh, w.q_norm.data(), c.head_dim, c.rms_eps, qh);
      }
      for (int64_t h = 0; h < T * c.n_kv_heads; ++h) {
        float* kh = k_.data() + h * c.head_dim;
        kernels::rmsnorm(kh, w.k_norm.data(), c.head_dim, c.rms_eps, kh);
      }
    }
    const auto rotate = traits_.rope == RopeStyle::kNeox ? &kernels::rope_rotate_neox
                                                         : &kernels::rope_rotate;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = b.positions[static_cast<size_t>(t)];
      const int32_t slot = b.seq_ids[static_cast<size_t>(t)];
      const float* cs = rope_cs_.data() + (w.rope_set * T + t) * c.head_dim;
      rotate(q_.data() + t * c.q_dim(), c.n_heads, c.head_dim, cs);
      if (q_scale != 1.0f) {
        for (int64_t i = 0; i < c.q_dim(); ++i) q_[static_cast<size_t>(t * c.q_dim() + i)] *= q_scale;
      }
      rotate(k_.data() + t * c.kv_dim(), c.n_kv_heads, c.head_dim, cs);
      kv_conv.from_float(k_.data() + t * c.kv_dim(), kv.k_row(l, slot, pos), c.kv_dim());
      kv_conv.from_float(v_.data() + t * c.kv_dim(), kv.v_row(l, slot, pos), c.kv_dim());
    }
    attention(b, kv, l, pool);
    observe(l, 3, 1, att_.data(), T, c.q_dim());
    kernels::matmul(w.wo, att_.data(), T, tmp_.data(), pool);
    if (lora) lora_.apply(l, LoraSlot::kO, ids, att_.data(), c.q_dim(), tmp_.data(), c.dim, pool);
    if (!w.attn_post_norm.empty()) post_norm(w.attn_post_norm, T);
    for (int64_t i = 0; i < T * c.dim; ++i) x_[static_cast<size_t>(i)] += tmp_[static_cast<size_t>(i)];

    for (int64_t t = 0; t < T; ++t) {
      kernels::rmsnorm(x_.data() + t * c.dim, w.ffn_norm.data(), c.dim, c.rms_eps,
                       xn_.data() + t * c.dim);
    }
    const MatrixRef gate_up[] = {w.w_gate, w.w_up};
    float* const gate_up_out[] = {gate_.data(), up_.data()};
    observe(l, 4, 2, xn_.data(), T, c.dim);
    kernels::matmul_shared_input(gate_up, xn_.data(), T, gate_up_out, pool);
    if (lora) {
      lora_.apply(l, LoraSlot::kGate, ids, xn_.data(), c.dim, gate_.data(), c.ffn_dim, pool);
      lora_.apply(l, LoraSlot::kUp, ids, xn_.data(), c.dim, up_.data(), c.ffn_dim, pool);
    }
    if (traits_.ffn_activation == FfnActivation::kGeluTanh) {
      kernels::gelu_tanh_mul(gate_.data(), up_.data(), T * c.ffn_dim);
    } else {
      kernels::silu_mul(gate_.data(), up_.data(), T * c.ffn_dim);
    }
    observe(l, 6, 1, gate_.data(), T, c.ffn_dim);
    kernels::matmul(w.w_down, gate_.data(), T, tmp_.data(), pool);
    if (lora) lora_.apply(l, LoraSlot::kDown, ids, gate_.data(), c.ffn_dim, tmp_.data(), c.dim, pool);
    if (!w.ffn_post_norm.empty()) post_norm(w.ffn_post_norm, T);
    for (int64_t i = 0; i < T * c.dim; ++i) x_[static_cast<size_t>(i)] += tmp_[static_cast<size_t>(i)];
  }

  // Final norm and output projection only for the rows that want logits.
  int64_t n_out = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!b.want_logits[static_cast<size_t>(t)]) continue;
    kernels::rmsnorm(x_.data() + t * c.dim, w_.output_norm.data(), c.dim, c.rms_eps,
                     xn_.data() + n_out * c.dim);
    ++n_out;
  }
  if (hidden_only) {
    std::copy_n(xn_.data(), static_cast<size_t>(n_out * c.dim), out.data());
    return Status::ok();
  }
  if (n_out > 0 && observer_ != nullptr) {
    observer_->observe(w_.output_name, xn_.data(), n_out, c.dim);
  }
  if (n_out > 0) kernels::matmul(w_.output, xn_.data(), n_out, out.data(), pool);
  if (n_out > 0 && traits_.final_softcap > 0.0f) {
    kernels::softcap(out.data(), n_out * c.n_vocab, traits_.final_softcap);
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Model>> build_decoder(std::shared_ptr<const ModelFile> file,
                                             const LoadOptions& options, ModelConfig config,
                                             ArchTraits traits) {
  if (!traits.layer_window.empty() &&
      static_cast<int64_t>(traits.layer_window.size()) != config.n_layers) {
    return invalid_argument(fmt::format("{} sliding-window entries for {} layers",
                                        traits.layer_window.size(), config.n_layers));
  }
  if (!traits.layer_rope.empty() &&
      static_cast<int64_t>(traits.layer_rope.size()) != config.n_layers) {
    return invalid_argument(fmt::format("{} per-layer RoPE entries for {} layers",
                                        traits.layer_rope.size(), config.n_layers));
  }
  if (!(traits.attn_scale >= 0.0f) || !(traits.attn_softcap >= 0.0f) ||
      !(traits.final_softcap >= 0.0f) || !std::isfinite(traits.attn_softcap) ||
      !std::isfinite(traits.final_softcap) || !std::isfinite(traits.attn_scale)) {
    return invalid_argument("attention scale and soft-caps must be finite and non-negative");
  }
  if (options.device >= 0) {
    return build_device_decoder(std::move(file), options, std::move(config), std::move(traits));
  }
  auto model = std::make_unique<DecoderModel>(std::move(file), std::move(config), std::move(traits));
  TS_RETURN_IF_ERROR(model->load());
  TS_RETURN_IF_ERROR(model->build_image(options));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace tessera::model
