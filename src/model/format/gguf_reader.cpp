#include "tessera/model/format/gguf_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tessera/kernels/dtype.h"
#include "tessera/kernels/sparse_quants.h"
#include "tessera/model/format/byte_reader.h"

namespace tessera::model {
namespace {

// Every limit below exists so that a hostile file cannot make the parser allocate or recurse
// more than its own size justifies.
constexpr uint32_t kMaxArrayDepth = 4;        // arrays nested inside arrays
constexpr uint64_t kMaxArrayItems = 1u << 24;  // ~800 MiB of parsed values; tokenizers use ~300k
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxTensorNameBytes = 64;  // GGML_MAX_NAME, as the GGUF specification says
constexpr uint32_t kMaxDims = 4;
// Smallest encodings, for checking a count against the bytes left before allocating for it.
constexpr uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;         // key length, type, one byte
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name (>=1 byte), 1 dim

// A name from the file made safe to print: control bytes escaped, long names cut.
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "...";
  return out;
}

uint64_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString: return 8;  // a string is at least its uint64 length
    case GgufType::kArray: return 12;  // element type and count
  }
  return 1;
}

Result<std::string> read_string(ByteReader& r, std::string_view what) {
  TS_ASSIGN_OR_RETURN(uint64_t len, r.read<uint64_t>(what));
  TS_ASSIGN_OR_RETURN(auto bytes, r.take(len, what));
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Result<GgufType> read_type(ByteReader& r, std::string_view what) {
  TS_ASSIGN_OR_RETURN(uint32_t id, r.read<uint32_t>(what));
  if (id > static_cast<uint32_t>(GgufType::kFloat64)) {
    return corrupt_data(fmt::format("unknown {} {} (expected 0 to 12)", what, id));
  }
  return static_cast<GgufType>(id);
}

template <typename T, typename Make>
Result<GgufValue> read_number(ByteReader& r, std::string_view what, Make make) {
  TS_ASSIGN_OR_RETURN(T v, r.read<T>(what));
  return make(v);
}

Result<GgufValue> read_value(ByteReader& r, GgufType type, uint32_t depth);

Result<GgufValue> read_array(ByteReader& r, uint32_t depth) {
  if (depth >= kMaxArrayDepth) {
    return corrupt_data(fmt::format("arrays nested more than {} levels deep", kMaxArrayDepth));
  }
  TS_ASSIGN_OR_RETURN(GgufType elem, read_type(r, "array element type"));
  TS_ASSIGN_OR_RETURN(uint64_t n, r.read<uint64_t>("array length"));
  const uint64_t min_size = min_encoded_size(elem);
  if (n > r.remaining() / min_size) {
    return corrupt_data(fmt::format(
        "array claims {} items of {} (at least {} bytes each), but only {} bytes are left", n,
        gguf_type_name(elem), min_size, r.remaining()));
  }
  if (n > kMaxArrayItems) {
    return unsupported(
        fmt::format("array of {} items exceeds Tessera's limit of {}", n, kMaxArrayItems));
  }
  GgufArray a;
  a.elem_type = elem;
  a.items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    auto item = read_value(r, elem, depth + 1);
    if (!item.is_ok()) return item.status().with_context(fmt::format("array item {}", i));
    a.items.push_back(std::move(item).value());
  }
  return GgufValue::array(std::move(a));
}

