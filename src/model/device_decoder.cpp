#include "tessera/model/device_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/device/device.h"
#include "tessera/device/device_info.h"
#include "tessera/device/device_kernels.h"
#include "tessera/kernels/ops.h"
#include "tessera/model/decoder_weights.h"

// Shapes below as in decoder.cpp: T = rows in the batch, D = model dim, Q = n_heads * head_dim,
// KV = n_kv_heads * head_dim, F = ffn dim, V = vocabulary, H = head_dim.

namespace tessera::model {
namespace {

using device::Buffer;
using device::DeviceMatrix;

// One weight matrix on the device (m.data is set at each launch: the struct moves).
struct DeviceWeight {
  Buffer data;
  DeviceMatrix m;
};

struct DeviceLayer {
  Buffer attn_norm, ffn_norm;
  DeviceWeight wq, wk, wv, wo, w_gate, w_up, w_down;
  Buffer bq, bk, bv, q_norm, k_norm, attn_post_norm, ffn_post_norm;  // empty when absent
  int64_t window = 0;
  int64_t rope_set = 0;
};

// The KV pool in device memory, installed as the KvCache's mirror: prefix blocks kept across
// engines are read from and written to here.
class DeviceKvMirror final : public KvCache::Mirror {
 public:
  DeviceKvMirror(const void* owner, device::Device dev, Buffer k, Buffer v,
                 device::DeviceKvPool pool, size_t block_stride)
      : owner_(owner), dev_(std::move(dev)), k_(std::move(k)), v_(std::move(v)), pool_(pool),
        block_stride_(block_stride) {
    pool_.k = &k_;
    pool_.v = &v_;
  }
  const void* owner() const { return owner_; }
  device::DeviceKvPool& pool() { return pool_; }

  Status read_block(int32_t block, std::span<std::byte> bytes) const override {
    std::byte* out = bytes.data();
    for (int64_t l = 0; l < pool_.n_layers; ++l) {
      const size_t at = at_(l, block);
      TS_RETURN_IF_ERROR(dev_.read(k_, at, out, block_stride_));
      TS_RETURN_IF_ERROR(dev_.read(v_, at, out + block_stride_, block_stride_));
      out += 2 * block_stride_;
    }
    return Status::ok();
  }
  Status write_block(int32_t block, std::span<const std::byte> bytes) override {
    const std::byte* in = bytes.data();
    for (int64_t l = 0; l < pool_.n_layers; ++l) {
      const size_t at = at_(l, block);
      TS_RETURN_IF_ERROR(dev_.write(k_, at, in, block_stride_));
      TS_RETURN_IF_ERROR(dev_.write(v_, at, in + block_stride_, block_stride_));
      in += 2 * block_stride_;
    }
    return Status::ok();
  }

 private:
  size_t at_(int64_t layer, int32_t block) const {
    return (static_cast<size_t>(layer) * static_cast<size_t>(pool_.n_blocks) +
            static_cast<size_t>(block)) * block_stride_;
  }
  const void* owner_;
  mutable device::Device dev_;
  Buffer k_, v_;
  device::DeviceKvPool pool_;
  size_t block_stride_;
};

class DeviceDecoderModel final : public Model {
 public:
  DeviceDecoderModel(std::shared_ptr<const ModelFile> file, ModelConfig config, ArchTraits traits,
                     device::Device dev, device::DeviceKernels k)
      : file_(std::move(file)), config_(std::move(config)), traits_(std::move(traits)),
        dev_(std::move(dev)), k_(std::move(k)) {}

