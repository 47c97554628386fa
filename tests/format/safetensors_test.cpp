// safetensors: files built by hand from the format's definition (8-byte little-endian header
// length, JSON header, tensor bytes) parse to the right tensors; the writer's files read back the
// same; every malformed file is an error naming what is wrong, never a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "tessera/model/format/safetensors.h"

namespace tessera::model {
namespace safetensors_test {

using kernels::DType;

// A file from a header text and a data buffer (the header is not padded unless `pad`).
std::vector<std::byte> raw(const std::string& header, size_t data_bytes, bool pad = false) {
  std::string h = header;
  if (pad) {
    while ((8 + h.size()) % 8 != 0) h.push_back(' ');
  }
  std::vector<std::byte> out(8 + h.size() + data_bytes);
  const uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + h.size() + i] = static_cast<std::byte>(i * 7 + 1);
  return out;
}

void expect_error(const std::vector<std::byte>& bytes, ErrorCode code,
                  std::initializer_list<std::string_view> fragments) {
  auto r = parse_safetensors(bytes);
  ASSERT_FALSE(r.is_ok()) << "accepted a malformed file";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (auto f : fragments) {
    EXPECT_NE(r.status().message().find(f), std::string::npos)
        << "message lacks '" << f << "': " << r.status().message();
  }
}

const std::string kTwo =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b.weight":{"dtype":"F16","shape":[2,3],"data_offsets":[16,28]},)"
    R"("a.bias":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";

TEST(Safetensors, HandBuiltFileParses) {
  const auto bytes = raw(kTwo, 28, /*pad=*/true);
  auto f = parse_safetensors(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->format, FileFormat::kSafetensors);
  ASSERT_EQ(f->tensors.size(), 2u);
  // In the order of their bytes, shapes in GGUF order.
  const TensorInfo& a = f->tensors[0];
  EXPECT_EQ(a.name, "a.bias");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.n_dims, 1);
  EXPECT_EQ(a.ne[0], 4);
  EXPECT_EQ(a.n_bytes, 16u);
  const TensorInfo& b = f->tensors[1];
  EXPECT_EQ(b.name, "b.weight");
  EXPECT_EQ(b.dtype, DType::kF16);
  EXPECT_EQ(b.n_dims, 2);
  EXPECT_EQ(b.ne[0], 3);  // innermost: the last PyTorch dimension
  EXPECT_EQ(b.ne[1], 2);
  EXPECT_EQ(b.n_bytes, 12u);
  // The bytes are the file's, at the stated offsets.
  const size_t data_start = bytes.size() - 28;
  EXPECT_EQ(std::memcmp(a.data, bytes.data() + data_start, 16), 0);
  EXPECT_EQ(std::memcmp(b.data, bytes.data() + data_start + 16, 12), 0);
  auto fmt = f->metadata.get_string_or("safetensors.format", "");
  ASSERT_TRUE(fmt.is_ok());
  EXPECT_EQ(*fmt, "pt");
}

TEST(Safetensors, MisalignedTensorsAreCopiedAligned) {
  // An unpadded header of odd length leaves the F32 data unaligned in the buffer.
  const std::string h = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE((8 + h.size()) % 4, 0u);
  const auto bytes = raw(h, 8);
  auto f = parse_safetensors(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f->tensors[0].data) % 4, 0u);
  EXPECT_EQ(std::memcmp(f->tensors[0].data, bytes.data() + 8 + h.size(), 8), 0);
}