// Reads one value of `type`; `depth` counts the arrays that enclose it.
Result<GgufValue> read_value(ByteReader& r, GgufType type, uint32_t depth) {
  switch (type) {
    case GgufType::kUint8: return read_number<uint8_t>(r, "uint8 value", GgufValue::u8);
    case GgufType::kInt8: return read_number<int8_t>(r, "int8 value", GgufValue::i8);
    case GgufType::kUint16: return read_number<uint16_t>(r, "uint16 value", GgufValue::u16);
    case GgufType::kInt16: return read_number<int16_t>(r, "int16 value", GgufValue::i16);
    case GgufType::kUint32: return read_number<uint32_t>(r, "uint32 value", GgufValue::u32);
    case GgufType::kInt32: return read_number<int32_t>(r, "int32 value", GgufValue::i32);
    case GgufType::kUint64: return read_number<uint64_t>(r, "uint64 value", GgufValue::u64);
    case GgufType::kInt64: return read_number<int64_t>(r, "int64 value", GgufValue::i64);
    case GgufType::kFloat32: return read_number<float>(r, "float32 value", GgufValue::f32);
    case GgufType::kFloat64: return read_number<double>(r, "float64 value", GgufValue::f64);
    case GgufType::kBool: {
      TS_ASSIGN_OR_RETURN(uint8_t b, r.read<uint8_t>("bool value"));
      if (b > 1) return corrupt_data(fmt::format("bool value must be 0 or 1, found {}", b));
      return GgufValue::boolean(b == 1);
    }
    case GgufType::kString: {
      TS_ASSIGN_OR_RETURN(std::string s, read_string(r, "string value"));
      return GgufValue::string(std::move(s));
    }
    case GgufType::kArray: return read_array(r, depth);
  }
  return internal_error("read_value: unhandled GgufType");
}

Status read_metadata(ByteReader& r, uint64_t n_kv, Metadata& metadata) {
  if (n_kv > r.remaining() / kMinMetadataEntryBytes) {
    return corrupt_data(fmt::format(
        "header claims {} metadata entries, but the {} bytes left can hold at most {}", n_kv,
        r.remaining(), r.remaining() / kMinMetadataEntryBytes));
  }
  for (uint64_t i = 0; i < n_kv; ++i) {
    auto key = read_string(r, "metadata key");
    if (!key.is_ok()) return key.status().with_context(fmt::format("metadata entry {}", i));
    if (key->empty()) return corrupt_data(fmt::format("metadata entry {} has an empty key", i));
    if (metadata.contains(*key)) {
      return corrupt_data(fmt::format("duplicate metadata key '{}'", printable(*key)));
    }
    const std::string context = fmt::format("metadata key '{}'", printable(*key));
    auto type = read_type(r, "metadata value type");
    if (!type.is_ok()) return type.status().with_context(context);
    auto value = read_value(r, *type, 0);
    if (!value.is_ok()) return value.status().with_context(context);
    metadata.set(std::move(key).value(), std::move(value).value());
  }
  return Status::ok();
}

Result<uint64_t> read_alignment(const Metadata& metadata) {
  const GgufValue* v = metadata.find("general.alignment");
  if (v == nullptr) return kDefaultAlignment;
  auto a = v->as_uint();
  if (!v->is_integer() || !a.is_ok()) {
    return corrupt_data(fmt::format("general.alignment must be a positive integer, found {} {}",
                                    gguf_type_name(v->type()), v->to_display_string()));
  }
  if (*a == 0 || !std::has_single_bit(*a)) {
    return corrupt_data(
        fmt::format("general.alignment must be a nonzero power of two, found {}", *a));
  }
  return *a;
}

std::string supported_type_names() {
  std::string out;
  for (const auto* info = kernels::dtype_infos_begin(); info != kernels::dtype_infos_end(); ++info) {
    if (!info->supported) continue;
    if (!out.empty()) out += ", ";
    out += info->name;
  }
  return out;
}

// Checks the type and shape of `t` and fills in its size. `type_id` comes from the file.
Status check_type_and_shape(TensorInfo& t, uint32_t type_id) {
  const std::string name = printable(t.name);
  const auto info = kernels::dtype_info(type_id);
  if (!info) {
    return corrupt_data(fmt::format("tensor '{}' has unknown type id {} (neither a GGML type nor a Tessera one)", name,
                                    type_id));
  }
  if (!info->supported) {
    return unsupported(
        fmt::format("tensor '{}' has type {}, which Tessera does not support yet (supported: {})",
                    name, info->name, supported_type_names()));
  }
  t.dtype = info->type;
  if (t.ne[0] % info->block_size != 0) {
    return corrupt_data(fmt::format("tensor '{}': ne[0] = {} is not a multiple of the {} block "
                                    "size {}",
                                    name, t.ne[0], info->name, info->block_size));
  }
  int64_t n_rows = 1;
  int64_t n_elements = 0;
  int64_t row_bytes = 0;
  int64_t n_bytes = 0;
  const bool ok = checked_mul(t.ne[1], t.ne[2], &n_rows) && checked_mul(n_rows, t.ne[3], &n_rows) &&
                  checked_mul(t.ne[0], n_rows, &n_elements) &&
                  checked_mul(t.ne[0] / info->block_size, info->block_bytes, &row_bytes) &&
                  checked_mul(row_bytes, n_rows, &n_bytes);
  if (!ok) {
    return corrupt_data(fmt::format("tensor '{}': shape {} overflows a 64-bit element or byte "
                                    "count",
                                    name, t.shape_string()));
  }
  t.n_bytes = static_cast<size_t>(n_bytes);
  return Status::ok();
}