  // Reads and checks the tensors, then uploads them.
  Status load() {
    TS_ASSIGN_OR_RETURN(host_, load_decoder_weights(*file_, config_, traits_));
    return upload();
  }
  const ModelConfig& config() const override { return config_; }
  const ModelFile& file() const override { return *file_; }
  Status forward(const Batch& batch, KvCache& kv, std::span<float> logits,
                 ThreadPool* /*pool*/) override {
    return run(batch, kv, logits, /*hidden_only=*/false);
  }
  Status forward_hidden(const Batch& batch, KvCache& kv, std::span<float> hidden,
                        ThreadPool* /*pool*/) override {
    return run(batch, kv, hidden, /*hidden_only=*/true);
  }
  std::string device_name() const override { return device::device_flag_name(dev_.info().index); }
  int64_t device_bytes() const override { return resident_bytes_; }
  Status release_device_memory() override;
  Status restore_device_memory() override { return resident_ ? Status::ok() : upload(); }
  int64_t device_free_bytes() const override {
    const auto total = static_cast<int64_t>(dev_.info().global_mem_bytes);
    return std::max<int64_t>(0, total - static_cast<int64_t>(dev_.memory().bytes_in_use));
  }
  Status attach_cache(KvCache& kv) override { return mirror_for(kv).status(); }
  Status set_adapter(int32_t /*id*/, std::shared_ptr<const LoraAdapter> /*adapter*/) override {
    return Status(ErrorCode::kUnsupported,
                  "LoRA adapters do not run on the OpenCL device yet: use --device cpu");
  }

 private:
  Status upload();
  Status run(const Batch& batch, KvCache& kv, std::span<float> out, bool hidden_only);
  Result<DeviceWeight> upload_matrix(const MatrixRef& m, const std::string& name);
  Result<Buffer> upload_floats(const float* v, size_t n);
  int64_t bytes_held() const;
  Result<Buffer> upload_vector(const std::vector<float>& v) {
    if (v.empty()) return Buffer();
    return upload_floats(v.data(), v.size());
  }
  Status ensure_scratch(int64_t n_rows);
  Result<DeviceKvMirror*> mirror_for(KvCache& kv);
  // Uploads `n` int32 values into `b`, growing it when too small.
  Status upload_ints(Buffer& b, const std::vector<int32_t>& v);
  Status post_norm(const Buffer& weight, int64_t T) {
    if (weight.empty()) return Status::ok();
    return k_.rmsnorm(tmp_, weight, T, config_.dim, config_.rms_eps, tmp_);
  }
  Status matmul(const DeviceWeight& w, const Buffer& x, int64_t T, Buffer& y) {
    DeviceMatrix m = w.m;
    m.data = &w.data;  // not kept in w.m: a DeviceWeight moves
    return k_.matmul(m, x, T, y);
  }

  std::shared_ptr<const ModelFile> file_;
  ModelConfig config_;
  ArchTraits traits_;
  device::Device dev_;
  device::DeviceKernels k_;
  DecoderWeights host_;  // token_embd rows are looked up on the host; RoPE tables
  bool resident_ = false;      // weights on the device
  int64_t resident_bytes_ = 0;  // device_bytes(), updated after each upload, release, growth
  std::vector<DeviceLayer> layers_;
  Buffer output_norm_;
  DeviceWeight output_;

