#include "tessera/device/device_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/device/cl_sources.h"

namespace tessera::device {
namespace {

using kernels::DType;

// Work-items per work-group: 64 (two warps, one AMD wavefront; PoCL vectorizes across them),
// fewer on a device that cannot run that many.
int pick_work_group_size(const DeviceInfo& info) {
  int wg = 64;
  while (wg > 1 && static_cast<uint64_t>(wg) > info.max_work_group_size) wg /= 2;
  return wg;
}

Status check_floats(const Buffer& b, int64_t n, const char* what) {
  if (b.empty() || b.bytes() / sizeof(float) < static_cast<uint64_t>(n)) {
    return invalid_argument(fmt::format("{}: needs {} floats, the buffer holds {} bytes", what, n,
                                        b.bytes()));
  }
  return Status::ok();
}

// An int32 buffer of at least n entries.
Status check_ints(const Buffer& b, int64_t n, const char* what) {
  if (b.empty() || b.bytes() / sizeof(int32_t) < static_cast<uint64_t>(n)) {
    return invalid_argument(fmt::format("{}: needs {} int32 values, the buffer holds {} bytes",
                                        what, n, b.bytes()));
  }
  return Status::ok();
}

Status check_int(int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX) {
    return invalid_argument(fmt::format("{} = {}: outside 0..2^31-1", what, v));
  }
  return Status::ok();
}

// A pool's shape and buffers: f16 or f32, every count within int32 (the kernels index rows with
// int), both buffers holding n_layers * n_blocks * block_size rows of kv_dim values.
Status check_pool(const DeviceKvPool& pool, int64_t layer, const char* what) {
  if (pool.dtype != DType::kF16 && pool.dtype != DType::kF32) {
    return invalid_argument(fmt::format("{}: a {} KV pool (f16 or f32)", what,
                                        kernels::dtype_name(pool.dtype)));
  }
  if (pool.n_layers < 1 || pool.n_blocks < 1 || pool.block_size < 1 || pool.kv_dim < 1) {
    return invalid_argument(fmt::format("{}: a KV pool of {} layers, {} blocks of {} rows of {} "
                                        "values (each must be positive)",
                                        what, pool.n_layers, pool.n_blocks, pool.block_size,
                                        pool.kv_dim));
  }
  if (layer < 0 || layer >= pool.n_layers) {
    return invalid_argument(fmt::format("{}: layer {} outside the pool's {} layers", what, layer,
                                        pool.n_layers));
  }
  TS_RETURN_IF_ERROR(check_int(pool.kv_dim, "KV pool kv_dim"));
  if (pool.n_blocks > INT32_MAX / pool.block_size) {
    return invalid_argument(fmt::format("{}: {} blocks of {} rows: more than 2^31-1 rows per "
                                        "layer",
                                        what, pool.n_blocks, pool.block_size));
  }
  const uint64_t elem = pool.dtype == DType::kF16 ? 2 : 4;
  const uint64_t rows = static_cast<uint64_t>(pool.n_layers) *
                        static_cast<uint64_t>(pool.n_blocks * pool.block_size);
  const uint64_t need = rows * static_cast<uint64_t>(pool.kv_dim) * elem;
  for (const Buffer* b : {pool.k, pool.v}) {
    if (b == nullptr || b->bytes() < need) {
      return invalid_argument(fmt::format("{}: the KV pool ({} layers x {} blocks x {} rows x {} "
                                          "{} values) needs {} bytes per buffer, {} holds {}",
                                          what, pool.n_layers, pool.n_blocks, pool.block_size,
                                          pool.kv_dim, kernels::dtype_name(pool.dtype), need,
                                          b == pool.k ? "K" : "V", b ? b->bytes() : 0));
    }
  }
  return Status::ok();
}

}  // namespace

bool DeviceKernels::supports(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kQ8_0 ||
         dtype == DType::kQ4_0 || dtype == DType::kQ5_0 || dtype == DType::kQ4_K ||
         dtype == DType::kQ6_K;
}