Status read_tensor_info(ByteReader& r, TensorInfo& t) {
  TS_ASSIGN_OR_RETURN(t.name, read_string(r, "tensor name"));
  if (t.name.empty()) return corrupt_data("tensor has an empty name");
  if (t.name.size() > kMaxTensorNameBytes) {
    return corrupt_data(fmt::format("tensor name '{}' is {} bytes long; GGUF allows at most {}",
                                    printable(t.name), t.name.size(), kMaxTensorNameBytes));
  }
  const std::string context = fmt::format("tensor '{}'", printable(t.name));
  auto n_dims = r.read<uint32_t>("tensor dimension count");
  if (!n_dims.is_ok()) return n_dims.status().with_context(context);
  if (*n_dims < 1 || *n_dims > kMaxDims) {
    return corrupt_data(fmt::format("{}: expected 1 to {} dimensions, found {}", context,
                                    kMaxDims, *n_dims));
  }
  t.n_dims = static_cast<int>(*n_dims);
  for (int d = 0; d < t.n_dims; ++d) {
    auto ne = r.read<uint64_t>("tensor dimension");
    if (!ne.is_ok()) return ne.status().with_context(context);
    if (*ne < 1 || *ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return corrupt_data(
          fmt::format("{}: ne[{}] must be at least 1 and below 2^63, found {}", context, d, *ne));
    }
    t.ne[d] = static_cast<int64_t>(*ne);
  }
  auto type_id = r.read<uint32_t>("tensor type");
  if (!type_id.is_ok()) return type_id.status().with_context(context);
  auto offset = r.read<uint64_t>("tensor offset");
  if (!offset.is_ok()) return offset.status().with_context(context);
  t.offset = *offset;
  return check_type_and_shape(t, *type_id);
}

Result<std::vector<TensorInfo>> read_tensor_infos(ByteReader& r, uint64_t n_tensors) {
  if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
    return corrupt_data(fmt::format(
        "header claims {} tensors, but the {} bytes left can hold at most {}",
        n_tensors, r.remaining(), r.remaining() / kMinTensorInfoBytes));
  }
  std::vector<TensorInfo> tensors(static_cast<size_t>(n_tensors));
  for (auto& t : tensors) TS_RETURN_IF_ERROR(read_tensor_info(r, t));
  // The strings are in place now, so views into them stay valid.
  std::unordered_set<std::string_view> names;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) {
      return corrupt_data(fmt::format("duplicate tensor name '{}'", printable(t.name)));
    }
  }
  return tensors;
}

