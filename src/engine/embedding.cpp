#include "tessera/engine/embedding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/model/batch.h"
#include "tessera/model/kv_cache.h"

namespace tessera::engine {

std::string_view pooling_name(Pooling p) { return p == Pooling::kLast ? "last" : "mean"; }

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "last") return Pooling::kLast;
  return invalid_argument(fmt::format("unknown pooling '{}': expected mean or last", name));
}

Pooling pooling_from_metadata(const model::Metadata& metadata) {
  auto arch = metadata.get_string_or("general.architecture", "llama");
  if (!arch.is_ok()) return Pooling::kMean;
  // llama.cpp's numbering: 0 none, 1 mean, 2 cls, 3 last, 4 rank.
  auto type = metadata.get_int_or(*arch + ".pooling_type", 1);
  return type.is_ok() && *type == 3 ? Pooling::kLast : Pooling::kMean;
}

Result<std::vector<float>> compute_embedding(model::Model& model, std::span<const int32_t> tokens,
                                             Pooling pooling, int64_t max_rows, ThreadPool* pool) {
  if (tokens.empty()) return invalid_argument("nothing to embed: the input has no tokens");
  const model::ModelConfig& c = model.config();
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t chunk = std::max<int64_t>(1, max_rows);
  // f32: the cache lives only for this call, and the vector should not carry f16 rounding.
  TS_ASSIGN_OR_RETURN(model::KvCache kv, model::KvCache::create(c, 1, n, kernels::DType::kF32));
  std::vector<double> sum(static_cast<size_t>(c.dim), 0.0);
  std::vector<float> hidden;
  model::Batch batch;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t end = std::min(n, start + chunk);
    batch.clear();
    int64_t n_out = 0;
    for (int64_t p = start; p < end; ++p) {
      const bool want = pooling == Pooling::kMean || p == n - 1;
      batch.add(tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), 0, want);
      n_out += want ? 1 : 0;
    }
    hidden.assign(static_cast<size_t>(std::max<int64_t>(n_out, 1) * c.dim), 0.0f);
    TS_RETURN_IF_ERROR(model.forward_hidden(batch, kv, hidden, pool));
    for (int64_t r = 0; r < n_out; ++r) {
      const float* row = hidden.data() + r * c.dim;
      for (int64_t d = 0; d < c.dim; ++d) sum[static_cast<size_t>(d)] += row[d];
    }
  }
  const double count = pooling == Pooling::kMean ? static_cast<double>(n) : 1.0;
  double norm2 = 0.0;
  for (double& x : sum) {
    x /= count;
    norm2 += x * x;
  }
  const double inv = norm2 > 0.0 ? 1.0 / std::sqrt(norm2) : 1.0;
  std::vector<float> out(sum.size());
  for (size_t d = 0; d < sum.size(); ++d) out[d] = static_cast<float>(sum[d] * inv);
  return out;
}

}  // namespace tessera::engine