Result<DeviceKernels> DeviceKernels::build(const Device& device) {
  DeviceKernels k(device);
  k.wg_ = pick_work_group_size(device.info());
  if (k.wg_ < kTile) {  // matmul's first kTile work-items store the tile's outputs
    return unsupported(fmt::format("{} runs at most {} work-items per group; the device kernels "
                                   "need {}",
                                   device.info().name, device.info().max_work_group_size, kTile));
  }
  const std::string options =
      fmt::format("-cl-std=CL1.2 -DTS_WG={} -DTS_TILE={}", k.wg_, kTile);
  TS_ASSIGN_OR_RETURN(k.matmul_program_,
                      device.build_program("matmul", {cl_source::kMatmul}, options));
  TS_ASSIGN_OR_RETURN(k.ops_program_, device.build_program("ops", {cl_source::kReduce,
                                                                   cl_source::kOps},
                                                            options));
  TS_ASSIGN_OR_RETURN(k.attention_program_,
                      device.build_program("attention",
                                           {cl_source::kReduce, cl_source::kAttention}, options));
  TS_ASSIGN_OR_RETURN(k.matmul_f32_, k.matmul_program_.kernel("matmul_f32"));
  TS_ASSIGN_OR_RETURN(k.matmul_f16_, k.matmul_program_.kernel("matmul_f16"));
  TS_ASSIGN_OR_RETURN(k.matmul_q8_0_, k.matmul_program_.kernel("matmul_q8_0"));
  TS_ASSIGN_OR_RETURN(k.matmul_q4_0_, k.matmul_program_.kernel("matmul_q4_0"));
  TS_ASSIGN_OR_RETURN(k.matmul_q5_0_, k.matmul_program_.kernel("matmul_q5_0"));
  TS_ASSIGN_OR_RETURN(k.matmul_q4_k_, k.matmul_program_.kernel("matmul_q4_k"));
  TS_ASSIGN_OR_RETURN(k.matmul_q6_k_, k.matmul_program_.kernel("matmul_q6_k"));
  TS_ASSIGN_OR_RETURN(k.rmsnorm_, k.ops_program_.kernel("rmsnorm"));
  TS_ASSIGN_OR_RETURN(k.softmax_, k.ops_program_.kernel("softmax"));
  TS_ASSIGN_OR_RETURN(k.silu_mul_, k.ops_program_.kernel("silu_mul"));
  TS_ASSIGN_OR_RETURN(k.rope_, k.ops_program_.kernel("rope"));
  TS_ASSIGN_OR_RETURN(k.add_, k.ops_program_.kernel("add"));
  TS_ASSIGN_OR_RETURN(k.add_bias_, k.ops_program_.kernel("add_bias"));
  TS_ASSIGN_OR_RETURN(k.scale_, k.ops_program_.kernel("scale"));
  TS_ASSIGN_OR_RETURN(k.softcap_, k.ops_program_.kernel("softcap"));
  TS_ASSIGN_OR_RETURN(k.gelu_tanh_mul_, k.ops_program_.kernel("gelu_tanh_mul"));
  TS_ASSIGN_OR_RETURN(k.kv_store_f32_, k.ops_program_.kernel("kv_store_f32"));
  TS_ASSIGN_OR_RETURN(k.kv_store_f16_, k.ops_program_.kernel("kv_store_f16"));
  TS_ASSIGN_OR_RETURN(k.attention_f32_, k.attention_program_.kernel("attention_f32"));
  TS_ASSIGN_OR_RETURN(k.attention_f16_, k.attention_program_.kernel("attention_f16"));
  // A kernel may need more registers than the device's work-group maximum allows.
  for (const Kernel* kernel :
       {&k.matmul_f32_, &k.matmul_f16_, &k.matmul_q8_0_, &k.matmul_q4_0_, &k.matmul_q5_0_,
        &k.matmul_q4_k_, &k.matmul_q6_k_, &k.rmsnorm_, &k.softmax_, &k.attention_f32_,
        &k.attention_f16_}) {
    if (kernel->max_work_group_size() < static_cast<size_t>(k.wg_)) {
      return unsupported(fmt::format("device kernel {} runs at most {} work-items per group on {}; "
                                     "it is built for {}",
                                     kernel->name(), kernel->max_work_group_size(),
                                     device.info().name, k.wg_));
    }
  }
  return k;
}

