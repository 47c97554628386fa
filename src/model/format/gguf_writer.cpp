#include "tessera/model/format/gguf_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <variant>

#include "tessera/model/format/byte_reader.h"

namespace tessera::model {
namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorNameBytes = 64;  // GGML_MAX_NAME; the reader enforces it too

// What the free functions below need of a pending tensor (GgufWriter::PendingTensor is private).
struct TensorView {
  std::string_view name;
  kernels::DType dtype;
  std::span<const int64_t> shape;
  std::span<const std::byte> data;
};

// The layout uses `general.alignment` when the caller set it to a valid value (a nonzero power
// of two). An invalid value is still written as given, so readers refuse the file, while the
// layout falls back to the default.
uint64_t layout_alignment(const Metadata& metadata) {
  const GgufValue* v = metadata.find("general.alignment");
  if (v == nullptr || !v->is_integer()) return kDefaultAlignment;
  auto a = v->as_uint();
  if (!a.is_ok() || *a == 0 || !std::has_single_bit(*a)) return kDefaultAlignment;
  return *a;
}

uint64_t padded(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

class ByteSink {
 public:
  explicit ByteSink(std::vector<std::byte>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_bytes(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    put_bytes(std::as_bytes(std::span(s.data(), s.size())));
  }
  void pad_to(uint64_t alignment) { out_.resize(padded(out_.size(), alignment), std::byte{0}); }

 private:
  std::vector<std::byte>& out_;
};

// The stored number converted to T (a value whose type matches its variant converts exactly).
template <typename T>
T number_as(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> T {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<X>) {
          return static_cast<T>(x);
        } else {
          return T{};
        }
      },
      v.raw());
}

// Writes the payload of `v` as type `type`. An array item whose type differs from its array's
// element type (a caller bug the writer cannot report) is written as that type's zero value.
void put_payload(ByteSink& out, GgufType type, const GgufValue& v) {
  const bool matches = v.type() == type;
  switch (type) {
    case GgufType::kUint8: return out.put(matches ? number_as<uint8_t>(v) : uint8_t{0});
    case GgufType::kInt8: return out.put(matches ? number_as<int8_t>(v) : int8_t{0});
    case GgufType::kUint16: return out.put(matches ? number_as<uint16_t>(v) : uint16_t{0});
    case GgufType::kInt16: return out.put(matches ? number_as<int16_t>(v) : int16_t{0});
    case GgufType::kUint32: return out.put(matches ? number_as<uint32_t>(v) : uint32_t{0});
    case GgufType::kInt32: return out.put(matches ? number_as<int32_t>(v) : int32_t{0});
    case GgufType::kUint64: return out.put(matches ? number_as<uint64_t>(v) : uint64_t{0});
    case GgufType::kInt64: return out.put(matches ? number_as<int64_t>(v) : int64_t{0});
    case GgufType::kFloat32: return out.put(matches ? number_as<float>(v) : 0.0f);
    case GgufType::kFloat64: return out.put(matches ? number_as<double>(v) : 0.0);
    case GgufType::kBool: return out.put<uint8_t>(matches && number_as<bool>(v) ? 1 : 0);
    case GgufType::kString: {
      auto s = v.as_string();
      return out.put_string(matches && s.is_ok() ? *s : std::string_view());
    }
    case GgufType::kArray: {
      auto a = v.as_array();
      if (!matches || !a.is_ok()) {
        out.put(static_cast<uint32_t>(GgufType::kUint8));
        return out.put<uint64_t>(0);
      }
      out.put(static_cast<uint32_t>((*a)->elem_type));
      out.put<uint64_t>((*a)->items.size());
      for (const auto& item : (*a)->items) put_payload(out, (*a)->elem_type, item);
      return;
    }
  }
}

// Everything before the tensor data: header, metadata, tensor infos and padding.
std::vector<std::byte> encode_header(const Metadata& metadata, std::span<const TensorView> tensors,
                                     uint64_t alignment) {
  std::vector<std::byte> bytes;
  ByteSink out(bytes);
  out.put_bytes(std::as_bytes(std::span("GGUF", 4)));
  out.put(kVersion);
  out.put<uint64_t>(tensors.size());
  out.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata.entries()) {
    out.put_string(key);
    out.put(static_cast<uint32_t>(value.type()));
    put_payload(out, value.type(), value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    out.put_string(t.name);
    out.put(static_cast<uint32_t>(t.shape.size()));
    for (int64_t ne : t.shape) out.put(static_cast<uint64_t>(ne));
    out.put(static_cast<uint32_t>(t.dtype));
    out.put(offset);
    offset += padded(t.data.size(), alignment);
  }
  // Without tensors there is no data section to align (and a huge alignment costs nothing).
  if (!tensors.empty()) out.pad_to(alignment);
  return bytes;
}

Status write_bytes(std::FILE* f, std::span<const std::byte> bytes, const std::string& path) {
  if (bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size()) {
    return Status::ok();
  }
  return io_error(fmt::format("writing {}: {}", path, std::strerror(errno)));
}

Status write_file(std::FILE* f, std::span<const std::byte> header,
                  std::span<const TensorView> tensors, uint64_t alignment,
                  const std::string& path) {
  TS_RETURN_IF_ERROR(write_bytes(f, header, path));
  const std::vector<std::byte> zeros(static_cast<size_t>(std::min<uint64_t>(alignment, 1 << 20)));
  for (const auto& t : tensors) {
    TS_RETURN_IF_ERROR(write_bytes(f, t.data, path));
    for (uint64_t pad = padded(t.data.size(), alignment) - t.data.size(); pad > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, zeros.size()));
      TS_RETURN_IF_ERROR(write_bytes(f, std::span(zeros).first(n), path));
      pad -= n;
    }
  }
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    return io_error(fmt::format("flushing {}: {}", path, std::strerror(errno)));
  }
  return Status::ok();
}

}  // namespace

