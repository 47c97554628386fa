#include "tessera/model/format/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tessera/model/format/byte_reader.h"

namespace tessera::model {
namespace {

using Json = nlohmann::json;
using kernels::DType;

// The format's dtype names. Only the float types Tessera computes with are read.
struct StDtype {
  std::string_view name;
  int bytes;
  bool readable;
  DType dtype;
};
constexpr StDtype kStDtypes[] = {
    {"F32", 4, true, DType::kF32},    {"F16", 2, true, DType::kF16},
    {"BF16", 2, true, DType::kBF16},  {"F64", 8, false, DType::kF32},
    {"I64", 8, false, DType::kF32},   {"U64", 8, false, DType::kF32},
    {"I32", 4, false, DType::kF32},   {"U32", 4, false, DType::kF32},
    {"I16", 2, false, DType::kF32},   {"U16", 2, false, DType::kF32},
    {"I8", 1, false, DType::kF32},    {"U8", 1, false, DType::kF32},
    {"BOOL", 1, false, DType::kF32},  {"F8_E4M3", 1, false, DType::kF32},
    {"F8_E5M2", 1, false, DType::kF32},
};

const StDtype* find_dtype(std::string_view name) {
  for (const auto& d : kStDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string_view st_name(DType t) {
  for (const auto& d : kStDtypes) {
    if (d.readable && d.dtype == t) return d.name;
  }
  return {};
}

struct Entry {
  std::string name;
  const StDtype* dtype = nullptr;
  std::vector<int64_t> shape;  // PyTorch order
  uint64_t begin = 0, end = 0;
};

Result<Entry> parse_entry(const std::string& name, const Json& v) {
  Entry e;
  e.name = name;
  if (name.empty()) return corrupt_data("a tensor has an empty name");
  if (!v.is_object()) return corrupt_data(fmt::format("tensor '{}': entry is not an object", name));
  for (const auto& [key, _] : v.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return corrupt_data(fmt::format("tensor '{}': unknown field '{}'", name, key));
    }
  }
  const auto dt = v.find("dtype");
  const auto shape = v.find("shape");
  const auto offsets = v.find("data_offsets");
  if (dt == v.end() || !dt->is_string()) {
    return corrupt_data(fmt::format("tensor '{}': missing or non-string 'dtype'", name));
  }
  if (shape == v.end() || !shape->is_array()) {
    return corrupt_data(fmt::format("tensor '{}': missing or non-array 'shape'", name));
  }
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2) {
    return corrupt_data(fmt::format("tensor '{}': 'data_offsets' must be [begin, end]", name));
  }
  const auto& dname = dt->get_ref<const std::string&>();
  e.dtype = find_dtype(dname);
  if (e.dtype == nullptr) {
    return corrupt_data(fmt::format("tensor '{}': unknown dtype '{}'", name, dname));
  }
  for (const Json& d : *shape) {
    if (!d.is_number_unsigned()) {
      return corrupt_data(fmt::format("tensor '{}': shape {} is not a list of non-negative integers",
                                      name, shape->dump()));
    }
    e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(d.get<uint64_t>(), INT64_MAX)));
  }
  for (const Json& o : *offsets) {
    if (!o.is_number_unsigned()) {
      return corrupt_data(fmt::format("tensor '{}': data_offsets {} are not non-negative integers",
                                      name, offsets->dump()));
    }
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  return e;
}

}  // namespace

