// Hostile GGUF input: every malformed file must come back as an error naming what was expected
// and what was found, never a crash, an out-of-bounds read or an allocation sized by the file.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include "raw_gguf.h"
#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"

namespace tessera::model {
namespace gguf_hostile_test {

using kernels::DType;
using testing::RawGguf;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;
constexpr uint32_t kIQ2_XXS = 16;  // a type Tessera knows but has no kernels for
constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max();

void expect_error(const std::vector<std::byte>& bytes, ErrorCode code,
                  std::initializer_list<std::string_view> fragments) {
  auto r = parse_gguf(bytes);
  ASSERT_FALSE(r.is_ok()) << "accepted a malformed file";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (auto f : fragments) {
    EXPECT_NE(r.status().message().find(f), std::string::npos)
        << "message lacks '" << f << "': " << r.status().message();
  }
}

// One f32 tensor of `ne` at `offset`, with `data_bytes` of data after the aligned header.
std::vector<std::byte> one_tensor(const std::vector<uint64_t>& ne, uint32_t type,
                                  uint64_t offset, size_t data_bytes) {
  return RawGguf().header(3, 1, 0).tensor("t", ne, type, offset).pad(32).fill(data_bytes).bytes();
}

TEST(GgufHostile, ValidBaselineParses) {
  EXPECT_TRUE(parse_gguf(one_tensor({4}, kF32, 0, 16)).is_ok());
}

TEST(GgufHostile, BadMagic) {
  auto bytes = one_tensor({4}, kF32, 0, 16);
  bytes[0] = std::byte{'X'};
  expect_error(bytes, ErrorCode::kCorruptData, {"magic", "58 47 55 46"});
}

TEST(GgufHostile, EmptyInput) { expect_error({}, ErrorCode::kCorruptData, {"magic"}); }

TEST(GgufHostile, UnsupportedVersions) {
  expect_error(RawGguf().header(1, 0, 0).bytes(), ErrorCode::kUnsupported, {"version 1"});
  expect_error(RawGguf().header(4, 0, 0).bytes(), ErrorCode::kUnsupported, {"version 4"});
  expect_error(RawGguf().header(0x03000000, 0, 0).bytes(), ErrorCode::kUnsupported,
               {"big-endian"});
}

// A small valid file whose every strict prefix is invalid (its last tensor fills its aligned
// slot, so no prefix merely drops trailing padding). Each prefix lives in its own allocation of
// exactly its size, so an AddressSanitizer build catches any read past the end.
TEST(GgufHostile, TruncatedAtEveryPrefix) {
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("llama"));
  w.metadata().set("x.n", GgufValue::u32(7));
  w.metadata().set("x.f", GgufValue::f64(0.5));
  auto strings = GgufValue::array(GgufArray{GgufType::kString, {GgufValue::string("ab")}});
  w.metadata().set("x.nested", GgufValue::array(GgufArray{GgufType::kArray, {strings}}));
  ASSERT_TRUE(w.add_tensor("a", DType::kF16, {5}, std::vector<std::byte>(10)).is_ok());
  ASSERT_TRUE(w.add_tensor("b", DType::kF32, {8}, std::vector<std::byte>(32)).is_ok());
  const auto full = w.serialize();
  ASSERT_TRUE(parse_gguf(full).is_ok());
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<std::byte> prefix(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    auto r = parse_gguf(prefix);
    ASSERT_FALSE(r.is_ok()) << "accepted a prefix of " << n << " of " << full.size() << " bytes";
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData) << n << ": " << r.status().to_string();
  }
}

TEST(GgufHostile, HugeCounts) {
  expect_error(RawGguf().header(3, kHuge, 0).bytes(), ErrorCode::kCorruptData, {"tensors"});
  expect_error(RawGguf().header(3, 1ull << 40, 0).fill(64).bytes(), ErrorCode::kCorruptData,
               {"1099511627776 tensors"});
  expect_error(RawGguf().header(3, 0, kHuge).bytes(), ErrorCode::kCorruptData,
               {"metadata entries"});
  expect_error(RawGguf().header(3, 0, 1ull << 40).fill(64).bytes(), ErrorCode::kCorruptData,
               {"metadata entries"});
}