Status GgufWriter::check_tensor(const std::string& name, kernels::DType dtype,
                                const std::vector<int64_t>& shape, size_t n_data) const {
  if (name.empty() || name.size() > kMaxTensorNameBytes) {
    return invalid_argument(fmt::format("tensor name '{}' must be 1 to {} bytes long", name,
                                        kMaxTensorNameBytes));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) return invalid_argument(fmt::format("duplicate tensor name '{}'", name));
  }
  const auto info = kernels::dtype_info(static_cast<uint32_t>(dtype));
  if (!info) return invalid_argument(fmt::format("tensor '{}': unknown dtype", name));
  if (shape.empty() || shape.size() > 4) {
    return invalid_argument(
        fmt::format("tensor '{}': expected 1 to 4 dimensions, found {}", name, shape.size()));
  }
  int64_t n_elements = 1;
  for (int64_t ne : shape) {
    if (ne < 1 || !checked_mul(n_elements, ne, &n_elements)) {
      return invalid_argument(fmt::format("tensor '{}': bad shape (dimensions must be >= 1 and "
                                          "their product fit in 64 bits)", name));
    }
  }
  if (shape[0] % info->block_size != 0) {
    return invalid_argument(fmt::format("tensor '{}': ne[0] = {} is not a multiple of the {} "
                                        "block size {}", name, shape[0], info->name,
                                        info->block_size));
  }
  int64_t n_bytes = 0;
  if (!checked_mul(n_elements / info->block_size, info->block_bytes, &n_bytes) ||
      static_cast<uint64_t>(n_bytes) != n_data) {
    return invalid_argument(fmt::format("tensor '{}': {} {} elements take {} bytes, got {}", name,
                                        n_elements, info->name, n_bytes, n_data));
  }
  return Status::ok();
}

Status GgufWriter::add_tensor(std::string name, kernels::DType dtype, std::vector<int64_t> shape,
                              std::span<const std::byte> data) {
  TS_RETURN_IF_ERROR(check_tensor(name, dtype, shape, data.size()));
  PendingTensor t{std::move(name), dtype, std::move(shape),
                  std::vector<std::byte>(data.begin(), data.end()), {}};
  t.data = t.owned;
  tensors_.push_back(std::move(t));
  return Status::ok();
}

Status GgufWriter::add_tensor_ref(std::string name, kernels::DType dtype,
                                  std::vector<int64_t> shape, std::span<const std::byte> data) {
  TS_RETURN_IF_ERROR(check_tensor(name, dtype, shape, data.size()));
  tensors_.push_back(PendingTensor{std::move(name), dtype, std::move(shape), {}, data});
  return Status::ok();
}

Result<GgufWriter> GgufWriter::referencing(const ModelFile& file) {
  GgufWriter w;
  for (const auto& [key, value] : file.metadata.entries()) w.metadata().set(key, value);
  for (const TensorInfo& t : file.tensors) {
    std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims));
    TS_RETURN_IF_ERROR(w.add_tensor_ref(t.name, t.dtype, std::move(shape), {t.data, t.n_bytes}));
  }
  return w;
}

std::vector<std::byte> GgufWriter::serialize() const {
  std::vector<TensorView> views;
  for (const auto& t : tensors_) views.push_back({t.name, t.dtype, t.shape, t.data});
  const uint64_t alignment = layout_alignment(metadata_);
  std::vector<std::byte> bytes = encode_header(metadata_, views, alignment);
  ByteSink out(bytes);
  for (const auto& t : views) {
    out.put_bytes(t.data);
    out.pad_to(alignment);
  }
  return bytes;
}

Status GgufWriter::write(const std::string& path) const {
  std::vector<TensorView> views;
  for (const auto& t : tensors_) views.push_back({t.name, t.dtype, t.shape, t.data});
  const uint64_t alignment = layout_alignment(metadata_);
  const std::vector<std::byte> header = encode_header(metadata_, views, alignment);

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error(fmt::format("creating {}: {}", tmp, std::strerror(errno)));
  Status s = write_file(f, header, views, alignment, tmp);
  if (std::fclose(f) != 0 && s.is_ok()) {
    s = io_error(fmt::format("closing {}: {}", tmp, std::strerror(errno)));
  }
  if (s.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = io_error(fmt::format("renaming {} to {}: {}", tmp, path, std::strerror(errno)));
  }
  if (!s.is_ok()) std::remove(tmp.c_str());
  return s;
}

}  // namespace tessera::model