// Checks each tensor's range against the data section and the others, then points it there.
Status place_tensors(std::vector<TensorInfo>& tensors, std::span<const std::byte> bytes,
                     uint64_t data_start, uint64_t alignment) {
  // A file without tensors may end before the padding; then the data section is empty.
  const uint64_t data_size = data_start < bytes.size() ? bytes.size() - data_start : 0;
  for (auto& t : tensors) {
    if (t.offset % alignment != 0) {
      return corrupt_data(fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}",
                                      printable(t.name), t.offset, alignment));
    }
    uint64_t end = 0;
    const bool overflow = !checked_add<uint64_t>(t.offset, t.n_bytes, &end);
    if (overflow || end > data_size) {
      return corrupt_data(fmt::format(
          "tensor '{}': data [{}, {}) ends past end of file (the data section starts at byte {} "
          "and holds {} bytes; file size {})",
          printable(t.name), t.offset, overflow ? "2^64+" : std::to_string(end), data_start,
          data_size, bytes.size()));
    }
    // The format allows alignments down to 1, but kernels read f32 and f16 values in place.
    const int64_t block_bytes = kernels::dtype_info(t.dtype).block_bytes;
    const uint64_t natural = block_bytes % 4 == 0 ? 4 : (block_bytes % 2 == 0 ? 2 : 1);
    if ((data_start + t.offset) % natural != 0) {
      return unsupported(fmt::format(
          "tensor '{}': {} data at file offset {} is not aligned to {} bytes, which Tessera needs "
          "to read it in place (general.alignment is {})",
          printable(t.name), kernels::dtype_name(t.dtype), data_start + t.offset, natural,
          alignment));
    }
    t.data = bytes.data() + data_start + t.offset;
    if (kernels::is_2of4_dtype(t.dtype)) {
      // The kernels trust each group's two kept values; a hostile mask is refused here.
      const int64_t bad = kernels::first_invalid_2of4_block(t.dtype, t.data, t.n_bytes);
      if (bad >= 0) {
        return corrupt_data(fmt::format(
            "tensor '{}': {} block {} has a keep-mask that is not 2 of every 4 weights",
            printable(t.name), kernels::dtype_name(t.dtype), bad));
      }
    }
  }
  std::vector<const TensorInfo*> by_offset(tensors.size());
  std::transform(tensors.begin(), tensors.end(), by_offset.begin(), [](auto& t) { return &t; });
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    if (a.offset + a.n_bytes > b.offset) {  // cannot overflow: both lie within the file
      return corrupt_data(fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap",
                                      printable(a.name), a.offset, a.offset + a.n_bytes,
                                      printable(b.name), b.offset, b.offset + b.n_bytes));
    }
  }
  return Status::ok();
}

Result<uint32_t> read_version(ByteReader& r) {
  TS_ASSIGN_OR_RETURN(auto magic, r.take(4, "magic"));
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) {
    return corrupt_data(fmt::format("not a GGUF file: expected magic 'GGUF' (47 47 55 46), found "
                                    "{:02x} {:02x} {:02x} {:02x}",
                                    magic[0], magic[1], magic[2], magic[3]));
  }
  TS_ASSIGN_OR_RETURN(uint32_t version, r.read<uint32_t>("version"));
  if (version == 2 || version == 3) return version;
  if (version == 1) {
    return unsupported("GGUF version 1 is not supported (expected 2 or 3); convert the model "
                       "again with a current llama.cpp");
  }
  const uint32_t swapped = __builtin_bswap32(version);
  if (swapped >= 1 && swapped <= 3) {
    return unsupported(fmt::format("big-endian GGUF (version {}) is not supported", swapped));
  }
  return unsupported(fmt::format("GGUF version {} is not supported (expected 2 or 3)", version));
}

Result<ModelFile> parse(std::span<const std::byte> bytes) {
  ByteReader r(bytes);
  ModelFile file;
  file.format = FileFormat::kGguf;
  TS_ASSIGN_OR_RETURN(file.gguf_version, read_version(r));
  TS_ASSIGN_OR_RETURN(uint64_t n_tensors, r.read<uint64_t>("tensor count"));
  TS_ASSIGN_OR_RETURN(uint64_t n_kv, r.read<uint64_t>("metadata entry count"));
  TS_RETURN_IF_ERROR(read_metadata(r, n_kv, file.metadata));
  TS_ASSIGN_OR_RETURN(uint64_t alignment, read_alignment(file.metadata));
  TS_ASSIGN_OR_RETURN(file.tensors, read_tensor_infos(r, n_tensors));
  // position() <= size < 2^63 and alignment <= 2^63, so rounding up cannot overflow.
  const uint64_t pos = r.position();
  const uint64_t data_start = (pos + alignment - 1) / alignment * alignment;
  TS_RETURN_IF_ERROR(place_tensors(file.tensors, bytes, data_start, alignment));
  return file;
}

}  // namespace

Result<ModelFile> read_gguf(std::shared_ptr<const MappedFile> file) {
  if (file == nullptr) return invalid_argument("read_gguf: no file");
  TS_ASSIGN_OR_RETURN(ModelFile model, parse(file->bytes()));
  model.path = file->path();
  model.mapping = std::move(file);
  return model;
}

Result<ModelFile> parse_gguf(std::span<const std::byte> bytes) { return parse(bytes); }

}  // namespace tessera::model