Status DeviceKernels::matmul(const DeviceMatrix& w, const Buffer& x, int64_t n_tokens, Buffer& y) {
  Kernel* kernel = nullptr;
  switch (w.dtype) {
    case DType::kF32: kernel = &matmul_f32_; break;
    case DType::kF16: kernel = &matmul_f16_; break;
    case DType::kQ8_0: kernel = &matmul_q8_0_; break;
    case DType::kQ4_0: kernel = &matmul_q4_0_; break;
    case DType::kQ5_0: kernel = &matmul_q5_0_; break;
    case DType::kQ4_K: kernel = &matmul_q4_k_; break;
    case DType::kQ6_K: kernel = &matmul_q6_k_; break;
    default:
      return invalid_argument(fmt::format("no device matmul for {} weights (F32, F16, Q8_0, Q4_0, "
                                          "Q5_0, Q4_K, Q6_K)",
                                          kernels::dtype_name(w.dtype)));
  }
  const auto& info = kernels::dtype_info(w.dtype);
  if (w.n_rows < 1 || w.n_cols < 1 || w.n_cols % info.block_size != 0) {
    return invalid_argument(fmt::format("device matmul: a {} x {} {} matrix (columns must be a "
                                        "positive multiple of {})",
                                        w.n_rows, w.n_cols, info.name, info.block_size));
  }
  TS_RETURN_IF_ERROR(check_int(w.n_rows, "device matmul rows"));
  TS_RETURN_IF_ERROR(check_int(w.n_cols, "device matmul columns"));
  TS_RETURN_IF_ERROR(check_int(n_tokens, "device matmul tokens"));
  if (n_tokens < 1) return invalid_argument("device matmul of 0 tokens");
  const size_t row_bytes = kernels::dtype_row_bytes(w.dtype, w.n_cols);
  if (w.data == nullptr || w.data->bytes() / row_bytes < static_cast<uint64_t>(w.n_rows)) {
    return invalid_argument(fmt::format("device matmul: {} rows of {} bytes need {} bytes, the "
                                        "weight buffer holds {}",
                                        w.n_rows, row_bytes, w.n_rows * row_bytes,
                                        w.data ? w.data->bytes() : 0));
  }
  TS_RETURN_IF_ERROR(check_floats(x, n_tokens * w.n_cols, "device matmul input"));
  TS_RETURN_IF_ERROR(check_floats(y, n_tokens * w.n_rows, "device matmul output"));
  TS_RETURN_IF_ERROR(kernel->set_arg(0, *w.data));
  TS_RETURN_IF_ERROR(kernel->set_arg(1, static_cast<uint64_t>(row_bytes)));
  TS_RETURN_IF_ERROR(kernel->set_arg(2, x));
  TS_RETURN_IF_ERROR(kernel->set_arg(3, y));
  TS_RETURN_IF_ERROR(kernel->set_arg(4, static_cast<int32_t>(w.n_rows)));
  TS_RETURN_IF_ERROR(kernel->set_arg(5, static_cast<int32_t>(w.n_cols)));
  TS_RETURN_IF_ERROR(kernel->set_arg(6, static_cast<int32_t>(n_tokens)));
  const size_t tiles = static_cast<size_t>((n_tokens + kTile - 1) / kTile);
  const size_t wg = static_cast<size_t>(wg_);
  return device_.launch(*kernel, {static_cast<size_t>(w.n_rows) * wg, tiles}, {wg, 1}).status();
}

Status DeviceKernels::rmsnorm(const Buffer& x, const Buffer& weight, int64_t n_rows, int64_t n,
                              float eps, Buffer& out) {
  TS_RETURN_IF_ERROR(check_int(n_rows, "device rmsnorm rows"));
  TS_RETURN_IF_ERROR(check_int(n, "device rmsnorm width"));
  TS_RETURN_IF_ERROR(check_floats(x, n_rows * n, "device rmsnorm input"));
  TS_RETURN_IF_ERROR(check_floats(weight, n, "device rmsnorm weight"));
  TS_RETURN_IF_ERROR(check_floats(out, n_rows * n, "device rmsnorm output"));
  TS_RETURN_IF_ERROR(rmsnorm_.set_arg(0, x));
  TS_RETURN_IF_ERROR(rmsnorm_.set_arg(1, weight));
  TS_RETURN_IF_ERROR(rmsnorm_.set_arg(2, out));
  TS_RETURN_IF_ERROR(rmsnorm_.set_arg(3, static_cast<int32_t>(n)));
  TS_RETURN_IF_ERROR(rmsnorm_.set_arg(4, eps));
  const size_t wg = static_cast<size_t>(wg_);
  return device_.launch(rmsnorm_, {static_cast<size_t>(n_rows) * wg}, {wg}).status();
}