Result<ModelFile> parse_safetensors(std::span<const std::byte> bytes) {
  ByteReader r(bytes);
  TS_ASSIGN_OR_RETURN(const uint64_t header_len, r.read<uint64_t>("header length"));
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return corrupt_data(fmt::format("header length {} exceeds the {}-byte limit", header_len,
                                    kMaxSafetensorsHeaderBytes));
  }
  if (header_len > r.remaining()) {
    return corrupt_data(fmt::format("header length {} exceeds the {} bytes after it (truncated?)",
                                    header_len, r.remaining()));
  }
  const auto* text = reinterpret_cast<const char*>(bytes.data()) + 8;
  if (header_len < 2 || text[0] != '{') return corrupt_data("header is not a JSON object");
  Json header = Json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return corrupt_data("header is not valid JSON (or not an object)");
  }

  ModelFile file;
  file.format = FileFormat::kSafetensors;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return corrupt_data("'__metadata__' is not an object");
      for (const auto& [key, value] : v.items()) {
        if (!value.is_string()) {
          return corrupt_data(fmt::format("'__metadata__' value of '{}' is not a string", key));
        }
        file.metadata.set("safetensors." + key, GgufValue::string(value.get<std::string>()));
      }
      continue;
    }
    TS_ASSIGN_OR_RETURN(Entry e, parse_entry(name, v));
    entries.push_back(std::move(e));
  }

  // Byte ranges: exactly shape x dtype each, tiling the buffer in order with nothing left over.
  const uint64_t buffer_len = r.remaining() - header_len;
  const std::byte* buffer = bytes.data() + 8 + header_len;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  uint64_t expect = 0;
  for (const Entry& e : entries) {
    uint64_t n = 1;
    for (int64_t d : e.shape) {
      if (!checked_mul(n, static_cast<uint64_t>(d), &n) || n > (uint64_t{1} << 56)) {
        return corrupt_data(fmt::format("tensor '{}': element count overflows", e.name));
      }
    }
    uint64_t n_bytes = 0;
    if (!checked_mul(n, static_cast<uint64_t>(e.dtype->bytes), &n_bytes)) {
      return corrupt_data(fmt::format("tensor '{}': byte size overflows", e.name));
    }
    if (e.end < e.begin || e.end - e.begin != n_bytes) {
      return corrupt_data(fmt::format(
          "tensor '{}': data_offsets [{}, {}] hold {} bytes, but {} {} x {} needs {}", e.name,
          e.begin, e.end, e.end >= e.begin ? e.end - e.begin : 0, e.dtype->name,
          fmt::join(e.shape, "x"), n, n_bytes));
    }
    if (e.begin != expect) {
      return corrupt_data(fmt::format("tensor '{}': starts at byte {} of the data, expected {} ({})",
                                      e.name, e.begin, expect,
                                      e.begin > expect ? "a gap" : "overlaps the previous tensor"));
    }
    if (e.end > buffer_len) {
      return corrupt_data(fmt::format("tensor '{}': ends at byte {} but the data has {} (truncated?)",
                                      e.name, e.end, buffer_len));
    }
    expect = e.end;
  }
  if (expect != buffer_len) {
    return corrupt_data(fmt::format("{} bytes after the last tensor belong to none", buffer_len - expect));
  }

  for (const Entry& e : entries) {
    if (!e.dtype->readable) {
      return unsupported(fmt::format("tensor '{}' has dtype {}, which Tessera does not read "
                                     "(F32, F16 and BF16 are)", e.name, e.dtype->name));
    }
    if (e.shape.size() > 4) {
      return unsupported(fmt::format("tensor '{}' has {} dimensions; at most 4 are supported",
                                     e.name, e.shape.size()));
    }
    if (e.begin == e.end) {
      return unsupported(fmt::format("tensor '{}' has no elements (shape [{}])", e.name,
                                     fmt::join(e.shape, ", ")));
    }
    TensorInfo t;
    t.name = e.name;
    t.dtype = e.dtype->dtype;
    t.n_dims = std::max<int>(1, static_cast<int>(e.shape.size()));
    for (size_t i = 0; i < e.shape.size(); ++i) t.ne[i] = e.shape[e.shape.size() - 1 - i];
    t.offset = e.begin;
    t.n_bytes = static_cast<size_t>(e.end - e.begin);
    t.data = buffer + e.begin;
    if (reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(e.dtype->bytes) != 0) {
      auto copy = std::make_shared<std::vector<std::byte>>(t.data, t.data + t.n_bytes);
      t.data = copy->data();
      file.owned_buffers.push_back(std::move(copy));
    }
    file.tensors.push_back(std::move(t));
  }
  return file;
}

Result<ModelFile> read_safetensors(std::shared_ptr<const MappedFile> file) {
  TS_ASSIGN_OR_RETURN(ModelFile f, parse_safetensors(file->bytes()));
  f.mapping = std::move(file);
  return f;
}

Status SafetensorsWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape,
                                     std::span<const std::byte> data) {
  if (name.empty() || name == "__metadata__") {
    return invalid_argument(fmt::format("invalid tensor name '{}'", name));
  }
  if (st_name(dtype).empty()) {
    return invalid_argument(fmt::format("tensor '{}': only F32, F16 and BF16 are written", name));
  }
  if (shape.size() > 4) return invalid_argument(fmt::format("tensor '{}': more than 4 dims", name));
  for (const auto& t : tensors_) {
    if (t.name == name) return invalid_argument(fmt::format("duplicate tensor '{}'", name));
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument(fmt::format("tensor '{}': negative dimension", name));
    n *= d;
  }
  const size_t want = static_cast<size_t>(n) * (dtype == DType::kF32 ? 4 : 2);
  if (data.size() != want) {
    return invalid_argument(
        fmt::format("tensor '{}': {} bytes given, the shape needs {}", name, data.size(), want));
  }
  tensors_.push_back({std::move(name), dtype, std::move(shape), {data.begin(), data.end()}});
  return Status::ok();
}

void SafetensorsWriter::add_metadata(std::string key, std::string value) {
  metadata_.emplace_back(std::move(key), std::move(value));
}

std::vector<std::byte> SafetensorsWriter::serialize() const {
  Json header = Json::object();
  if (!metadata_.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata_) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    header[t.name] = {{"dtype", std::string(st_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::vector<std::byte> out(8 + text.size() + offset);
  const uint64_t len = text.size();
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  // The header's keys are sorted (nlohmann orders objects), but offsets follow insertion order.
  std::byte* p = out.data() + 8 + text.size();
  for (const auto& t : tensors_) {
    std::memcpy(p, t.data.data(), t.data.size());
    p += t.data.size();
  }
  return out;
}

Status SafetensorsWriter::write(const std::string& path) const {
  const std::vector<std::byte> bytes = serialize();
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error(fmt::format("creating {}: {}", tmp, std::strerror(errno)));
  Status s = Status::ok();
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    s = io_error(fmt::format("writing {}: {}", tmp, std::strerror(errno)));
  }
  if (std::fclose(f) != 0 && s.is_ok()) s = io_error(fmt::format("closing {}", tmp));
  if (s.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = io_error(fmt::format("renaming {} to {}: {}", tmp, path, std::strerror(errno)));
  }
  if (!s.is_ok()) std::remove(tmp.c_str());
  return s;
}

}  // namespace tessera::model
