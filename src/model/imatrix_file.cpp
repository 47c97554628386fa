#include "tessera/model/imatrix_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"

namespace tessera::model {
namespace {

constexpr std::string_view kSum2Suffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";
// Tessera's addition (`eval imatrix --covariance`): the whole sums of x x^T, [n, n] f32. llama.cpp
// reads only the two above and skips other tensors.
constexpr std::string_view kCovSuffix = ".in_cov";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Status corrupt(std::string what) { return corrupt_data("imatrix: " + std::move(what)); }

// A count stored as f32 (GGUF) must be a whole number of tokens >= 1.
Status check_count(const std::string& name, double count) {
  if (!std::isfinite(count) || count < 1.0 || count != std::floor(count) || count > 9.0e15) {
    return corrupt(fmt::format("tensor '{}' has count {}, expected a whole number of tokens >= 1",
                               name, count));
  }
  return Status::ok();
}

Status check_sums(const std::string& name, const std::vector<double>& sums) {
  for (size_t j = 0; j < sums.size(); ++j) {
    if (!std::isfinite(sums[j]) || sums[j] < 0) {
      return corrupt(fmt::format("tensor '{}' column {} has sum of squares {}, expected a finite "
                                 "value >= 0",
                                 name, j, sums[j]));
    }
  }
  return Status::ok();
}

Result<ActivationStats> parse_gguf_imatrix(std::span<const std::byte> bytes) {
  auto parsed = parse_gguf(bytes);
  if (!parsed.is_ok()) return parsed.status().with_context("imatrix");
  const ModelFile& f = *parsed;
  auto type = f.metadata.get_string_or("general.type", "imatrix");
  if (!type.is_ok() || *type != "imatrix") {
    return corrupt(fmt::format("general.type is '{}', expected 'imatrix' (is this a model?)",
                               type.is_ok() ? *type : "not a string"));
  }
  ActivationStats stats;
  auto chunks = f.metadata.get_int_or("imatrix.chunk_count", 0);
  auto chunk_size = f.metadata.get_int_or("imatrix.chunk_size", 0);
  if (!chunks.is_ok() || !chunk_size.is_ok() || *chunks < 0 || *chunk_size < 0 ||
      *chunk_size > INT32_MAX) {
    return corrupt("imatrix.chunk_count / imatrix.chunk_size are not non-negative integers");
  }
  stats.n_chunks = *chunks;
  stats.chunk_size = static_cast<int32_t>(*chunk_size);
  if (const GgufValue* ds = f.metadata.find("imatrix.datasets"); ds != nullptr) {
    auto arr = ds->as_array();
    if (arr.is_ok() && !(*arr)->items.empty()) {
      auto s = (*arr)->items.back().as_string();
      if (s.is_ok()) stats.dataset = std::string(*s);
    }
  }
  // Pair each <name>.in_sum2 with its <name>.counts (and its <name>.in_cov, if any).
  std::map<std::string, std::pair<const TensorInfo*, const TensorInfo*>> pairs;
  std::map<std::string, const TensorInfo*> covs;
  for (const TensorInfo& t : f.tensors) {
    std::string_view n = t.name;
    if (ends_with(n, kSum2Suffix)) {
      pairs[std::string(n.substr(0, n.size() - kSum2Suffix.size()))].first = &t;
    } else if (ends_with(n, kCountsSuffix)) {
      pairs[std::string(n.substr(0, n.size() - kCountsSuffix.size()))].second = &t;
    } else if (ends_with(n, kCovSuffix)) {
      covs[std::string(n.substr(0, n.size() - kCovSuffix.size()))] = &t;
    } else {
      return corrupt(fmt::format(
          "tensor '{}' is neither <name>.in_sum2 nor <name>.counts nor <name>.in_cov", n));
    }
  }
  for (const auto& [name, cov] : covs) {
    if (pairs.find(name) == pairs.end()) {
      return corrupt(fmt::format("tensor '{}' has {} but no {}", name, kCovSuffix, kSum2Suffix));
    }
  }
  if (pairs.empty()) return corrupt("the file holds no tensors");
  for (const auto& [name, pair] : pairs) {
    const auto [sum2, counts] = pair;
    if (sum2 == nullptr || counts == nullptr) {
      return corrupt(fmt::format("tensor '{}' has {} but no {}", name,
                                 sum2 == nullptr ? kCountsSuffix : kSum2Suffix,
                                 sum2 == nullptr ? kSum2Suffix : kCountsSuffix));
    }
    if (sum2->dtype != kernels::DType::kF32 || counts->dtype != kernels::DType::kF32) {
      return corrupt(fmt::format("tensor '{}': in_sum2 and counts must be f32", name));
    }
    if (sum2->n_dims > 2 || counts->n_dims > 2 || counts->ne[0] != 1 ||
        counts->ne[1] != sum2->ne[1] || sum2->ne[0] < 1) {
      return corrupt(fmt::format("tensor '{}': in_sum2 has shape {} and counts {}, expected "
                                 "[n, k] and [1, k]",
                                 name, sum2->shape_string(), counts->shape_string()));
    }
    if (sum2->ne[1] != 1) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("imatrix: tensor '{}' has statistics for {} experts; "
                                "mixture-of-experts importance matrices are not supported",
                                name, sum2->ne[1]));
    }
    TensorActivationStats t;
    float count = 0;
    std::memcpy(&count, counts->data, sizeof(float));
    TS_RETURN_IF_ERROR(check_count(name, count));
    t.count = static_cast<int64_t>(count);
    t.sum_sq.resize(static_cast<size_t>(sum2->ne[0]));
    for (size_t j = 0; j < t.sum_sq.size(); ++j) {
      float v = 0;
      std::memcpy(&v, sum2->data + j * sizeof(float), sizeof(float));
      t.sum_sq[j] = v;
    }
    TS_RETURN_IF_ERROR(check_sums(name, t.sum_sq));
    if (const auto c = covs.find(name); c != covs.end()) {
      const TensorInfo* cov = c->second;
      const int64_t n = sum2->ne[0];
      if (cov->dtype != kernels::DType::kF32 || cov->n_dims != 2 || cov->ne[0] != n ||
          cov->ne[1] != n) {
        return corrupt(fmt::format("tensor '{}': in_cov has type {} and shape {}, expected f32 "
                                   "[{}, {}]",
                                   name, kernels::dtype_name(cov->dtype), cov->shape_string(), n, n));
      }
      t.sum_xxt.resize(static_cast<size_t>(n * n));
      for (size_t j = 0; j < t.sum_xxt.size(); ++j) {
        float v = 0;
        std::memcpy(&v, cov->data + j * sizeof(float), sizeof(float));
        if (!std::isfinite(v)) {
          return corrupt(fmt::format("tensor '{}': in_cov value {} is not finite", name, j));
        }
        t.sum_xxt[j] = v;
      }
    }
    stats.tensors.emplace(name, std::move(t));
  }
  return stats;
}

