#include "tessera/serve/model_chat_template.h"

#include "tessera/serve/jinja_json.h"

namespace tessera::serve {

Result<ModelChatTemplate> resolve_model_chat_template(const model::Metadata& metadata,
                                                      const ChatTemplateOverride& o) {
  ModelChatTemplate t;
  if (!o.name.empty()) {
    TS_ASSIGN_OR_RETURN(ChatTemplateKind kind, chat_template_from_name(o.name));
    t.builtin = kind;
    t.origin = "built-in " + std::string(chat_template_name(kind));
    return t;
  }
  if (!o.file.empty()) {
    auto parsed = jinja::Template::parse(o.jinja_source);
    if (!parsed.is_ok()) return parsed.status().with_context("--chat-template " + o.file);
    t.jinja = std::make_shared<const jinja::Template>(std::move(parsed).value());
    t.origin = "file " + o.file;
    t.reads_tools = template_reads_tools(o.jinja_source);
    t.tool_syntax = detect_tool_call_syntax(o.jinja_source);
    return t;
  }
  constexpr std::string_view kKey = "tokenizer.chat_template";
  if (!metadata.contains(kKey)) {
    return not_found("model has no tokenizer.chat_template; pass --chat-template NAME|FILE "
                     "(NAME one of " + std::string(chat_template_names()) +
                     ", FILE a .jinja template)");
  }
  TS_ASSIGN_OR_RETURN(std::string source, metadata.get_string(kKey));
  auto builtin = detect_chat_template(source);
  if (builtin.is_ok()) t.builtin = *builtin;
  auto parsed = jinja::Template::parse(source);
  if (parsed.is_ok()) {
    t.jinja = std::make_shared<const jinja::Template>(std::move(parsed).value());
    t.origin = "the model's tokenizer.chat_template";
    t.reads_tools = template_reads_tools(source);
    t.tool_syntax = detect_tool_call_syntax(source);
    return t;
  }
  // The interpreter refuses it: a recognized family renders instead.
  if (!builtin.is_ok()) {
    return Status(parsed.status().code(),
                  "model's tokenizer.chat_template: " + parsed.status().message() +
                      "; and it is none of the built-in families (" + builtin.status().message() +
                      "); pass --chat-template NAME|FILE");
  }
  t.origin = "built-in " + std::string(chat_template_name(*builtin)) +
             " (recognized in the model's tokenizer.chat_template)";
  t.note = "the model's chat template is refused by the interpreter (" +
           parsed.status().message() + "); rendering it as the built-in " +
           std::string(chat_template_name(*builtin));
  return t;
}

Result<std::string> render_model_chat(const ModelChatTemplate& t,
                                      std::span<const ChatMessage> messages,
                                      bool add_generation_prompt, std::string_view bos,
                                      std::string_view eos, const std::tm& now,
                                      bool* used_fallback, const nlohmann::ordered_json* tools,
                                      const ChatRenderLimits& limits) {
  if (used_fallback != nullptr) *used_fallback = false;
  if (tools != nullptr && !t.reads_tools) {
    return Status(ErrorCode::kUnsupported,
                  "the model's chat template (" + t.origin + ") does not render tools; serve it "
                  "with --chat-template FILE naming a template that does");
  }
  if (t.jinja) {
    jinja::List list;
    list.reserve(messages.size());
    for (const ChatMessage& m : messages) {
      jinja::Dict d;
      d.set("role", m.role);
      d.set("content", m.content);
      if (!m.name.empty()) d.set("name", m.name);
      if (!m.tool_call_id.empty()) d.set("tool_call_id", m.tool_call_id);
      if (m.tool_calls.is_array()) {
        nlohmann::ordered_json calls = m.tool_calls;
        for (auto& call : calls) {
          if (!call.is_object() || !call.contains("function")) continue;
          auto& fn = call["function"];
          if (fn.is_object() && fn.contains("arguments") && fn["arguments"].is_string()) {
            const std::string text = fn["arguments"].get<std::string>();
            auto obj = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
            if (!obj.is_discarded() && obj.is_object()) fn["arguments"] = std::move(obj);
          }
        }
        d.set("tool_calls", jinja_value_from_json(calls));
      }
      list.emplace_back(std::move(d));
    }
    jinja::Dict ctx;
    ctx.set("messages", jinja::Value(std::move(list)));
    ctx.set("add_generation_prompt", add_generation_prompt);
    ctx.set("bos_token", bos);
    ctx.set("eos_token", eos);
    ctx.set("tools", tools != nullptr ? jinja_value_from_json(*tools) : jinja::Value::none());
    jinja::RenderOptions options;
    options.now = now;
    options.max_time_ms = limits.max_time_ms;
    options.max_memory_bytes = limits.max_memory_bytes;
    options.cancel = limits.cancel.get();
    auto text = t.jinja->render(ctx, options);
    if (text.is_ok() || text.status().code() != ErrorCode::kUnsupported || !t.builtin ||
        tools != nullptr) {
      return text;
    }
    if (used_fallback != nullptr) *used_fallback = true;
  }
  if (!t.builtin) return internal_error("a chat template with neither Jinja nor a built-in");
  return render_chat(*t.builtin, messages, add_generation_prompt, bos, eos);
}

}  // namespace tessera::serve
