// libFuzzer target for the safetensors reader. Beyond "no crash, no sanitizer report" it checks
// that whatever the reader accepts is consistent: every tensor's bytes are readable, its byte
// count matches its shape and dtype, and writing the parsed tensors back with SafetensorsWriter
// and reading that again gives the same tensors.
// Build and run: scripts/fuzz.sh (needs clang; -DTESSERA_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "tessera/kernels/dtype.h"
#include "tessera/model/format/safetensors.h"

namespace {

using tessera::model::ModelFile;
using tessera::model::SafetensorsWriter;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "safetensors_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

uint64_t walk(const ModelFile& file) {
  uint64_t h = 0;
  for (const auto& t : file.tensors) {
    if (t.n_bytes == 0 || t.data == nullptr) fail("empty tensor", t.name);
    const size_t want = tessera::kernels::dtype_row_bytes(t.dtype, t.n_elements());
    if (want != t.n_bytes) fail("byte count does not match shape", t.name);
    h += static_cast<uint8_t>(t.data[0]) + static_cast<uint8_t>(t.data[t.n_bytes - 1]);
  }
  return h;
}

void round_trip(const ModelFile& file) {
  SafetensorsWriter w;
  for (const auto& t : file.tensors) {
    std::vector<int64_t> shape;
    for (int i = t.n_dims - 1; i >= 0; --i) shape.push_back(t.ne[static_cast<size_t>(i)]);
    auto s = w.add_tensor(t.name, t.dtype, shape, std::span(t.data, t.n_bytes));
    if (!s.is_ok()) fail("writer refused an accepted tensor", s.to_string());
  }
  const std::vector<std::byte> bytes = w.serialize();  // the parsed tensors point into it
  auto again = tessera::model::parse_safetensors(bytes);
  if (!again.is_ok()) fail("reader refused the writer's output", again.status().to_string());
  if (again->tensors.size() != file.tensors.size()) fail("round trip", "tensor count");
  for (const auto& t : file.tensors) {
    const auto* u = again->find_tensor(t.name);
    if (u == nullptr || u->dtype != t.dtype || u->ne != t.ne || u->n_bytes != t.n_bytes ||
        std::memcmp(u->data, t.data, t.n_bytes) != 0) {
      fail("round trip changed tensor", t.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = tessera::model::parse_safetensors(
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
