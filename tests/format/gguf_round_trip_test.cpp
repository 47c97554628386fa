// GgufWriter -> GGUF reader round trips: every metadata type (nested arrays included), every
// supported tensor dtype, v2 files, alignment, files on disk, and the real vocab-only GGUF files
// written by llama.cpp under ../shared/tokenizers.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <variant>

#include "raw_gguf.h"
#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "test_util.h"

namespace tessera::model {
namespace gguf_round_trip_test {

using kernels::DType;
using testing::RawGguf;

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

void expect_same_value(const GgufValue& a, const GgufValue& b, const std::string& where) {
  ASSERT_EQ(a.type(), b.type()) << where;
  if (a.type() != GgufType::kArray) {
    EXPECT_TRUE(a.raw() == b.raw()) << where << ": " << a.to_display_string() << " vs "
                                    << b.to_display_string();
    return;
  }
  const GgufArray* x = *a.as_array();
  const GgufArray* y = *b.as_array();
  ASSERT_EQ(x->elem_type, y->elem_type) << where;
  ASSERT_EQ(x->items.size(), y->items.size()) << where;
  for (size_t i = 0; i < x->items.size(); ++i) {
    expect_same_value(x->items[i], y->items[i], where + "[" + std::to_string(i) + "]");
  }
}

GgufValue array_of(GgufType elem, std::vector<GgufValue> items) {
  return GgufValue::array(GgufArray{elem, std::move(items)});
}

// Metadata with every value type, extreme values, and arrays of every element type.
Metadata all_types_metadata() {
  Metadata m;
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("t.u8", GgufValue::u8(255));
  m.set("t.i8", GgufValue::i8(-128));
  m.set("t.u16", GgufValue::u16(65535));
  m.set("t.i16", GgufValue::i16(-32768));
  m.set("t.u32", GgufValue::u32(4294967295u));
  m.set("t.i32", GgufValue::i32(std::numeric_limits<int32_t>::min()));
  m.set("t.u64", GgufValue::u64(std::numeric_limits<uint64_t>::max()));
  m.set("t.i64", GgufValue::i64(std::numeric_limits<int64_t>::min()));
  m.set("t.f32", GgufValue::f32(-1.5e-7f));
  m.set("t.f64", GgufValue::f64(3.141592653589793));
  m.set("t.bool_true", GgufValue::boolean(true));
  m.set("t.bool_false", GgufValue::boolean(false));
  m.set("t.string", GgufValue::string(std::string("h\xc3\xa9llo\nw\0rld", 13)));
  m.set("t.empty_string", GgufValue::string(""));
  m.set("t.arr.u8", array_of(GgufType::kUint8, {GgufValue::u8(0), GgufValue::u8(200)}));
  m.set("t.arr.i8", array_of(GgufType::kInt8, {GgufValue::i8(-1)}));
  m.set("t.arr.u16", array_of(GgufType::kUint16, {GgufValue::u16(7)}));
  m.set("t.arr.i16", array_of(GgufType::kInt16, {GgufValue::i16(-7)}));
  m.set("t.arr.u32", array_of(GgufType::kUint32, {GgufValue::u32(1), GgufValue::u32(2)}));
  m.set("t.arr.i32", array_of(GgufType::kInt32, {GgufValue::i32(-3)}));
  m.set("t.arr.u64", array_of(GgufType::kUint64, {GgufValue::u64(1ull << 60)}));
  m.set("t.arr.i64", array_of(GgufType::kInt64, {GgufValue::i64(-(1ll << 60))}));
  m.set("t.arr.f32", array_of(GgufType::kFloat32, {GgufValue::f32(0.25f), GgufValue::f32(-0.f)}));
  m.set("t.arr.f64", array_of(GgufType::kFloat64, {GgufValue::f64(1e300)}));
  m.set("t.arr.bool", array_of(GgufType::kBool, {GgufValue::boolean(true), GgufValue::boolean(false)}));
  m.set("t.arr.string", array_of(GgufType::kString, {GgufValue::string("a"), GgufValue::string("")}));
  m.set("t.arr.empty", array_of(GgufType::kFloat32, {}));
  auto inner = array_of(GgufType::kString, {GgufValue::string("x"), GgufValue::string("yz")});
  auto mid = array_of(GgufType::kArray, {inner, array_of(GgufType::kString, {})});
  m.set("t.arr.nested2", mid);
  m.set("t.arr.nested4",
        array_of(GgufType::kArray,
                 {array_of(GgufType::kArray, {mid, array_of(GgufType::kArray, {})})}));
  return m;
}

struct TensorCase {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  size_t n_bytes;
};

// Every supported dtype, 1 to 4 dimensions; sizes computed by hand from the block layouts
// (f32 4 B, f16/bf16 2 B per value; q8_0 34 B and q4_0 18 B per 32 values).
std::vector<TensorCase> all_dtype_tensors() {
  return {
      {"f32.1d", DType::kF32, {7}, 28},
      {"f16.2d", DType::kF16, {3, 5}, 30},
      {"bf16.3d", DType::kBF16, {2, 3, 4}, 48},
      {"q8_0.2d", DType::kQ8_0, {64, 3}, 6 * 34},
      {"q4_0.4d", DType::kQ4_0, {32, 2, 1, 3}, 6 * 18},
  };
}

GgufWriter make_writer() {
  GgufWriter w;
  const Metadata metadata = all_types_metadata();
  for (const auto& [key, value] : metadata.entries()) w.metadata().set(key, value);
  uint32_t seed = 1;
  for (const auto& t : all_dtype_tensors()) {
    EXPECT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, random_bytes(t.n_bytes, seed++)).is_ok());
  }
  return w;
}

