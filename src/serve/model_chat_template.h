// Which chat template a served model uses, and rendering with it. The model's own Jinja template
// (GGUF `tokenizer.chat_template`) is rendered by the Jinja-subset interpreter (tessera/jinja) as
// HF's apply_chat_template renders it; `--chat-template NAME|FILE` overrides it with one of the six
// built-in renderers (chat_template.h) or a .jinja file. The built-ins stay as fallbacks: when the
// interpreter refuses the model's template (a construct outside its subset), a built-in family
// recognized from the template's markers renders instead, and `note` says why.
// Thread-safety: a resolved ModelChatTemplate is immutable; render_model_chat may run on many
// threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/jinja/template.h"
#include "tessera/model/format/metadata.h"
#include "tessera/serve/chat_template.h"
#include "tessera/serve/tool_calls.h"

namespace tessera::serve {

// What --chat-template gave: nothing, a built-in name, or the text of a .jinja file.
struct ChatTemplateOverride {
  std::string name;         // a built-in name (chat_template_names()), or empty
  std::string jinja_source; // the file's text when a file was given
  std::string file;         // its path, for messages
};

struct ModelChatTemplate {
  std::shared_ptr<const jinja::Template> jinja;  // rendered first when set
  std::optional<ChatTemplateKind> builtin;       // the renderer when jinja is null, else the
                                                 // fallback for a render the interpreter refuses
  std::string origin;  // "the model's tokenizer.chat_template", "file t.jinja", "built-in chatml"
  std::string note;    // why a fallback is in use (empty when none): log it
  // Function calling: whether the Jinja template renders a request's tools (the built-ins do
  // not), and the call syntax its text shows (tool_calls.h).
  bool reads_tools = false;
  ToolCallSyntax tool_syntax = ToolCallSyntax::kJson;
};

// What one render of a model's Jinja template may spend (jinja RenderOptions): wall time, memory
// of the values it holds, and the flag that cancels it (the server's shutdown; may be null).
// `tessera serve --template-timeout-ms` and `--template-memory`.
struct ChatRenderLimits {
  int64_t max_time_ms = 1000;
  size_t max_memory_bytes = size_t{128} << 20;
  std::shared_ptr<const std::atomic<bool>> cancel;
};

// The template for a model. Order: the override (a built-in name, or a file, which must parse);
// else the model's tokenizer.chat_template through the interpreter, with the recognized built-in
// family as a fallback (or alone, `note` saying why, when the interpreter refuses it at parse).
// Errors: kNotFound when the model has no template and there is no override; kInvalidArgument
// for a bad name, a non-string metadata value, or a file that does not parse (message with line);
// kUnsupported when the file uses a construct outside the subset, or the model's template is
// refused and matches no built-in family.
Result<ModelChatTemplate> resolve_model_chat_template(const model::Metadata& metadata,
                                                      const ChatTemplateOverride& override_spec);

// Renders `messages` with the template, as HF's apply_chat_template does with
// add_generation_prompt, bos_token, eos_token and `tools` (null: none); an assistant turn's
// tool_calls go in as sent except that JSON-text "arguments" become objects (what HF templates
// expect). `now` is what strftime_now formats. A render the interpreter refuses (kUnsupported)
// falls back to `builtin` when there is one and there are no tools (`*used_fallback` is then
// set, when non-null). Errors: kUnsupported when tools are given and the template does not
// read them (reads_tools); the template's own errors (kInvalidArgument, e.g. a raise_exception
// for a role order it rejects), kUnsupported, kResourceExhausted past the interpreter's bounds
// (steps, output, `limits`' time and memory, cancelled).
Result<std::string> render_model_chat(const ModelChatTemplate& t,
                                      std::span<const ChatMessage> messages,
                                      bool add_generation_prompt, std::string_view bos,
                                      std::string_view eos, const std::tm& now,
                                      bool* used_fallback = nullptr,
                                      const nlohmann::ordered_json* tools = nullptr,
                                      const ChatRenderLimits& limits = {});

}  // namespace tessera::serve