  // Device scratch for up to rows_ rows, reused across steps.
  int64_t rows_ = 0;
  Buffer x_, xn_, q_, k_buf_, v_, att_, gate_, up_, tmp_, logits_;
  std::vector<Buffer> cs_;          // per RoPE set: [T, H]
  Buffer dst_rows_, tables_;        // int32, per step
  std::vector<Buffer> meta_;        // int32 [T, 3] per distinct window of the step
  std::vector<int64_t> meta_window_;
  // Host staging.
  std::vector<float> x_host_, cs_host_;
  std::vector<int32_t> dst_host_, table_host_, meta_host_;
  std::vector<int64_t> table_at_;  // per row: its sequence's offset into table_host_
};

Result<Buffer> DeviceDecoderModel::upload_floats(const float* v, size_t n) {
  TS_ASSIGN_OR_RETURN(Buffer b, dev_.alloc(n * sizeof(float)));
  TS_RETURN_IF_ERROR(dev_.write(b, 0, v, n * sizeof(float)));
  return b;
}

Result<DeviceWeight> DeviceDecoderModel::upload_matrix(const MatrixRef& m, const std::string& name) {
  if (!device::DeviceKernels::supports(m.dtype)) {
    return unsupported(fmt::format("tensor '{}' is {}: the OpenCL device has no matmul for it "
                                   "(F32, F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K); run it with "
                                   "--device cpu or requantize",
                                   name, kernels::dtype_name(m.dtype)));
  }
  DeviceWeight w;
  const size_t bytes = static_cast<size_t>(m.n_rows) * m.row_bytes;
  auto b = dev_.alloc(bytes);
  if (!b.is_ok()) {
    return Status(b.status().code(), fmt::format("uploading tensor '{}' ({} bytes) to {}: {}",
                                                 name, bytes, dev_.info().name,
                                                 b.status().message()));
  }
  w.data = std::move(b).value();
  TS_RETURN_IF_ERROR(dev_.write(w.data, 0, m.data, bytes));
  w.m = DeviceMatrix{m.dtype, nullptr, m.n_rows, m.n_cols};
  return w;
}

Status DeviceDecoderModel::upload() {
  const ModelConfig& c = config_;
  layers_.clear();
  layers_.resize(static_cast<size_t>(c.n_layers));
  const auto name = [&](int64_t l, int m) -> std::string {
    const std::string& n = host_.matrix_names[static_cast<size_t>(7 * l + m)];
    return n.empty() ? fmt::format("blk.{} (fused)", l) : n;
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& h = host_.layers[static_cast<size_t>(l)];
    DeviceLayer& d = layers_[static_cast<size_t>(l)];
    TS_ASSIGN_OR_RETURN(d.attn_norm, upload_vector(h.attn_norm));
    TS_ASSIGN_OR_RETURN(d.ffn_norm, upload_vector(h.ffn_norm));
    TS_ASSIGN_OR_RETURN(d.wq, upload_matrix(h.wq, name(l, 0)));
    TS_ASSIGN_OR_RETURN(d.wk, upload_matrix(h.wk, name(l, 1)));
    TS_ASSIGN_OR_RETURN(d.wv, upload_matrix(h.wv, name(l, 2)));
    TS_ASSIGN_OR_RETURN(d.wo, upload_matrix(h.wo, name(l, 3)));
    TS_ASSIGN_OR_RETURN(d.w_gate, upload_matrix(h.w_gate, name(l, 4)));
    TS_ASSIGN_OR_RETURN(d.w_up, upload_matrix(h.w_up, name(l, 5)));
    TS_ASSIGN_OR_RETURN(d.w_down, upload_matrix(h.w_down, name(l, 6)));
    TS_ASSIGN_OR_RETURN(d.bq, upload_vector(h.bq));
    TS_ASSIGN_OR_RETURN(d.bk, upload_vector(h.bk));
    TS_ASSIGN_OR_RETURN(d.bv, upload_vector(h.bv));
    TS_ASSIGN_OR_RETURN(d.q_norm, upload_vector(h.q_norm));
    TS_ASSIGN_OR_RETURN(d.k_norm, upload_vector(h.k_norm));
    TS_ASSIGN_OR_RETURN(d.attn_post_norm, upload_vector(h.attn_post_norm));
    TS_ASSIGN_OR_RETURN(d.ffn_post_norm, upload_vector(h.ffn_post_norm));
    d.window = h.window;
    d.rope_set = h.rope_set;
  }
  TS_ASSIGN_OR_RETURN(output_norm_, upload_vector(host_.output_norm));
  TS_ASSIGN_OR_RETURN(output_, upload_matrix(host_.output, host_.output_name));
  // Every matrix is on the device; the host reads only embedding rows from now on, which fault
  // back in as tokens need them.
  if (file_->mapping != nullptr) file_->mapping->release_pages();
  resident_ = true;
  resident_bytes_ = bytes_held();
  return Status::ok();
}

int64_t DeviceDecoderModel::bytes_held() const {
  int64_t n = 0;
  auto add = [&n](const Buffer& b) { n += static_cast<int64_t>(b.bytes()); };
  for (const DeviceLayer& l : layers_) {
    for (const Buffer* b : {&l.attn_norm, &l.ffn_norm, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
                            &l.attn_post_norm, &l.ffn_post_norm}) {
      add(*b);
    }
    for (const DeviceWeight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      add(w->data);
    }
  }
  add(output_norm_);
  add(output_.data);
  for (const Buffer* b : {&x_, &xn_, &q_, &k_buf_, &v_, &att_, &gate_, &up_, &tmp_, &logits_,
                          &dst_rows_, &tables_}) {
    add(*b);
  }
  for (const Buffer& b : cs_) add(b);
  for (const Buffer& b : meta_) add(b);
  return n;
}

Status DeviceDecoderModel::release_device_memory() {
  layers_.clear();
  output_norm_ = Buffer();
  output_ = DeviceWeight();
  for (Buffer* b : {&x_, &xn_, &q_, &k_buf_, &v_, &att_, &gate_, &up_, &tmp_, &logits_,
                    &dst_rows_, &tables_}) {
    *b = Buffer();
  }
  cs_.clear();
  meta_.clear();
  rows_ = 0;
  resident_ = false;
  resident_bytes_ = 0;
  return Status::ok();
}

Status DeviceDecoderModel::ensure_scratch(int64_t n_rows) {
  if (n_rows <= rows_) return Status::ok();
  const ModelConfig& c = config_;
  const auto grow = [&](Buffer& b, int64_t n_floats) -> Status {
    b = Buffer();  // free first: the device's memory may not hold both
    TS_ASSIGN_OR_RETURN(b, dev_.alloc(static_cast<size_t>(n_floats) * sizeof(float)));
    return Status::ok();
  };
  TS_RETURN_IF_ERROR(grow(x_, n_rows * c.dim));
  TS_RETURN_IF_ERROR(grow(xn_, n_rows * std::max(c.dim, c.q_dim())));
  TS_RETURN_IF_ERROR(grow(q_, n_rows * c.q_dim()));
  TS_RETURN_IF_ERROR(grow(k_buf_, n_rows * c.kv_dim()));
  TS_RETURN_IF_ERROR(grow(v_, n_rows * c.kv_dim()));
  TS_RETURN_IF_ERROR(grow(att_, n_rows * c.q_dim()));
  TS_RETURN_IF_ERROR(grow(gate_, n_rows * c.ffn_dim));
  TS_RETURN_IF_ERROR(grow(up_, n_rows * c.ffn_dim));
  TS_RETURN_IF_ERROR(grow(tmp_, n_rows * c.dim));
  TS_RETURN_IF_ERROR(grow(logits_, n_rows * std::max(c.n_vocab, c.dim)));
  cs_.resize(host_.inv_freqs.size());
  for (Buffer& b : cs_) TS_RETURN_IF_ERROR(grow(b, n_rows * c.head_dim));
  rows_ = n_rows;
  resident_bytes_ = bytes_held();
  return Status::ok();
}

Status DeviceDecoderModel::upload_ints(Buffer& b, const std::vector<int32_t>& v) {
  const size_t bytes = std::max<size_t>(v.size(), 1) * sizeof(int32_t);
  if (b.bytes() < bytes) {
    const size_t grown = std::max(bytes, b.bytes() * 2);
    b = Buffer();
    TS_ASSIGN_OR_RETURN(b, dev_.alloc(grown));
  }
  if (v.empty()) return Status::ok();
  return dev_.write(b, 0, v.data(), v.size() * sizeof(int32_t));
}

Result<DeviceKvMirror*> DeviceDecoderModel::mirror_for(KvCache& kv) {
  if (kv.mirror() != nullptr) {
    auto* m = dynamic_cast<DeviceKvMirror*>(kv.mirror());
    if (m == nullptr || m->owner() != this) {
      return invalid_argument("this KV cache holds another model's keys and values");
    }
    return m;
  }
  if (kv.dtype() != kernels::DType::kF16 && kv.dtype() != kernels::DType::kF32) {
    return invalid_argument("the device KV pool holds f16 or f32 values");
  }
  const size_t block_stride = static_cast<size_t>(kv.block_size()) * kv.row_bytes();
  const size_t bytes = static_cast<size_t>(kv.n_layers()) * static_cast<size_t>(kv.n_blocks()) *
                       block_stride;
  auto k = dev_.alloc(bytes);
  if (!k.is_ok()) {
    return Status(k.status().code(), fmt::format("the KV pool's keys ({} bytes) on {}: {}", bytes,
                                                 dev_.info().name, k.status().message()));
  }
  auto v = dev_.alloc(bytes);
  if (!v.is_ok()) {
    return Status(v.status().code(), fmt::format("the KV pool's values ({} bytes) on {}: {}",
                                                 bytes, dev_.info().name, v.status().message()));
  }
  device::DeviceKvPool pool;
  pool.dtype = kv.dtype();
  pool.n_layers = kv.n_layers();
  pool.n_blocks = kv.n_blocks();
  pool.block_size = kv.block_size();
  pool.kv_dim = kv.kv_dim();
  auto mirror = std::make_shared<DeviceKvMirror>(this, dev_, std::move(k).value(),
                                                 std::move(v).value(), pool, block_stride);
  DeviceKvMirror* raw = mirror.get();
  kv.set_mirror(std::move(mirror));
  return raw;
}

Status DeviceDecoderModel::run(const Batch& b, KvCache& kv, std::span<float> out,
                               bool hidden_only) {
  const ModelConfig& c = config_;
  TS_RETURN_IF_ERROR(check_batch(b, kv, c, out.size(), hidden_only ? c.dim : c.n_vocab));
  for (int32_t id : b.adapter_ids) {
    if (id >= 0) return invalid_argument(fmt::format("adapter id {} is not loaded in this model", id));
  }
  if (!resident_) {
    return Status(ErrorCode::kUnavailable,
                  "the model's weights are not on the device (released; restore them first)");
  }
  TS_ASSIGN_OR_RETURN(DeviceKvMirror * mirror, mirror_for(kv));
  device::DeviceKvPool& pool = mirror->pool();
  const int64_t T = b.size();
  TS_RETURN_IF_ERROR(ensure_scratch(T));

  // Host side of the step: embeddings, RoPE angles, where each row's K/V go, block tables.
  x_host_.resize(static_cast<size_t>(T * c.dim));
  cs_host_.resize(static_cast<size_t>(T * c.head_dim));
  const float embd_scale = std::sqrt(static_cast<float>(c.dim));
  for (int64_t t = 0; t < T; ++t) {
    float* xt = x_host_.data() + t * c.dim;
    kernels::dequantize_row(host_.token_embd, b.tokens[static_cast<size_t>(t)], xt);
    if (traits_.scale_embedding) {
      for (int64_t i = 0; i < c.dim; ++i) xt[i] *= embd_scale;
    }
  }
  TS_RETURN_IF_ERROR(dev_.write(x_, 0, x_host_.data(), x_host_.size() * sizeof(float)));
  for (size_t set = 0; set < host_.inv_freqs.size(); ++set) {
    for (int64_t t = 0; t < T; ++t) {
      kernels::rope_angles(b.positions[static_cast<size_t>(t)], host_.inv_freqs[set].data(),
                           c.head_dim, cs_host_.data() + t * c.head_dim);
    }
    TS_RETURN_IF_ERROR(dev_.write(cs_[set], 0, cs_host_.data(), cs_host_.size() * sizeof(float)));
  }
  const int64_t bs = kv.block_size();
  dst_host_.resize(static_cast<size_t>(T));
  table_at_.resize(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t slot = b.seq_ids[static_cast<size_t>(t)];
    const int64_t pos = b.positions[static_cast<size_t>(t)];
    const std::span<const int32_t> table = kv.block_table(slot);
    dst_host_[static_cast<size_t>(t)] =
        static_cast<int32_t>(table[static_cast<size_t>(pos / bs)] * bs + pos % bs);
  }
  // Adjacent rows of one sequence share one copy of its table, as far as their last position
  // reaches.
  table_host_.clear();
  for (int64_t t = 0; t < T; ++t) {
    const int32_t slot = b.seq_ids[static_cast<size_t>(t)];
    if (t > 0 && b.seq_ids[static_cast<size_t>(t - 1)] == slot) {
      table_at_[static_cast<size_t>(t)] = table_at_[static_cast<size_t>(t - 1)];
      continue;
    }
    int64_t last = b.positions[static_cast<size_t>(t)];
    for (int64_t u = t + 1; u < T && b.seq_ids[static_cast<size_t>(u)] == slot; ++u) {
      last = std::max<int64_t>(last, b.positions[static_cast<size_t>(u)]);
    }
    const std::span<const int32_t> table = kv.block_table(slot);
    table_at_[static_cast<size_t>(t)] = static_cast<int64_t>(table_host_.size());
    table_host_.insert(table_host_.end(), table.begin(),
                       table.begin() + static_cast<std::ptrdiff_t>(last / bs + 1));
  }
  TS_RETURN_IF_ERROR(upload_ints(dst_rows_, dst_host_));
  TS_RETURN_IF_ERROR(upload_ints(tables_, table_host_));
  // Row metadata per distinct window among the layers (most models: one, 0).
  meta_window_.clear();
  for (const DeviceLayer& l : layers_) {
    if (std::find(meta_window_.begin(), meta_window_.end(), l.window) == meta_window_.end()) {
      meta_window_.push_back(l.window);
    }
  }
  if (meta_.size() < meta_window_.size()) meta_.resize(meta_window_.size());
  for (size_t i = 0; i < meta_window_.size(); ++i) {
    const int64_t window = meta_window_[i];
    meta_host_.resize(static_cast<size_t>(3 * T));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t n_pos = b.positions[static_cast<size_t>(t)] + 1;
      const int64_t first = window > 0 && n_pos > window ? n_pos - window : 0;
      meta_host_[static_cast<size_t>(3 * t)] = static_cast<int32_t>(table_at_[static_cast<size_t>(t)]);
      meta_host_[static_cast<size_t>(3 * t + 1)] = static_cast<int32_t>(first);
      meta_host_[static_cast<size_t>(3 * t + 2)] = static_cast<int32_t>(n_pos);
    }
    TS_RETURN_IF_ERROR(upload_ints(meta_[i], meta_host_));
  }