void expect_matches_writer_input(const ModelFile& file, size_t alignment) {
  const Metadata expected = all_types_metadata();
  ASSERT_EQ(file.metadata.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [key, value] = expected.entries()[i];
    EXPECT_EQ(file.metadata.entries()[i].first, key);  // order kept
    expect_same_value(file.metadata.entries()[i].second, value, key);
  }
  const auto cases = all_dtype_tensors();
  ASSERT_EQ(file.tensors.size(), cases.size());
  uint32_t seed = 1;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorInfo& t = file.tensors[i];
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.dtype, cases[i].dtype);
    ASSERT_EQ(t.n_dims, static_cast<int>(cases[i].shape.size()));
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(t.ne[d], d < t.n_dims ? cases[i].shape[d] : 1) << t.name << " ne[" << d << "]";
    }
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    ASSERT_EQ(t.n_bytes, cases[i].n_bytes) << t.name;
    const auto data = random_bytes(t.n_bytes, seed++);
    EXPECT_EQ(std::memcmp(t.data, data.data(), t.n_bytes), 0) << t.name;
  }
}

TEST(GgufRoundTrip, EveryMetadataTypeAndSupportedDtype) {
  const auto bytes = make_writer().serialize();
  auto file = parse_gguf(bytes);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->gguf_version, 3u);
  EXPECT_EQ(file->format, FileFormat::kGguf);
  expect_matches_writer_input(*file, 32);
  EXPECT_EQ(static_cast<size_t>(file->tensors[1].data - bytes.data()) % 32, 0u);
}

TEST(GgufRoundTrip, ReadsVersion2) {
  auto bytes = make_writer().serialize();
  bytes[4] = std::byte{2};  // v2 differs from v3 only in the version field (counts are uint64)
  auto file = parse_gguf(bytes);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->gguf_version, 2u);
  expect_matches_writer_input(*file, 32);
}

TEST(GgufRoundTrip, HonorsCallerAlignment) {
  GgufWriter w;
  w.metadata().set("general.alignment", GgufValue::u32(256));
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {3}, random_bytes(12, 1)).is_ok());
  ASSERT_TRUE(w.add_tensor("b", DType::kF16, {5}, random_bytes(10, 2)).is_ok());
  const auto bytes = w.serialize();
  auto file = parse_gguf(bytes);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  for (const auto& t : file->tensors) {
    EXPECT_EQ(t.offset % 256, 0u) << t.name;
    EXPECT_EQ(static_cast<size_t>(t.data - bytes.data()) % 256, 0u) << t.name;
  }
  EXPECT_EQ(file->tensors[1].offset, 256u);
}