Status DeviceKernels::silu_mul(Buffer& gate, const Buffer& up, int64_t n) {
  if (n < 0) return invalid_argument("device silu_mul of a negative length");
  TS_RETURN_IF_ERROR(check_floats(gate, n, "device silu_mul gate"));
  TS_RETURN_IF_ERROR(check_floats(up, n, "device silu_mul up"));
  TS_RETURN_IF_ERROR(silu_mul_.set_arg(0, gate));
  TS_RETURN_IF_ERROR(silu_mul_.set_arg(1, up));
  TS_RETURN_IF_ERROR(silu_mul_.set_arg(2, static_cast<uint64_t>(n)));
  const size_t wg = static_cast<size_t>(wg_);
  const size_t global = (static_cast<size_t>(n) + wg - 1) / wg * wg;
  return device_.launch(silu_mul_, {global}, {wg}).status();
}

Status DeviceKernels::rope(Buffer& x, const Buffer& cs, int64_t n_tokens, int64_t n_heads,
                           int64_t head_dim, RopeStyle style) {
  TS_RETURN_IF_ERROR(check_int(n_tokens, "device rope tokens"));
  TS_RETURN_IF_ERROR(check_int(n_heads, "device rope heads"));
  TS_RETURN_IF_ERROR(check_int(head_dim, "device rope head_dim"));
  if (head_dim % 2 != 0) {
    return invalid_argument(fmt::format("device rope: head_dim {} is odd", head_dim));
  }
  TS_RETURN_IF_ERROR(check_floats(x, n_tokens * n_heads * head_dim, "device rope input"));
  TS_RETURN_IF_ERROR(check_floats(cs, n_tokens * head_dim, "device rope angles"));
  TS_RETURN_IF_ERROR(rope_.set_arg(0, x));
  TS_RETURN_IF_ERROR(rope_.set_arg(1, cs));
  TS_RETURN_IF_ERROR(rope_.set_arg(2, static_cast<int32_t>(n_heads)));
  TS_RETURN_IF_ERROR(rope_.set_arg(3, static_cast<int32_t>(head_dim)));
  TS_RETURN_IF_ERROR(rope_.set_arg(4, static_cast<int32_t>(style == RopeStyle::kNeox ? 1 : 0)));
  return device_
      .launch(rope_, {static_cast<size_t>(head_dim / 2), static_cast<size_t>(n_heads),
                      static_cast<size_t>(n_tokens)},
              {})
      .status();
}

Status DeviceKernels::softmax(Buffer& x, int64_t n_rows, int64_t n) {
  TS_RETURN_IF_ERROR(check_int(n_rows, "device softmax rows"));
  TS_RETURN_IF_ERROR(check_int(n, "device softmax width"));
  if (n < 1) return invalid_argument("device softmax of an empty row");
  TS_RETURN_IF_ERROR(check_floats(x, n_rows * n, "device softmax input"));
  TS_RETURN_IF_ERROR(softmax_.set_arg(0, x));
  TS_RETURN_IF_ERROR(softmax_.set_arg(1, static_cast<int32_t>(n)));
  const size_t wg = static_cast<size_t>(wg_);
  return device_.launch(softmax_, {static_cast<size_t>(n_rows) * wg}, {wg}).status();
}

// The elementwise kernels: global n rounded up to the work-group.
size_t DeviceKernels::elementwise_range(int64_t n) const {
  const size_t wg = static_cast<size_t>(wg_);
  return (static_cast<size_t>(n) + wg - 1) / wg * wg;
}

Status DeviceKernels::add(Buffer& x, const Buffer& y, int64_t n) {
  if (n < 0) return invalid_argument("device add of a negative length");
  TS_RETURN_IF_ERROR(check_floats(x, n, "device add x"));
  TS_RETURN_IF_ERROR(check_floats(y, n, "device add y"));
  TS_RETURN_IF_ERROR(add_.set_arg(0, x));
  TS_RETURN_IF_ERROR(add_.set_arg(1, y));
  TS_RETURN_IF_ERROR(add_.set_arg(2, static_cast<uint64_t>(n)));
  return device_.launch(add_, {elementwise_range(n)}, {static_cast<size_t>(wg_)}).status();
}

Status DeviceKernels::add_bias(Buffer& x, const Buffer& bias, int64_t n_rows, int64_t n) {
  TS_RETURN_IF_ERROR(check_int(n_rows, "device add_bias rows"));
  TS_RETURN_IF_ERROR(check_int(n, "device add_bias width"));
  if (n < 1) return invalid_argument("device add_bias of an empty row");
  TS_RETURN_IF_ERROR(check_floats(x, n_rows * n, "device add_bias x"));
  TS_RETURN_IF_ERROR(check_floats(bias, n, "device add_bias bias"));
  TS_RETURN_IF_ERROR(add_bias_.set_arg(0, x));
  TS_RETURN_IF_ERROR(add_bias_.set_arg(1, bias));
  TS_RETURN_IF_ERROR(add_bias_.set_arg(2, static_cast<uint64_t>(n_rows * n)));
  TS_RETURN_IF_ERROR(add_bias_.set_arg(3, static_cast<int32_t>(n)));
  return device_.launch(add_bias_, {elementwise_range(n_rows * n)}, {static_cast<size_t>(wg_)})
      .status();
}