  // The kernels scale scores by 1/sqrt(H); another scale is folded into Q.
  const float q_scale =
      traits_.attn_scale > 0.0f ? traits_.attn_scale * std::sqrt(static_cast<float>(c.head_dim)) : 1.0f;
  const device::RopeStyle rope =
      traits_.rope == RopeStyle::kNeox ? device::RopeStyle::kNeox : device::RopeStyle::kNormal;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const DeviceLayer& w = layers_[static_cast<size_t>(l)];
    TS_RETURN_IF_ERROR(k_.rmsnorm(x_, w.attn_norm, T, c.dim, c.rms_eps, xn_));
    TS_RETURN_IF_ERROR(matmul(w.wq, xn_, T, q_));
    TS_RETURN_IF_ERROR(matmul(w.wk, xn_, T, k_buf_));
    TS_RETURN_IF_ERROR(matmul(w.wv, xn_, T, v_));
    if (!w.bq.empty()) {
      TS_RETURN_IF_ERROR(k_.add_bias(q_, w.bq, T, c.q_dim()));
      TS_RETURN_IF_ERROR(k_.add_bias(k_buf_, w.bk, T, c.kv_dim()));
      TS_RETURN_IF_ERROR(k_.add_bias(v_, w.bv, T, c.kv_dim()));
    }
    if (!w.q_norm.empty()) {
      TS_RETURN_IF_ERROR(k_.rmsnorm(q_, w.q_norm, T * c.n_heads, c.head_dim, c.rms_eps, q_));
      TS_RETURN_IF_ERROR(k_.rmsnorm(k_buf_, w.k_norm, T * c.n_kv_heads, c.head_dim, c.rms_eps, k_buf_));
    }
    const Buffer& cs = cs_[static_cast<size_t>(w.rope_set)];
    TS_RETURN_IF_ERROR(k_.rope(q_, cs, T, c.n_heads, c.head_dim, rope));
    if (q_scale != 1.0f) TS_RETURN_IF_ERROR(k_.scale(q_, T * c.q_dim(), q_scale));
    TS_RETURN_IF_ERROR(k_.rope(k_buf_, cs, T, c.n_kv_heads, c.head_dim, rope));
    TS_RETURN_IF_ERROR(k_.kv_store(k_buf_, v_, dst_rows_, T, l, pool));
    const size_t meta = static_cast<size_t>(
        std::find(meta_window_.begin(), meta_window_.end(), w.window) - meta_window_.begin());
    TS_RETURN_IF_ERROR(k_.attention(q_, pool, l, meta_[meta], tables_, T, c.n_heads, c.n_kv_heads,
                                    c.head_dim, traits_.attn_softcap, att_));
    TS_RETURN_IF_ERROR(matmul(w.wo, att_, T, tmp_));
    TS_RETURN_IF_ERROR(post_norm(w.attn_post_norm, T));
    TS_RETURN_IF_ERROR(k_.add(x_, tmp_, T * c.dim));

