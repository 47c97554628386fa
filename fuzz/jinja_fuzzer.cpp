// libFuzzer target for the Jinja-subset interpreter: any bytes as a chat template, parsed and, when
// they parse, rendered over a small conversation with tight bounds. It must never crash, leak or
// trip ASan/UBSan; errors are expected and ignored. It also fails (aborts, so libFuzzer saves the
// input) when a render outlives its time limit by more than kTimeSlackMs or its values exceed the
// memory budget: a template that escapes the bounds is a finding even when nothing crashes.
// scripts/fuzz.sh adds libFuzzer's own -timeout and -malloc_limit_mb for what escapes both.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tessera/jinja/template.h"

namespace {

tessera::jinja::Dict make_context() {
  using tessera::jinja::Dict;
  using tessera::jinja::List;
  using tessera::jinja::Value;
  Dict sys;
  sys.set("role", "system");
  sys.set("content", "Be brief.");
  Dict user;
  user.set("role", "user");
  user.set("content", "Hi \xc3\xa9");
  Dict fn;
  fn.set("name", "f");
  fn.set("arguments", Value(Dict{}));
  Dict call;
  call.set("type", "function");
  call.set("function", Value(fn));
  Dict assistant;
  assistant.set("role", "assistant");
  assistant.set("content", "");
  assistant.set("tool_calls", Value(List{Value(call)}));
  Dict ctx;
  ctx.set("messages", Value(List{Value(sys), Value(user), Value(assistant)}));
  ctx.set("tools", Value(List{Value(call)}));
  ctx.set("add_generation_prompt", true);
  ctx.set("bos_token", "<s>");
  ctx.set("eos_token", "</s>");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::jinja::Dict kContext = make_context();
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = tessera::jinja::Template::parse(source);
  if (!tmpl.is_ok()) return 0;
  // Tight bounds keep each run fast; the slack covers one bounded operation past the deadline
  // under the sanitizers' slowdown.
  constexpr int64_t kTimeMs = 200;
  constexpr int64_t kTimeSlackMs = 800;
  constexpr size_t kMemoryBytes = size_t{24} << 20;  // small values: each operation is short
  tessera::jinja::RenderOptions options;
  options.max_output_bytes = 1 << 20;
  options.max_steps = 20000;
  options.max_time_ms = kTimeMs;
  options.max_memory_bytes = kMemoryBytes;
  size_t peak = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = tmpl->render(kContext, options, &peak);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  (void)out;
  if (ms > kTimeMs + kTimeSlackMs) {
    std::fprintf(stderr, "jinja_fuzzer: a render took %lld ms (limit %lld ms)\n",
                 static_cast<long long>(ms), static_cast<long long>(kTimeMs));
    std::abort();
  }
  if (peak > kMemoryBytes) {
    std::fprintf(stderr, "jinja_fuzzer: a render held %zu bytes (budget %zu)\n", peak, kMemoryBytes);
    std::abort();
  }
  return 0;
}