// The writer's bytes equal a file encoded field by field from the specification.
TEST(GgufRoundTrip, WriterMatchesSpecificationByteForByte) {
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("llama"));
  w.metadata().set("n", GgufValue::array(GgufArray{GgufType::kInt16, {GgufValue::i16(-2)}}));
  ASSERT_TRUE(w.add_tensor("w", DType::kF32, {2, 1}, random_bytes(8, 3)).is_ok());
  ASSERT_TRUE(w.add_tensor("v", DType::kF16, {3}, random_bytes(6, 4)).is_ok());

  RawGguf raw;
  raw.header(3, 2, 2).kv_string("general.architecture", "llama");
  raw.key("n", 9).u32(3).u64(1).put<int16_t>(-2);
  raw.tensor("w", {2, 1}, 0, 0).tensor("v", {3}, 1, 32).pad(32);
  const auto w_data = random_bytes(8, 3);
  const auto v_data = random_bytes(6, 4);
  std::vector<std::byte> expected = raw.bytes();
  expected.insert(expected.end(), w_data.begin(), w_data.end());
  expected.resize(expected.size() + 24);
  expected.insert(expected.end(), v_data.begin(), v_data.end());
  expected.resize(expected.size() + 26);
  EXPECT_EQ(w.serialize(), expected);
}

TEST(GgufRoundTrip, WritesFileAtomicallyAndOpensIt) {
  testing::TempDir dir;
  const std::string path = dir.file("m.gguf");
  ASSERT_TRUE(make_writer().write(path).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto file = open_model_file(path);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->path, path);
  EXPECT_NE(file->mapping, nullptr);
  expect_matches_writer_input(*file, 32);
}

TEST(GgufRoundTrip, WriteToMissingDirectoryIsIoError) {
  testing::TempDir dir;
  Status s = make_writer().write(dir.file("no/such/dir/m.gguf"));
  EXPECT_EQ(s.code(), ErrorCode::kIoError) << s.to_string();
}

TEST(GgufWriter, AddTensorValidates) {
  GgufWriter w;
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {3}, random_bytes(11, 1)).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {}, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {1, 1, 1, 1, 1}, random_bytes(4, 1)).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {0}, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kQ8_0, {16}, random_bytes(17, 1)).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("", DType::kF32, {1}, random_bytes(4, 1)).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {1ll << 32, 1ll << 32}, {}).code(),
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(w.add_tensor("a", DType::kQ8_0, {32}, random_bytes(34, 1)).is_ok());
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {1}, random_bytes(4, 1)).code(),
            ErrorCode::kInvalidArgument);
}

TEST(GgufRoundTrip, MetadataOnlyFile) {
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("llama"));
  auto file = parse_gguf(w.serialize());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_TRUE(file->tensors.empty());
  EXPECT_EQ(*file->metadata.get_string("general.architecture"), "llama");
}

// Vocab-only files written by llama.cpp's own gguf-py: real-world compatibility.
TEST(GgufRoundTrip, ReadsLlamaCppVocabFiles) {
  TS_SKIP_WITHOUT_SHARED(dir, "tokenizers");
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    ++n_files;
    auto file = open_model_file(entry.path().string());
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    EXPECT_EQ(file->gguf_version, 3u) << entry.path();
    auto tokens = file->metadata.get_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.is_ok()) << entry.path() << ": " << tokens.status().to_string();
    EXPECT_EQ((*tokens)->elem_type, GgufType::kString);
    EXPECT_GT((*tokens)->items.size(), 1000u) << entry.path();
    EXPECT_TRUE(file->metadata.get_string("tokenizer.ggml.model").is_ok()) << entry.path();
  }
  EXPECT_GE(n_files, 6);
}

}  // namespace gguf_round_trip_test
}  // namespace tessera::model