Status DeviceKernels::scale(Buffer& x, int64_t n, float s) {
  if (n < 0) return invalid_argument("device scale of a negative length");
  TS_RETURN_IF_ERROR(check_floats(x, n, "device scale x"));
  TS_RETURN_IF_ERROR(scale_.set_arg(0, x));
  TS_RETURN_IF_ERROR(scale_.set_arg(1, static_cast<uint64_t>(n)));
  TS_RETURN_IF_ERROR(scale_.set_arg(2, s));
  return device_.launch(scale_, {elementwise_range(n)}, {static_cast<size_t>(wg_)}).status();
}

Status DeviceKernels::softcap(Buffer& x, int64_t n, float cap) {
  if (n < 0) return invalid_argument("device softcap of a negative length");
  if (!(cap > 0.0f)) {
    return invalid_argument(fmt::format("device softcap: cap {} (must be > 0)", cap));
  }
  TS_RETURN_IF_ERROR(check_floats(x, n, "device softcap x"));
  TS_RETURN_IF_ERROR(softcap_.set_arg(0, x));
  TS_RETURN_IF_ERROR(softcap_.set_arg(1, static_cast<uint64_t>(n)));
  TS_RETURN_IF_ERROR(softcap_.set_arg(2, cap));
  TS_RETURN_IF_ERROR(softcap_.set_arg(3, 1.0f / cap));  // as kernels::softcap rounds it
  return device_.launch(softcap_, {elementwise_range(n)}, {static_cast<size_t>(wg_)}).status();
}

Status DeviceKernels::gelu_tanh_mul(Buffer& gate, const Buffer& up, int64_t n) {
  if (n < 0) return invalid_argument("device gelu_tanh_mul of a negative length");
  TS_RETURN_IF_ERROR(check_floats(gate, n, "device gelu_tanh_mul gate"));
  TS_RETURN_IF_ERROR(check_floats(up, n, "device gelu_tanh_mul up"));
  TS_RETURN_IF_ERROR(gelu_tanh_mul_.set_arg(0, gate));
  TS_RETURN_IF_ERROR(gelu_tanh_mul_.set_arg(1, up));
  TS_RETURN_IF_ERROR(gelu_tanh_mul_.set_arg(2, static_cast<uint64_t>(n)));
  return device_.launch(gelu_tanh_mul_, {elementwise_range(n)}, {static_cast<size_t>(wg_)})
      .status();
}

Status DeviceKernels::kv_store(const Buffer& k, const Buffer& v, const Buffer& dst_rows,
                               int64_t n_tokens, int64_t layer, DeviceKvPool& pool) {
  TS_RETURN_IF_ERROR(check_pool(pool, layer, "device kv_store"));
  TS_RETURN_IF_ERROR(check_int(n_tokens, "device kv_store tokens"));
  TS_RETURN_IF_ERROR(check_floats(k, n_tokens * pool.kv_dim, "device kv_store k"));
  TS_RETURN_IF_ERROR(check_floats(v, n_tokens * pool.kv_dim, "device kv_store v"));
  TS_RETURN_IF_ERROR(check_ints(dst_rows, n_tokens, "device kv_store dst_rows"));
  Kernel& kernel = pool.dtype == DType::kF16 ? kv_store_f16_ : kv_store_f32_;
  const int64_t rows_per_layer = pool.n_blocks * pool.block_size;
  TS_RETURN_IF_ERROR(kernel.set_arg(0, k));
  TS_RETURN_IF_ERROR(kernel.set_arg(1, v));
  TS_RETURN_IF_ERROR(kernel.set_arg(2, dst_rows));
  TS_RETURN_IF_ERROR(kernel.set_arg(3, *pool.k));
  TS_RETURN_IF_ERROR(kernel.set_arg(4, *pool.v));
  TS_RETURN_IF_ERROR(kernel.set_arg(5, static_cast<uint64_t>(layer * rows_per_layer)));
  TS_RETURN_IF_ERROR(kernel.set_arg(6, static_cast<int32_t>(rows_per_layer)));
  TS_RETURN_IF_ERROR(kernel.set_arg(7, static_cast<int32_t>(pool.kv_dim)));
  return device_
      .launch(kernel, {static_cast<size_t>(pool.kv_dim), static_cast<size_t>(n_tokens)}, {})
      .status();
}

