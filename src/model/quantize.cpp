#include "tessera/model/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <span>
#include <thread>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/weighted_quantize.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/gptq.h"

namespace tessera::model {

using kernels::DType;

namespace {

bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Layers in the first and last eighth, and every third layer in between, get more bits in the
// _M mixes.
bool more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The type llama.cpp falls back to when a row is not a whole number of the type's blocks.
DType fallback_of(DType t) {
  switch (t) {
    case DType::kIQ4_XS: return DType::kIQ4_NL;
    case DType::kQ2_K:
    case DType::kQ3_K: return DType::kQ4_0;
    case DType::kQ4_K: return DType::kQ5_0;
    case DType::kQ5_K: return DType::kQ5_1;
    case DType::kQ6_K: return DType::kQ8_0;
    default: return DType::kF16;
  }
}

}  // namespace

const std::vector<QuantType>& quant_types() {
  static const std::vector<QuantType> kTypes = {
      {"q2_k", DType::kQ2_K, 10},    {"q3_k_s", DType::kQ3_K, 11}, {"q3_k_m", DType::kQ3_K, 12},
      {"q3_k_l", DType::kQ3_K, 13},  {"iq4_xs", DType::kIQ4_XS, 30}, {"iq4_nl", DType::kIQ4_NL, 25},
      {"q4_0", DType::kQ4_0, 2},     {"q4_1", DType::kQ4_1, 3},    {"q4_k_s", DType::kQ4_K, 14},
      {"q4_k_m", DType::kQ4_K, 15},  {"q5_0", DType::kQ5_0, 8},    {"q5_1", DType::kQ5_1, 9},
      {"q5_k_s", DType::kQ5_K, 16},  {"q5_k_m", DType::kQ5_K, 17}, {"q6_k", DType::kQ6_K, 18},
      {"q8_0", DType::kQ8_0, 7},     {"bf16", DType::kBF16, 32},   {"f16", DType::kF16, 1},
      {"f32", DType::kF32, 0},
  };
  return kTypes;
}

Result<QuantType> find_quant_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string known;
  for (const QuantType& t : quant_types()) {
    if (t.name == lower) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  return invalid_argument(fmt::format("unknown quantization type '{}' (known: {})", name, known));
}

Result<std::vector<QuantPlanEntry>> plan_quantization(const ModelFile& in, const QuantType& type) {
  auto arch_name = in.metadata.get_string("general.architecture");
  const std::string arch = arch_name.is_ok() ? *arch_name : "llama";
  TS_ASSIGN_OR_RETURN(const int64_t n_layers, in.metadata.get_int(arch + ".block_count"));
  TS_ASSIGN_OR_RETURN(const int64_t n_head,
                      in.metadata.get_int_or(arch + ".attention.head_count", 1));
  TS_ASSIGN_OR_RETURN(const int64_t n_head_kv,
                      in.metadata.get_int_or(arch + ".attention.head_count_kv", n_head));
  const int64_t n_gqa = n_head_kv > 0 ? n_head / n_head_kv : 1;
  const bool tied = in.find_tensor("output.weight") == nullptr;
  const std::string& t = type.name;
  const bool quantized = !is_float_type(type.base);

  std::vector<QuantPlanEntry> plan;
  for (const TensorInfo& ti : in.tensors) {
    QuantPlanEntry e{ti.name, ti.dtype, ti.dtype, "kept"};
    if (ti.n_dims < 2 || !ti.name.ends_with(".weight")) {
      e.to = DType::kF32;
      e.why = ti.dtype == DType::kF32 ? "kept (1-D)" : "1-D: f32";
      plan.push_back(std::move(e));
      continue;
    }
    DType to = type.base;
    std::string why = "base";
    int64_t layer = -1;
    if (ti.name.rfind("blk.", 0) == 0) {
      long long l = -1;
      if (std::sscanf(ti.name.c_str(), "blk.%lld.", &l) == 1) layer = l;
      if (layer < 0 || layer >= n_layers) {
        return invalid_argument(fmt::format("cannot read a layer below {} from tensor '{}'",
                                            n_layers, ti.name));
      }
    }
    const auto raise = [&](DType d, std::string reason) {
      to = d;
      why = std::move(reason);
    };
    const bool is_output =
        ti.name == "output.weight" || (tied && ti.name == "token_embd.weight");
    if (quantized && is_output) {
      if (ti.ne[0] % 256 != 0) {
        raise(DType::kQ8_0, "output (rows not 256-blocks)");
      } else if (type.base != DType::kQ8_0) {
        raise(DType::kQ6_K, "output");
      }
    } else if (quantized && ti.name.ends_with(".attn_v.weight")) {
      if (t == "q2_k") {
        raise(n_gqa >= 4 ? DType::kQ4_K : DType::kQ3_K, "attn_v");
      } else if (t == "q3_k_m") {
        raise(layer < 2 ? DType::kQ5_K : DType::kQ4_K, "attn_v");
      } else if (t == "q3_k_l") {
        raise(DType::kQ5_K, "attn_v");
      } else if ((t == "iq4_nl" || t == "iq4_xs") && n_gqa >= 4) {
        raise(DType::kQ5_K, "attn_v (grouped-query)");
      } else if ((t == "q4_k_m" || t == "q5_k_m") && more_bits(layer, n_layers)) {
        raise(DType::kQ6_K, fmt::format("attn_v, more bits (layer {})", layer));
      } else if (t == "q4_k_s" && layer < 4) {
        raise(DType::kQ5_K, fmt::format("attn_v (layer {})", layer));
      }
    } else if (quantized && ti.name.ends_with(".ffn_down.weight")) {
      if (t == "q2_k") {
        raise(DType::kQ3_K, "ffn_down");
      } else if (t == "q3_k_m") {
        raise(layer < n_layers / 16 ? DType::kQ5_K : DType::kQ4_K, "ffn_down");
      } else if (t == "q3_k_l") {
        raise(DType::kQ5_K, "ffn_down");
      } else if ((t == "q4_k_m" || t == "q5_k_m") && more_bits(layer, n_layers)) {
        raise(DType::kQ6_K, fmt::format("ffn_down, more bits (layer {})", layer));
      } else if ((t == "iq4_nl" || t == "iq4_xs") && layer < n_layers / 8) {
        raise(DType::kQ5_K, fmt::format("ffn_down (layer {})", layer));
      } else if (t == "q4_k_s" && layer < n_layers / 8) {
        raise(DType::kQ5_K, fmt::format("ffn_down (layer {})", layer));
      }
    } else if (quantized && ti.name.ends_with(".attn_output.weight")) {
      if (t == "q2_k") {
        raise(DType::kQ3_K, "attn_output");
      } else if (t == "q3_k_m") {
        raise(DType::kQ4_K, "attn_output");
      } else if (t == "q3_k_l") {
        raise(DType::kQ5_K, "attn_output");
      }
    }
    // Rows the type's blocks do not divide.
    while (ti.ne[0] % kernels::dtype_info(to).block_size != 0) {
      const DType fb = fallback_of(to);
      why += fmt::format("; {} % {}: {}", ti.ne[0], kernels::dtype_info(to).block_size,
                         kernels::dtype_name(fb));
      to = fb;
    }
    if (!kernels::dtype_info(to).supported) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("tensor '{}' would be {}, which this build cannot write yet",
                                ti.name, kernels::dtype_name(to)));
    }
    e.to = to;
    e.why = std::move(why);
    plan.push_back(std::move(e));
  }
  return plan;
}

