// libFuzzer target for the Jinja-subset interpreter: any bytes as a chat template, parsed and, when
// they parse, rendered over a small conversation with tight bounds. It must never crash, leak or
// trip ASan/UBSan; errors are expected and ignored.
#include <cstddef>
#include <cstdint>
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
  tessera::jinja::RenderOptions options;
  options.max_output_bytes = 1 << 20;
  options.max_steps = 20000;
  auto out = tmpl->render(kContext, options);
  (void)out;
  return 0;
}
