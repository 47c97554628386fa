// libFuzzer target for the GGUF reader. Beyond "no crash, no sanitizer report" it checks that
// whatever the reader accepts is consistent: every tensor's bytes are readable, and writing the
// parsed file back with GgufWriter and reading that again gives the same metadata and tensors.
// Build and run: scripts/fuzz.sh (needs clang; -DTESSERA_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"

namespace {

using tessera::model::GgufWriter;
using tessera::model::ModelFile;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Touches every value and every tensor byte range, so ASan sees any dangling or short range.
uint64_t walk(const ModelFile& file) {
  uint64_t h = 0;
  for (const auto& [key, value] : file.metadata.entries()) {
    h += key.size() + value.to_display_string().size() + value.to_display_string(1000).size();
    if (file.metadata.find(key) != &value) fail("metadata lookup", key);
  }
  for (const auto& t : file.tensors) {
    if (t.n_bytes == 0 || t.data == nullptr) fail("empty tensor", t.name);
    h += static_cast<uint8_t>(t.data[0]) + static_cast<uint8_t>(t.data[t.n_bytes - 1]);
    h += t.shape_string().size() + static_cast<uint64_t>(t.n_elements());
    if (file.find_tensor(t.name) != &t) fail("tensor lookup", t.name);
  }
  return h + file.tensor_bytes() + file.n_parameters();
}

void expect_same(const ModelFile& a, const ModelFile& b) {
  if (a.metadata.size() != b.metadata.size()) fail("round trip", "metadata count");
  for (size_t i = 0; i < a.metadata.size(); ++i) {
    const auto& [ka, va] = a.metadata.entries()[i];
    const auto& [kb, vb] = b.metadata.entries()[i];
    if (ka != kb || va.type() != vb.type() ||
        va.to_display_string(1u << 20) != vb.to_display_string(1u << 20)) {
      fail("round trip changed metadata", ka);
    }
  }
  if (a.tensors.size() != b.tensors.size()) fail("round trip", "tensor count");
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.n_dims != y.n_dims || x.ne != y.ne ||
        x.n_bytes != y.n_bytes || std::memcmp(x.data, y.data, x.n_bytes) != 0) {
      fail("round trip changed tensor", x.name);
    }
  }
}

void round_trip(const ModelFile& file) {
  GgufWriter w;
  for (const auto& [key, value] : file.metadata.entries()) w.metadata().set(key, value);
  for (const auto& t : file.tensors) {
    std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    auto s = w.add_tensor(t.name, t.dtype, shape, std::span(t.data, t.n_bytes));
    if (!s.is_ok()) fail("writer refused an accepted tensor", s.to_string());
  }
  const std::vector<std::byte> bytes = w.serialize();
  auto again = tessera::model::parse_gguf(bytes);
  if (!again.is_ok()) fail("reader refused the writer's output", again.status().to_string());
  expect_same(file, *again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = tessera::model::parse_gguf(
      std::span(reinterpret_cast<const std::byte*>(data), size));
  if (!file.is_ok()) {
    if (file.status().message().empty()) fail("error without a message", "");
    return 0;
  }
  volatile uint64_t sink = walk(*file);
  (void)sink;
  round_trip(*file);
  return 0;
}