Result<QuantizeReport> quantize_model(const ModelFile& in, const QuantType& type,
                                      const std::string& out_path,
                                      const QuantizeOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  QuantizeReport report;
  TS_ASSIGN_OR_RETURN(report.plan, plan_quantization(in, type));
  for (const TensorInfo& ti : in.tensors) {
    if (!kernels::dtype_info(ti.dtype).supported) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("tensor '{}' has type {}, which Tessera cannot read yet", ti.name,
                                kernels::dtype_name(ti.dtype)));
    }
    report.bytes_in += ti.n_bytes;
  }
  GgufWriter w;
  for (const auto& [key, value] : in.metadata.entries()) w.metadata().set(key, value);
  w.metadata().set("general.file_type", GgufValue::u32(type.file_type));
  w.metadata().set("general.quantization_version", GgufValue::u32(2));

  const int n_threads = options.n_threads > 0
                            ? options.n_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  uint64_t done = 0;
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const TensorInfo& ti = in.tensors[i];
    const QuantPlanEntry& e = report.plan[i];
    std::vector<int64_t> shape(ti.ne.begin(), ti.ne.begin() + std::max(1, ti.n_dims));
    if (e.to == ti.dtype) {
      TS_RETURN_IF_ERROR(w.add_tensor(ti.name, ti.dtype, shape, {ti.data, ti.n_bytes}));
    } else {
      ++report.n_quantized;
      // Row by row through f32: from the input type's to_float to the output type's from_float
      // (the scalar references: the reference quantizers define the files).
      const int64_t row = ti.ne[0];
      const int64_t rows = ti.n_rows();
      const auto& src = kernels::kernels_for(kernels::scalar_kernel_table(), ti.dtype);
      const auto& dst = kernels::kernels_for(kernels::scalar_kernel_table(), e.to);
      const size_t in_row = kernels::dtype_row_bytes(ti.dtype, row);
      const size_t out_row = kernels::dtype_row_bytes(e.to, row);
      // Importance per column (the input's mean square), when the matrix has statistics and the
      // type a weighted quantizer.
      const kernels::WeightedFromFloatFn weighted = kernels::weighted_from_float(e.to);
      std::vector<float> importance;
      const std::vector<double>* xxt = nullptr;  // the whole second moments, when present
      if (options.imatrix != nullptr && weighted != nullptr) {
        const auto it = options.imatrix->tensors.find(ti.name);
        if (it == options.imatrix->tensors.end() || it->second.count <= 0) {
          report.without_imatrix.push_back(ti.name);
        } else if (static_cast<int64_t>(it->second.sum_sq.size()) != row) {
          return invalid_argument(fmt::format(
              "the importance matrix has {} columns for tensor '{}', whose rows have {} values "
              "(was it made for another model?)",
              it->second.sum_sq.size(), ti.name, row));
        } else {
          importance.resize(static_cast<size_t>(row));
          for (int64_t j = 0; j < row; ++j) {
            importance[static_cast<size_t>(j)] = static_cast<float>(
                it->second.sum_sq[static_cast<size_t>(j)] / static_cast<double>(it->second.count));
          }
          ++report.n_weighted;
          if (static_cast<int64_t>(it->second.sum_xxt.size()) == row * row) {
            xxt = &it->second.sum_xxt;
          }
        }
      }
      std::vector<std::byte> out(out_row * static_cast<size_t>(rows));
      if (xxt != nullptr) {
        std::vector<float> m(static_cast<size_t>(rows * row));
        pool.parallel_for(rows, 64, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            src.to_float(ti.data + static_cast<size_t>(r) * in_row,
                         m.data() + static_cast<size_t>(r * row), row);
          }
        });
        Status st = gptq_quantize(m, rows, row, *xxt, e.to, out, pool);
        if (!st.is_ok()) return st.with_context(ti.name);
        ++report.n_error_feedback;
      } else {
        pool.parallel_for(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, row)),
                          [&](int64_t begin, int64_t end) {
                            std::vector<float> f(static_cast<size_t>(row));
                            std::vector<float> wt(importance.empty() ? 0 : static_cast<size_t>(row));
                            for (int64_t r = begin; r < end; ++r) {
                              src.to_float(ti.data + static_cast<size_t>(r) * in_row, f.data(), row);
                              std::byte* o = out.data() + static_cast<size_t>(r) * out_row;
                              if (importance.empty()) {
                                dst.from_float(f.data(), o, row);
                              } else {
                                kernels::importance_weights(f.data(), importance.data(), row,
                                                            wt.data());
                                weighted(f.data(), o, row, wt.data());
                              }
                            }
                          });
      }
      TS_RETURN_IF_ERROR(w.add_tensor(ti.name, e.to, shape, out));
    }
    report.bytes_out += kernels::dtype_row_bytes(e.to, ti.ne[0]) * static_cast<size_t>(ti.n_rows());
    done += ti.n_bytes;
    if (options.progress) options.progress(done, report.bytes_in);
  }
  TS_RETURN_IF_ERROR(w.write(out_path));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace tessera::model