// Little-endian reads with bounds checks, for the legacy format.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> b) : b_(b) {}
  size_t left() const { return b_.size() - pos_; }
  Status i32(int32_t* v, std::string_view what) {
    if (left() < 4) return corrupt(fmt::format("the file ends inside {}", what));
    std::memcpy(v, b_.data() + pos_, 4);
    pos_ += 4;
    return Status::ok();
  }
  Status bytes(void* out, size_t n, std::string_view what) {
    if (left() < n) {
      return corrupt(fmt::format("the file ends inside {} ({} bytes needed, {} left)", what, n,
                                 left()));
    }
    std::memcpy(out, b_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }

 private:
  std::span<const std::byte> b_;
  size_t pos_ = 0;
};

Result<ActivationStats> parse_legacy_imatrix(std::span<const std::byte> bytes) {
  Cursor c(bytes);
  int32_t n_entries = 0;
  TS_RETURN_IF_ERROR(c.i32(&n_entries, "the entry count"));
  // Each entry takes at least 16 bytes, which bounds a hostile count.
  if (n_entries < 1 || static_cast<size_t>(n_entries) > c.left() / 16) {
    return corrupt(fmt::format("legacy file: entry count {} does not fit its {} bytes (is this "
                               "an imatrix file?)",
                               n_entries, bytes.size()));
  }
  ActivationStats stats;
  for (int32_t i = 0; i < n_entries; ++i) {
    int32_t len = 0;
    TS_RETURN_IF_ERROR(c.i32(&len, fmt::format("entry {}'s name length", i)));
    if (len < 1 || len > 4096) {
      return corrupt(fmt::format("legacy file: entry {} has name length {}", i, len));
    }
    std::string name(static_cast<size_t>(len), '\0');
    TS_RETURN_IF_ERROR(c.bytes(name.data(), name.size(), fmt::format("entry {}'s name", i)));
    int32_t ncall = 0, nval = 0;
    TS_RETURN_IF_ERROR(c.i32(&ncall, fmt::format("entry '{}''s call count", name)));
    TS_RETURN_IF_ERROR(c.i32(&nval, fmt::format("entry '{}''s value count", name)));
    if (ncall < 1) {
      return corrupt(fmt::format("tensor '{}' has count {}, expected >= 1", name, ncall));
    }
    if (nval < 1 || static_cast<size_t>(nval) > c.left() / sizeof(float)) {
      return corrupt(fmt::format("tensor '{}' claims {} values, {} bytes are left", name, nval,
                                 c.left()));
    }
    std::vector<float> v(static_cast<size_t>(nval));
    TS_RETURN_IF_ERROR(c.bytes(v.data(), v.size() * sizeof(float), "values"));
    TensorActivationStats t;
    t.count = ncall;
    t.sum_sq.assign(v.begin(), v.end());
    TS_RETURN_IF_ERROR(check_sums(name, t.sum_sq));
    if (!stats.tensors.emplace(name, std::move(t)).second) {
      return corrupt(fmt::format("tensor '{}' appears twice", name));
    }
  }
  if (c.left() > 0) {  // optional trailer: chunk count, dataset name
    int32_t chunks = 0, len = 0;
    TS_RETURN_IF_ERROR(c.i32(&chunks, "the chunk count"));
    if (chunks < 0) return corrupt(fmt::format("legacy file: chunk count {}", chunks));
    stats.n_chunks = chunks;
    if (c.left() > 0) {
      TS_RETURN_IF_ERROR(c.i32(&len, "the dataset name length"));
      if (len < 0 || static_cast<size_t>(len) > c.left()) {
        return corrupt(fmt::format("legacy file: dataset name length {} with {} bytes left", len,
                                   c.left()));
      }
      stats.dataset.resize(static_cast<size_t>(len));
      TS_RETURN_IF_ERROR(c.bytes(stats.dataset.data(), stats.dataset.size(), "the dataset name"));
    }
  }
  return stats;
}

}  // namespace

