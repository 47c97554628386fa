#include "tessera/model/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/sparse_quants.h"
#include "tessera/model/format/gguf_writer.h"

namespace tessera::model {
namespace {

Status invalid(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

// What happens to one tensor.
struct Plan {
  bool prune = false;
  kernels::DType to = kernels::DType::kF32;
  std::string why;
};

Result<Plan> plan_tensor(const TensorInfo& ti, const PruneOptions& o) {
  Plan p;
  if (!is_prunable_tensor(ti.name) || ti.n_dims != 2) {
    p.to = ti.dtype;
    p.why = "copied";
    return p;
  }
  p.prune = true;
  const int64_t cols = ti.ne[0];
  if (cols % o.pattern.m != 0) {
    return invalid(fmt::format("tensor '{}': rows of {} weights are not whole groups of {} ({}:{})",
                               ti.name, cols, o.pattern.m, o.pattern.n, o.pattern.m));
  }
  const kernels::DType base = o.type.value_or(ti.dtype);
  if (o.dense) {
    p.to = base;
    p.why = "dense";
  } else {
    const auto sparse = kernels::sparse_2of4_type_for(base);
    if (!sparse) {
      return invalid(fmt::format(
          "tensor '{}' is {}; the packed 2:4 types pack f16, q8_0 or q4_0: pass --type f16|q8_0|q4_0 "
          "or --dense",
          ti.name, kernels::dtype_name(base)));
    }
    const int64_t block = kernels::dtype_info(*sparse).block_size;
    if (cols % block == 0) {
      p.to = *sparse;
      p.why = "packed";
    } else {
      p.to = base;
      p.why = fmt::format("fallback: {} % {} (pruned, dense)", cols, block);
    }
  }
  if (cols % kernels::dtype_info(p.to).block_size != 0) {
    // As quantize falls back: a row the dense type's blocks do not divide is stored in f16.
    p.why = fmt::format("fallback: {} % {} (pruned, f16)", cols, kernels::dtype_info(p.to).block_size);
    p.to = kernels::DType::kF16;
  }
  return p;
}

}  // namespace

Result<PrunePattern> parse_prune_pattern(std::string_view text) {
  const size_t colon = text.find(':');
  PrunePattern p;
  auto parse = [](std::string_view s, int* v) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (colon == std::string_view::npos || !parse(text.substr(0, colon), &p.n) ||
      !parse(text.substr(colon + 1), &p.m) || p.n <= 0 || p.n >= p.m || p.m > 64) {
    return invalid(fmt::format("pattern '{}' is not N:M with 0 < N < M <= 64 (e.g. 2:4)", text));
  }
  return p;
}

Result<PruneMethod> parse_prune_method(std::string_view text) {
  if (text == "magnitude") return PruneMethod::kMagnitude;
  if (text == "wanda") return PruneMethod::kWanda;
  return invalid(fmt::format("method '{}' is not one of magnitude, wanda", text));
}

void select_n_of_m(const float* score, int64_t n_cols, PrunePattern p, uint8_t* keep) {
  TS_CHECK(p.m > 0 && p.m <= 64 && n_cols % p.m == 0);
  int order[64];
  for (int64_t g = 0; g < n_cols; g += p.m) {
    for (int j = 0; j < p.m; ++j) order[j] = j;
    // Highest score first; stable, so ties keep the earlier column.
    std::stable_sort(order, order + p.m, [&](int a, int b) { return score[g + a] > score[g + b]; });
    for (int j = 0; j < p.m; ++j) keep[g + j] = 0;
    for (int j = 0; j < p.n; ++j) keep[g + order[j]] = 1;
  }
}

void prune_scores(const float* w, const float* col_norm, int64_t n_cols, float* score) {
  for (int64_t j = 0; j < n_cols; ++j) {
    score[j] = std::fabs(w[j]) * (col_norm != nullptr ? col_norm[j] : 1.0f);
  }
}

bool is_prunable_tensor(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot == 4) return false;
  for (char c : name.substr(4, dot - 4)) {
    if (c < '0' || c > '9') return false;
  }
  const std::string_view rest = name.substr(dot + 1);
  for (std::string_view m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                             "ffn_down"}) {
    if (rest.size() == m.size() + 7 && rest.substr(0, m.size()) == m &&
        rest.substr(m.size()) == ".weight") {
      return true;
    }
  }
  return false;
}