    TS_RETURN_IF_ERROR(k_.rmsnorm(x_, w.ffn_norm, T, c.dim, c.rms_eps, xn_));
    TS_RETURN_IF_ERROR(matmul(w.w_gate, xn_, T, gate_));
    TS_RETURN_IF_ERROR(matmul(w.w_up, xn_, T, up_));
    if (traits_.ffn_activation == FfnActivation::kGeluTanh) {
      TS_RETURN_IF_ERROR(k_.gelu_tanh_mul(gate_, up_, T * c.ffn_dim));
    } else {
      TS_RETURN_IF_ERROR(k_.silu_mul(gate_, up_, T * c.ffn_dim));
    }
    TS_RETURN_IF_ERROR(matmul(w.w_down, gate_, T, tmp_));
    TS_RETURN_IF_ERROR(post_norm(w.ffn_post_norm, T));
    TS_RETURN_IF_ERROR(k_.add(x_, tmp_, T * c.dim));
  }

  // Final norm and output projection only for the rows that want logits: they are gathered
  // into tmp_ (consecutive rows' copies merged), unless every row wants them.
  const int64_t n_out = b.n_logits();
  const Buffer* rows = &x_;
  if (n_out < T) {
    const size_t row_bytes = static_cast<size_t>(c.dim) * sizeof(float);
    int64_t dst = 0;
    for (int64_t t = 0; t < T;) {
      if (!b.want_logits[static_cast<size_t>(t)]) {
        ++t;
        continue;
      }
      int64_t end = t + 1;
      while (end < T && b.want_logits[static_cast<size_t>(end)]) ++end;
      TS_RETURN_IF_ERROR(dev_.copy(x_, static_cast<size_t>(t) * row_bytes, tmp_,
                                   static_cast<size_t>(dst) * row_bytes,
                                   static_cast<size_t>(end - t) * row_bytes)
                             .status());
      dst += end - t;
      t = end;
    }
    rows = &tmp_;
  }
  if (n_out == 0) return dev_.finish();
  TS_RETURN_IF_ERROR(k_.rmsnorm(*rows, output_norm_, n_out, c.dim, c.rms_eps, xn_));
  if (hidden_only) {
    return dev_.read(xn_, 0, out.data(), static_cast<size_t>(n_out * c.dim) * sizeof(float));
  }
  TS_RETURN_IF_ERROR(matmul(output_, xn_, n_out, logits_));
  if (traits_.final_softcap > 0.0f) {
    TS_RETURN_IF_ERROR(k_.softcap(logits_, n_out * c.n_vocab, traits_.final_softcap));
  }
  return dev_.read(logits_, 0, out.data(), static_cast<size_t>(n_out * c.n_vocab) * sizeof(float));
}

}  // namespace

Result<std::unique_ptr<Model>> build_device_decoder(std::shared_ptr<const ModelFile> file,
                                                    const LoadOptions& options,
                                                    ModelConfig config, ArchTraits traits) {
  TS_ASSIGN_OR_RETURN(device::Device dev, device::Device::shared(options.device));
  TS_ASSIGN_OR_RETURN(device::DeviceKernels k, device::DeviceKernels::build(dev));
  auto model = std::make_unique<DeviceDecoderModel>(std::move(file), std::move(config),
                                                    std::move(traits), std::move(dev), std::move(k));
  TS_RETURN_IF_ERROR(model->load());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace tessera::model