TEST(GgufHostile, HugeStringLengths) {
  auto key = RawGguf().header(3, 0, 1).u64(kHuge).fill(16).bytes();
  expect_error(key, ErrorCode::kCorruptData, {"metadata key", "needed 18446744073709551615"});
  auto value = RawGguf().header(3, 0, 1).key("k", kTypeString).u64(1ull << 62).fill(8).bytes();
  expect_error(value, ErrorCode::kCorruptData, {"string value", "metadata key 'k'"});
  auto name = RawGguf().header(3, 1, 0).u64(kHuge).fill(40).bytes();
  expect_error(name, ErrorCode::kCorruptData, {"tensor name"});
}

TEST(GgufHostile, HugeArrayCounts) {
  auto bytes = RawGguf().header(3, 0, 1).key("k", kTypeArray).u32(10).u64(1ull << 61).fill(64);
  expect_error(bytes.bytes(), ErrorCode::kCorruptData, {"array claims 2305843009213693952"});
  // Arrays of arrays: each inner array takes at least 12 bytes.
  auto nested = RawGguf().header(3, 0, 1).key("k", kTypeArray).u32(kTypeArray).u64(6).fill(60);
  expect_error(nested.bytes(), ErrorCode::kCorruptData, {"array claims 6"});
}

TEST(GgufHostile, ArrayLongerThanTheLimitIsRefused) {
  const uint64_t n = (1ull << 24) + 1;
  auto bytes = RawGguf().header(3, 0, 1).key("k", kTypeArray).u32(0).u64(n).fill(n);
  expect_error(bytes.bytes(), ErrorCode::kUnsupported, {"limit"});
}

TEST(GgufHostile, ArraysNestedTooDeep) {
  RawGguf raw;
  raw.header(3, 0, 1).key("k", kTypeArray);
  for (int i = 0; i < 4; ++i) raw.u32(kTypeArray).u64(1);  // five levels of arrays
  raw.u32(0).u64(0);
  expect_error(raw.bytes(), ErrorCode::kCorruptData, {"nested more than 4"});
}

TEST(GgufHostile, BadMetadataValues) {
  expect_error(RawGguf().header(3, 0, 1).key("k", 13).u64(0).bytes(), ErrorCode::kCorruptData,
               {"metadata value type 13", "'k'"});
  expect_error(RawGguf().header(3, 0, 1).key("k", kTypeArray).u32(99).u64(0).bytes(),
               ErrorCode::kCorruptData, {"array element type 99"});
  expect_error(RawGguf().header(3, 0, 1).key("k", 7).u8(2).bytes(), ErrorCode::kCorruptData,
               {"bool value must be 0 or 1, found 2"});
  expect_error(RawGguf().header(3, 0, 1).key("", 0).u8(2).bytes(), ErrorCode::kCorruptData,
               {"empty key"});
  expect_error(RawGguf().header(3, 0, 2).kv_u32("k", 1).kv_u32("k", 2).bytes(),
               ErrorCode::kCorruptData, {"duplicate metadata key 'k'"});
}

TEST(GgufHostile, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    auto bytes = RawGguf().header(3, 0, 1).kv_u32("general.alignment", a).bytes();
    expect_error(bytes, ErrorCode::kCorruptData, {"power of two", std::to_string(a)});
  }
  auto str = RawGguf().header(3, 0, 1).kv_string("general.alignment", "32").bytes();
  expect_error(str, ErrorCode::kCorruptData, {"general.alignment", "string"});
}

TEST(GgufHostile, TensorPastEndOfFile) {
  expect_error(one_tensor({4}, kF32, 0, 15), ErrorCode::kCorruptData,
               {"tensor 't'", "ends past end of file"});
  expect_error(one_tensor({4}, kF32, 32, 40), ErrorCode::kCorruptData, {"ends past end of file"});
  expect_error(one_tensor({4}, kF32, kHuge - 31, 64), ErrorCode::kCorruptData,
               {"ends past end of file"});
  // No data section at all: the file ends right after the tensor infos.
  expect_error(RawGguf().header(3, 1, 0).tensor("t", {4}, kF32, 0).bytes(),
               ErrorCode::kCorruptData, {"ends past end of file"});
}