Result<PruneReport> prune_model(const ModelFile& in, const std::string& out_path,
                                const PruneOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.pattern.n <= 0 || o.pattern.n >= o.pattern.m || o.pattern.m > 64) {
    return invalid(fmt::format("pattern {}:{} is not N:M with 0 < N < M <= 64", o.pattern.n,
                               o.pattern.m));
  }
  if (!o.dense && (o.pattern.n != 2 || o.pattern.m != 4)) {
    return invalid(fmt::format("packed output is 2:4 only; pattern {}:{} needs --dense",
                               o.pattern.n, o.pattern.m));
  }
  if (o.method == PruneMethod::kWanda && !o.column_norms) {
    return invalid("Wanda pruning needs activation norms from a calibration text (--calib)");
  }
  PruneReport report;
  std::vector<Plan> plans;
  for (const TensorInfo& ti : in.tensors) {
    if (!kernels::dtype_info(ti.dtype).supported) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("tensor '{}' has type {}, which Tessera cannot read yet", ti.name,
                                kernels::dtype_name(ti.dtype)));
    }
    TS_ASSIGN_OR_RETURN(Plan p, plan_tensor(ti, o));
    plans.push_back(std::move(p));
    report.bytes_in += ti.n_bytes;
  }
  GgufWriter w;
  for (const auto& [key, value] : in.metadata.entries()) w.metadata().set(key, value);
  w.metadata().set("tessera.prune.pattern",
                   GgufValue::string(fmt::format("{}:{}", o.pattern.n, o.pattern.m)));
  w.metadata().set("tessera.prune.method",
                   GgufValue::string(o.method == PruneMethod::kWanda ? "wanda" : "magnitude"));
  const int n_threads = o.n_threads > 0
                            ? o.n_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  uint64_t done = 0;
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    const TensorInfo& ti = in.tensors[i];
    const Plan& p = plans[i];
    std::vector<int64_t> shape(ti.ne.begin(), ti.ne.begin() + std::max(1, ti.n_dims));
    report.entries.push_back({ti.name, ti.dtype, p.to, p.prune, p.why});
    if (!p.prune) {
      TS_RETURN_IF_ERROR(w.add_tensor(ti.name, ti.dtype, shape, {ti.data, ti.n_bytes}));
      report.bytes_out += ti.n_bytes;
    } else {
      const int64_t cols = ti.ne[0], rows = ti.n_rows();
      std::vector<float> norms;
      if (o.method == PruneMethod::kWanda) {
        norms = o.column_norms(ti.name);
        if (static_cast<int64_t>(norms.size()) != cols) {
          return invalid(fmt::format("tensor '{}': no activation norms for its {} input columns "
                                     "(the calibration statistics have {})",
                                     ti.name, cols, norms.size()));
        }
      }
      // The scalar references define the files (as quantize does).
      const auto& src = kernels::kernels_for(kernels::scalar_kernel_table(), ti.dtype);
      const auto& dst = kernels::kernels_for(kernels::scalar_kernel_table(), p.to);
      const bool packed = kernels::is_2of4_dtype(p.to);
      const size_t in_row = kernels::dtype_row_bytes(ti.dtype, cols);
      const size_t out_row = kernels::dtype_row_bytes(p.to, cols);
      std::vector<std::byte> out(out_row * static_cast<size_t>(rows));
      std::atomic<int64_t> zeroed{0};
      pool.parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                        [&](int64_t begin, int64_t end) {
        std::vector<float> f(static_cast<size_t>(cols)), score(f.size());
        std::vector<uint8_t> keep(f.size());
        int64_t n_zeroed = 0;
        for (int64_t r = begin; r < end; ++r) {
          src.to_float(ti.data + static_cast<size_t>(r) * in_row, f.data(), cols);
          prune_scores(f.data(), norms.empty() ? nullptr : norms.data(), cols, score.data());
          select_n_of_m(score.data(), cols, o.pattern, keep.data());
          std::byte* row_out = out.data() + static_cast<size_t>(r) * out_row;
          if (packed) {
            kernels::encode_2of4_row(p.to, f.data(), keep.data(), row_out, cols);
          } else {
            for (int64_t j = 0; j < cols; ++j) {
              if (keep[j] == 0) f[j] = 0.0f;
            }
            dst.from_float(f.data(), row_out, cols);
          }
          for (int64_t j = 0; j < cols; ++j) n_zeroed += keep[j] == 0 ? 1 : 0;
        }
        zeroed.fetch_add(n_zeroed, std::memory_order_relaxed);
      });
      TS_RETURN_IF_ERROR(w.add_tensor(ti.name, p.to, shape, out));
      report.bytes_out += out.size();
      ++report.n_pruned;
      report.n_weights_pruned += cols * rows;
      report.n_weights_zeroed += zeroed.load();
    }
    done += ti.n_bytes;
    if (o.progress) o.progress(done, report.bytes_in);
  }
  TS_RETURN_IF_ERROR(w.write(out_path));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace tessera::model
