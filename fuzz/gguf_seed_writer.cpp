// Writes a few small valid GGUF files into a directory, as the seed corpus of gguf_fuzzer:
// metadata of every type, tensors of every supported dtype, a custom alignment, nested arrays
// and a version-2 file. Usage: gguf_seed_writer <dir>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/model/format/gguf_writer.h"

namespace {

using tessera::kernels::DType;
using tessera::model::GgufArray;
using tessera::model::GgufType;
using tessera::model::GgufValue;
using tessera::model::GgufWriter;

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 37 + 11);
  return out;
}

void add_all_types(GgufWriter& w) {
  auto& m = w.metadata();
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("a.u8", GgufValue::u8(1));
  m.set("a.i8", GgufValue::i8(-1));
  m.set("a.u16", GgufValue::u16(2));
  m.set("a.i16", GgufValue::i16(-2));
  m.set("a.u32", GgufValue::u32(3));
  m.set("a.i32", GgufValue::i32(-3));
  m.set("a.u64", GgufValue::u64(4));
  m.set("a.i64", GgufValue::i64(-4));
  m.set("a.f32", GgufValue::f32(0.5f));
  m.set("a.f64", GgufValue::f64(0.25));
  m.set("a.bool", GgufValue::boolean(true));
  std::vector<GgufValue> tokens;
  for (int i = 0; i < 16; ++i) tokens.push_back(GgufValue::string("tok" + std::to_string(i)));
  m.set("tokenizer.ggml.tokens", GgufValue::array(GgufArray{GgufType::kString, tokens}));
  auto inner = GgufValue::array(GgufArray{GgufType::kInt32, {GgufValue::i32(7)}});
  m.set("a.nested", GgufValue::array(GgufArray{
                        GgufType::kArray, {GgufValue::array(GgufArray{GgufType::kArray, {inner}})}}));
}

bool add_all_dtypes(GgufWriter& w) {
  bool ok = w.add_tensor("f32", DType::kF32, {4, 2}, pattern(32)).is_ok();
  ok &= w.add_tensor("f16", DType::kF16, {3}, pattern(6)).is_ok();
  ok &= w.add_tensor("bf16", DType::kBF16, {2, 1, 2}, pattern(8)).is_ok();
  ok &= w.add_tensor("q8_0", DType::kQ8_0, {32, 1, 1, 2}, pattern(68)).is_ok();
  ok &= w.add_tensor("q4_0", DType::kQ4_0, {32}, pattern(18)).is_ok();
  // Every other supported block type: one block each, so mutations hit their size checks.
  for (DType t : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS}) {
    const auto& info = tessera::kernels::dtype_info(t);
    ok &= w.add_tensor(std::string(info.name), t, {info.block_size},
                       pattern(static_cast<size_t>(info.block_bytes)))
              .is_ok();
  }
  // Tessera's 2:4 types with valid keep-masks (every group keeps weights 0 and 1), so the seed
  // parses and mutations reach the mask check.
  for (DType t : {DType::kF16_2of4, DType::kQ8_0_2of4, DType::kQ4_0_2of4}) {
    const auto& info = tessera::kernels::dtype_info(t);
    auto bytes = pattern(static_cast<size_t>(info.block_bytes));
    const size_t mask_at = t == DType::kF16_2of4 ? 0 : 2;
    for (int64_t b = 0; b < info.block_size / 8; ++b) bytes[mask_at + b] = std::byte{0x33};
    ok &= w.add_tensor(std::string(info.name), t, {info.block_size}, bytes).is_ok();
  }
  return ok;
}

bool save(const GgufWriter& w, const std::filesystem::path& path, bool as_v2 = false) {
  std::vector<std::byte> bytes = w.serialize();
  if (as_v2) bytes[4] = std::byte{2};
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  GgufWriter metadata_only;
  add_all_types(metadata_only);
  GgufWriter tensors_only;
  GgufWriter full;
  add_all_types(full);
  GgufWriter aligned;
  aligned.metadata().set("general.alignment", GgufValue::u32(64));
  const bool ok = add_all_dtypes(tensors_only) && add_all_dtypes(full) && add_all_dtypes(aligned) &&
                  save(metadata_only, dir / "metadata_only.gguf") &&
                  save(tensors_only, dir / "tensors_only.gguf") && save(full, dir / "full.gguf") &&
                  save(full, dir / "full_v2.gguf", true) && save(aligned, dir / "aligned64.gguf");
  if (!ok) {
    std::fprintf(stderr, "gguf_seed_writer: failed to write seeds to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