TEST(GgufHostile, MisalignedOffset) {
  expect_error(one_tensor({4}, kF32, 4, 64), ErrorCode::kCorruptData,
               {"offset 4 is not a multiple of the alignment 32"});
}

// Valid GGUF, but f32 values that do not sit on 4-byte boundaries cannot be read in place.
TEST(GgufHostile, DataMisalignedForItsType) {
  RawGguf raw;
  raw.header(3, 1, 1).kv_u32("general.alignment", 1).tensor("t", {1}, kF32, 0);
  ASSERT_EQ(raw.size(), 90u);  // with alignment 1 the data starts right here, at 90 = 2 mod 4
  expect_error(raw.fill(4).bytes(), ErrorCode::kUnsupported,
               {"tensor 't': f32 data at file offset 90 is not aligned to 4 bytes"});
  // The same tensor as f16 needs only 2-byte alignment.
  RawGguf ok;
  ok.header(3, 1, 1).kv_u32("general.alignment", 1).tensor("t", {2}, 1, 0).fill(4);
  EXPECT_TRUE(parse_gguf(ok.bytes()).is_ok());
}

TEST(GgufHostile, OverlappingTensors) {
  auto bytes = RawGguf()
                   .header(3, 2, 0)
                   .tensor("a", {16}, kF32, 32)
                   .tensor("b", {16}, kF32, 0)
                   .pad(32)
                   .fill(128)
                   .bytes();
  expect_error(bytes, ErrorCode::kCorruptData, {"'b' [0, 64)", "'a' [32, 96)", "overlap"});
}

TEST(GgufHostile, BadDimensions) {
  expect_error(one_tensor({}, kF32, 0, 32), ErrorCode::kCorruptData,
               {"expected 1 to 4 dimensions, found 0"});
  expect_error(one_tensor({1, 1, 1, 1, 1}, kF32, 0, 32), ErrorCode::kCorruptData,
               {"found 5"});
  expect_error(one_tensor({4, 0}, kF32, 0, 32), ErrorCode::kCorruptData,
               {"ne[1] must be at least 1", "found 0"});
  expect_error(one_tensor({kHuge}, kF32, 0, 32), ErrorCode::kCorruptData, {"ne[0]"});
}

TEST(GgufHostile, NeNotMultipleOfBlockSize) {
  expect_error(one_tensor({16, 2}, kQ8_0, 0, 128), ErrorCode::kCorruptData,
               {"ne[0] = 16 is not a multiple of the q8_0 block size 32"});
}

// Every weight type added for llama.cpp's mixes: a row that is not whole blocks, and data one byte
// short of the blocks the shape needs, are refused naming the type; whole blocks parse.
TEST(GgufHostile, NewTypesCheckBlocksAndTheirBytes) {
  for (DType t : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                  DType::kIQ4_NL, DType::kIQ4_XS}) {
    const auto& info = kernels::dtype_info(t);
    const auto id = static_cast<uint32_t>(t);
    const auto bs = static_cast<uint64_t>(info.block_size);
    const auto need = static_cast<size_t>(2 * info.block_bytes);  // two rows of one block
    expect_error(one_tensor({bs / 2, 2}, id, 0, need), ErrorCode::kCorruptData,
                 {"is not a multiple of the", std::string(info.name)});
    expect_error(one_tensor({bs, 2}, id, 0, need - 1), ErrorCode::kCorruptData,
                 {"ends past end of file"});
    EXPECT_TRUE(parse_gguf(one_tensor({bs, 2}, id, 0, need)).is_ok()) << info.name;
  }
}