Status write_imatrix(const ActivationStats& stats, const std::string& path) {
  GgufWriter w;
  w.metadata().set("general.type", GgufValue::string("imatrix"));
  GgufArray datasets{GgufType::kString, {}};
  if (!stats.dataset.empty()) datasets.items.push_back(GgufValue::string(stats.dataset));
  w.metadata().set("imatrix.datasets", GgufValue::array(std::move(datasets)));
  w.metadata().set("imatrix.chunk_count",
                   GgufValue::u32(static_cast<uint32_t>(std::max<int64_t>(0, stats.n_chunks))));
  w.metadata().set("imatrix.chunk_size",
                   GgufValue::u32(static_cast<uint32_t>(std::max(0, stats.chunk_size))));
  for (const auto& [name, t] : stats.tensors) {  // std::map: sorted names, as llama-imatrix
    if (t.sum_sq.empty() || t.count < 0) {
      return invalid_argument(fmt::format("imatrix: tensor '{}' has {} columns and count {}",
                                          name, t.sum_sq.size(), t.count));
    }
    std::vector<float> sums(t.sum_sq.begin(), t.sum_sq.end());
    const float count = static_cast<float>(t.count);
    TS_RETURN_IF_ERROR(w.add_tensor(name + std::string(kSum2Suffix), kernels::DType::kF32,
                                    {static_cast<int64_t>(sums.size()), 1},
                                    std::as_bytes(std::span<const float>(sums))));
    TS_RETURN_IF_ERROR(w.add_tensor(name + std::string(kCountsSuffix), kernels::DType::kF32,
                                    {1, 1}, std::as_bytes(std::span<const float>(&count, 1))));
    if (!t.sum_xxt.empty()) {
      const auto n = static_cast<int64_t>(sums.size());
      if (static_cast<int64_t>(t.sum_xxt.size()) != n * n) {
        return invalid_argument(fmt::format("imatrix: tensor '{}' has {} covariance values for {} "
                                            "columns", name, t.sum_xxt.size(), n));
      }
      std::vector<float> cov(t.sum_xxt.begin(), t.sum_xxt.end());
      TS_RETURN_IF_ERROR(w.add_tensor(name + std::string(kCovSuffix), kernels::DType::kF32, {n, n},
                                      std::as_bytes(std::span<const float>(cov))));
    }
  }
  return w.write(path);
}

Result<ActivationStats> parse_imatrix(std::span<const std::byte> bytes) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    return parse_gguf_imatrix(bytes);
  }
  return parse_legacy_imatrix(bytes);
}

Result<ActivationStats> read_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, "cannot read the imatrix file " + path);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status(ErrorCode::kIoError, "error reading the imatrix file " + path);
  auto r = parse_imatrix(std::as_bytes(std::span<const char>(raw)));
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

}  // namespace tessera::model
