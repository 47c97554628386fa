#include "tessera/serve/model_chat_template.h"

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
                                      bool* used_fallback) {
  if (used_fallback != nullptr) *used_fallback = false;
  if (t.jinja) {
    jinja::List list;
    list.reserve(messages.size());
    for (const ChatMessage& m : messages) {
      jinja::Dict d;
      d.set("role", m.role);
      d.set("content", m.content);
      list.emplace_back(std::move(d));
    }
    jinja::Dict ctx;
    ctx.set("messages", jinja::Value(std::move(list)));
    ctx.set("add_generation_prompt", add_generation_prompt);
    ctx.set("bos_token", bos);
    ctx.set("eos_token", eos);
    ctx.set("tools", jinja::Value::none());
    jinja::RenderOptions options;
    options.now = now;
    auto text = t.jinja->render(ctx, options);
    if (text.is_ok() || text.status().code() != ErrorCode::kUnsupported || !t.builtin) {
      return text;
    }
    if (used_fallback != nullptr) *used_fallback = true;
  }
  if (!t.builtin) return internal_error("a chat template with neither Jinja nor a built-in");
  return render_chat(*t.builtin, messages, add_generation_prompt, bos, eos);
}

}  // namespace tessera::serve