// Tessera's 2:4 types (ids 1024-1026): rows that are not whole blocks and data one byte short
// are refused naming the type; a block whose keep-mask is not 2 of every 4 is refused naming the
// tensor and the block (the kernels trust the masks); valid blocks parse.
TEST(GgufHostile, SparseTypesCheckBlocksBytesAndMasks) {
  for (DType t : {DType::kF16_2of4, DType::kQ8_0_2of4, DType::kQ4_0_2of4}) {
    const auto& info = kernels::dtype_info(t);
    const auto id = static_cast<uint32_t>(t);
    const auto bs = static_cast<uint64_t>(info.block_size);
    const auto block = static_cast<size_t>(info.block_bytes);
    const size_t mask_at = t == DType::kF16_2of4 ? 0 : 2;
    // Two rows of one block, every group keeping its first two weights (mask nibbles 0x3).
    auto with_data = [&](size_t data_bytes, uint8_t mask_byte) {
      RawGguf g;
      g.header(3, 1, 0).tensor("blk.0.attn_q.weight", {bs, 2}, id, 0).pad(32);
      for (size_t b = 0; b < data_bytes; ++b) {
        const size_t in_block = b % block;
        const bool is_mask = in_block >= mask_at && in_block < mask_at + bs / 8;
        g.u8(is_mask ? mask_byte : 0x11);
      }
      return g.bytes();
    };
    expect_error(one_tensor({bs / 2, 2}, id, 0, 2 * block), ErrorCode::kCorruptData,
                 {"is not a multiple of the", std::string(info.name)});
    expect_error(with_data(2 * block - 1, 0x33), ErrorCode::kCorruptData, {"ends past end of file"});
    EXPECT_TRUE(parse_gguf(with_data(2 * block, 0x33)).is_ok()) << info.name;
    expect_error(with_data(2 * block, 0x37), ErrorCode::kCorruptData,
                 {"tensor 'blk.0.attn_q.weight'", std::string(info.name), "block 0",
                  "not 2 of every 4"});
    expect_error(with_data(2 * block, 0x00), ErrorCode::kCorruptData, {"not 2 of every 4"});
  }
  expect_error(one_tensor({32}, 1027, 0, 64), ErrorCode::kCorruptData, {"unknown type id 1027"});
}

TEST(GgufHostile, ElementCountOverflow) {
  expect_error(one_tensor({1ull << 32, 1ull << 32}, kF32, 0, 32), ErrorCode::kCorruptData,
               {"overflows"});
  // The element count fits, the byte count does not.
  expect_error(one_tensor({1ull << 31, 1ull << 31}, kF32, 0, 32), ErrorCode::kCorruptData,
               {"overflows"});
  expect_error(one_tensor({2, 1ull << 31, 1ull << 31, 2}, kF32, 0, 32),
               ErrorCode::kCorruptData, {"overflows"});
}

TEST(GgufHostile, UnknownTensorType) {
  expect_error(one_tensor({4}, 99, 0, 32), ErrorCode::kCorruptData,
               {"tensor 't'", "unknown type id 99"});
}

TEST(GgufHostile, UnsupportedTensorTypeNamesTensorAndType) {
  auto bytes = RawGguf()
                   .header(3, 1, 0)
                   .tensor("blk.0.ffn_down.weight", {256}, kIQ2_XXS, 0)
                   .pad(32)
                   .fill(66)
                   .bytes();
  expect_error(bytes, ErrorCode::kUnsupported,
               {"tensor 'blk.0.ffn_down.weight' has type iq2_xxs, which Tessera does not support yet",
                "f32", "f16", "bf16", "q8_0", "q4_0"});
}

TEST(GgufHostile, BadTensorNames) {
  auto dup = RawGguf()
                 .header(3, 2, 0)
                 .tensor("a", {8}, kF32, 0)
                 .tensor("a", {8}, kF32, 32)
                 .pad(32)
                 .fill(64)
                 .bytes();
  expect_error(dup, ErrorCode::kCorruptData, {"duplicate tensor name 'a'"});
  auto empty = RawGguf().header(3, 1, 0).tensor("", {8}, kF32, 0).pad(32).fill(32).bytes();
  expect_error(empty, ErrorCode::kCorruptData, {"empty name"});
  auto long_name =
      RawGguf().header(3, 1, 0).tensor(std::string(65, 'n'), {8}, kF32, 0).pad(32).fill(32);
  expect_error(long_name.bytes(), ErrorCode::kCorruptData, {"65 bytes long"});
  auto control = RawGguf().header(3, 1, 0).tensor("a\n", {8}, 77, 0).pad(32).fill(32).bytes();
  expect_error(control, ErrorCode::kCorruptData, {"tensor 'a\\x0a'"});
}

}  // namespace gguf_hostile_test
}  // namespace tessera::model