Status DeviceKernels::attention(const Buffer& q, const DeviceKvPool& pool, int64_t layer,
                                const Buffer& row_meta, const Buffer& tables, int64_t n_tokens,
                                int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                                float softcap, Buffer& out) {
  TS_RETURN_IF_ERROR(check_pool(pool, layer, "device attention"));
  TS_RETURN_IF_ERROR(check_int(n_tokens, "device attention tokens"));
  TS_RETURN_IF_ERROR(check_int(n_heads, "device attention heads"));
  if (head_dim < 1 || head_dim > kMaxAttentionHeadDim) {
    return invalid_argument(fmt::format("device attention: head_dim {} outside 1..{}", head_dim,
                                        kMaxAttentionHeadDim));
  }
  if (n_kv_heads < 1 || n_heads < n_kv_heads || n_heads % n_kv_heads != 0) {
    return invalid_argument(fmt::format("device attention: {} query heads over {} KV heads (a "
                                        "positive multiple)",
                                        n_heads, n_kv_heads));
  }
  if (n_kv_heads * head_dim != pool.kv_dim) {
    return invalid_argument(fmt::format("device attention: {} KV heads of {} values, the pool's "
                                        "rows hold {}",
                                        n_kv_heads, head_dim, pool.kv_dim));
  }
  if (!(softcap >= 0.0f)) {
    return invalid_argument(fmt::format("device attention: softcap {} (0 for none, or > 0)",
                                        softcap));
  }
  TS_RETURN_IF_ERROR(check_floats(q, n_tokens * n_heads * head_dim, "device attention q"));
  TS_RETURN_IF_ERROR(check_floats(out, n_tokens * n_heads * head_dim, "device attention out"));
  TS_RETURN_IF_ERROR(check_ints(row_meta, n_tokens * 3, "device attention row_meta"));
  TS_RETURN_IF_ERROR(check_ints(tables, 1, "device attention tables"));
  const uint64_t n_table = std::min<uint64_t>(tables.bytes() / sizeof(int32_t), INT32_MAX);
  Kernel& kernel = pool.dtype == DType::kF16 ? attention_f16_ : attention_f32_;
  // Rounded as the CPU's reference rounds them (kernels/attention.cpp).
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const float inv_cap = softcap > 0.0f ? 1.0f / softcap : 0.0f;
  TS_RETURN_IF_ERROR(kernel.set_arg(0, q));
  TS_RETURN_IF_ERROR(kernel.set_arg(1, *pool.k));
  TS_RETURN_IF_ERROR(kernel.set_arg(2, *pool.v));
  TS_RETURN_IF_ERROR(kernel.set_arg(3, row_meta));
  TS_RETURN_IF_ERROR(kernel.set_arg(4, tables));
  TS_RETURN_IF_ERROR(kernel.set_arg(5, out));
  TS_RETURN_IF_ERROR(
      kernel.set_arg(6, static_cast<uint64_t>(layer * pool.n_blocks * pool.block_size)));
  TS_RETURN_IF_ERROR(kernel.set_arg(7, static_cast<int32_t>(pool.n_blocks)));
  TS_RETURN_IF_ERROR(kernel.set_arg(8, static_cast<int32_t>(pool.block_size)));
  TS_RETURN_IF_ERROR(kernel.set_arg(9, static_cast<int32_t>(pool.kv_dim)));
  TS_RETURN_IF_ERROR(kernel.set_arg(10, static_cast<int32_t>(n_table)));
  TS_RETURN_IF_ERROR(kernel.set_arg(11, static_cast<int32_t>(n_heads / n_kv_heads)));
  TS_RETURN_IF_ERROR(kernel.set_arg(12, static_cast<int32_t>(head_dim)));
  TS_RETURN_IF_ERROR(kernel.set_arg(13, scale));
  TS_RETURN_IF_ERROR(kernel.set_arg(14, softcap));
  TS_RETURN_IF_ERROR(kernel.set_arg(15, inv_cap));
  const size_t wg = static_cast<size_t>(wg_);
  return device_
      .launch(kernel, {static_cast<size_t>(n_heads) * wg, static_cast<size_t>(n_tokens)}, {wg, 1})
      .status();
}

}  // namespace tessera::device