TEST(Safetensors, WriterRoundTrip) {
  SafetensorsWriter w;
  std::vector<float> v(6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::vector<uint16_t> h = {0x3c00, 0x4000, 0xbc00, 0x0000};
  ASSERT_TRUE(w.add_tensor("w", DType::kF32, {3, 2}, std::as_bytes(std::span(v))).is_ok());
  ASSERT_TRUE(w.add_tensor("h", DType::kBF16, {4}, std::as_bytes(std::span(h))).is_ok());
  w.add_metadata("format", "pt");
  EXPECT_FALSE(w.add_tensor("w", DType::kF32, {3, 2}, std::as_bytes(std::span(v))).is_ok());
  EXPECT_FALSE(w.add_tensor("q", DType::kF32, {4, 2}, std::as_bytes(std::span(v))).is_ok());
  EXPECT_FALSE(w.add_tensor("q", DType::kQ8_0, {32}, std::as_bytes(std::span(v))).is_ok());
  const auto bytes = w.serialize();
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "tensor data should start 8-byte aligned";
  auto f = parse_safetensors(bytes);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors.size(), 2u);
  const TensorInfo* wt = f->find_tensor("w");
  ASSERT_NE(wt, nullptr);
  EXPECT_EQ(wt->ne[0], 2);
  EXPECT_EQ(wt->ne[1], 3);
  EXPECT_EQ(std::memcmp(wt->data, v.data(), 24), 0);
  const TensorInfo* ht = f->find_tensor("h");
  ASSERT_NE(ht, nullptr);
  EXPECT_EQ(ht->dtype, DType::kBF16);
  EXPECT_EQ(std::memcmp(ht->data, h.data(), 8), 0);
}

TEST(SafetensorsHostile, HeaderLength) {
  expect_error({}, ErrorCode::kCorruptData, {"header length"});
  auto bytes = raw(kTwo, 28);
  uint64_t huge = kMaxSafetensorsHeaderBytes + 1;
  std::memcpy(bytes.data(), &huge, 8);
  expect_error(bytes, ErrorCode::kCorruptData, {"limit"});
  uint64_t past = bytes.size();
  std::memcpy(bytes.data(), &past, 8);
  expect_error(bytes, ErrorCode::kCorruptData, {"truncated"});
}

TEST(SafetensorsHostile, BadJson) {
  expect_error(raw("[1,2]", 0), ErrorCode::kCorruptData, {"not a JSON object"});
  expect_error(raw("{\"a\":", 0), ErrorCode::kCorruptData, {"not valid JSON"});
  expect_error(raw("{\"a\":\"\xff\"}", 0), ErrorCode::kCorruptData, {"not valid JSON"});
  expect_error(raw(R"({"__metadata__":{"k":1}})", 0), ErrorCode::kCorruptData, {"not a string"});
  expect_error(raw(R"({"x":[]})", 0), ErrorCode::kCorruptData, {"'x'", "not an object"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", 4),
               ErrorCode::kCorruptData, {"unknown field 'extra'"});
  expect_error(raw(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", 4), ErrorCode::kCorruptData,
               {"'dtype'"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"shape"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"shape"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
               ErrorCode::kCorruptData, {"data_offsets"});
  expect_error(raw(R"({"x":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"unknown dtype 'Q4'"});
}

TEST(SafetensorsHostile, SizesAndOffsets) {
  // Range shorter than shape x dtype.
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"'x'", "needs 8"});
  // end before begin.
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8),
               ErrorCode::kCorruptData, {"'x'"});
  // Past the end of the file.
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
               ErrorCode::kCorruptData, {"truncated"});
  // A gap, an overlap, trailing bytes.
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
               ErrorCode::kCorruptData, {"gap"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
               ErrorCode::kCorruptData, {"overlaps"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12),
               ErrorCode::kCorruptData, {"8 bytes after the last tensor"});
  // Element counts that overflow.
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"overflows"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4),
               ErrorCode::kCorruptData, {"'x'"});
}

TEST(SafetensorsHostile, UnsupportedButWellFormed) {
  expect_error(raw(R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
               ErrorCode::kUnsupported, {"'x'", "I64"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 4),
               ErrorCode::kUnsupported, {"5 dimensions"});
  expect_error(raw(R"({"x":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", 0),
               ErrorCode::kUnsupported, {"no elements"});
}

TEST(SafetensorsHostile, EveryTruncationIsAnError) {
  const auto whole = raw(kTwo, 28, true);
  for (size_t n = 0; n < whole.size(); ++n) {
    const std::vector<std::byte> cut(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(parse_safetensors(cut).is_ok()) << "accepted " << n << " of " << whole.size();
  }
}

}  // namespace safetensors_test
}  // namespace tessera::model
