#include "tessera/serve/model_chat_renderer.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "tessera/base/log.h"
#include "tessera/serve/chat_template.h"

namespace tessera::serve {
namespace model_chat_renderer {

// The wall-clock date a template's strftime_now formats (local time, as HF's datetime.now()).
std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

// The chat route answers 500 chat_template_unavailable with `why` (the model's file is at fault,
// whatever the code of the reason: never a status a client would retry).
ChatRenderer refusing_renderer(const Status& reason) {
  log_warn("chat route disabled: {}", reason.message());
  Status why(ErrorCode::kInternal, "it was refused when the model was loaded: " + reason.message());
  return [why](const std::vector<ChatTurn>&, const nlohmann::ordered_json*) -> Result<RenderedChat> {
    return why;
  };
}

}  // namespace model_chat_renderer

Result<ChatTemplateOverride> chat_template_override(const std::string& spec) {
  ChatTemplateOverride o;
  if (spec.empty()) return o;
  if (chat_template_from_name(spec).is_ok()) {
    o.name = spec;
    return o;
  }
  std::ifstream f(spec, std::ios::binary);
  if (!f) {
    return invalid_argument(fmt::format(
        "--chat-template '{}': neither a built-in name ({}) nor a readable .jinja file", spec,
        chat_template_names()));
  }
  std::stringstream text;
  text << f.rdbuf();
  o.file = spec;
  o.jinja_source = text.str();
  auto parsed = jinja::Template::parse(o.jinja_source);
  if (!parsed.is_ok()) return parsed.status().with_context("--chat-template " + spec);
  return o;
}

ChatRenderer make_chat_renderer(const model::Metadata& metadata,
                                std::shared_ptr<const model::Tokenizer> tokenizer,
                                const ChatTemplateOverride& override_spec,
                                const ChatRenderLimits& limits, const OperatorLine& announce) {
  auto resolved = resolve_model_chat_template(metadata, override_spec);
  if (!resolved.is_ok()) return model_chat_renderer::refusing_renderer(resolved.status());
  auto tmpl = std::make_shared<const ModelChatTemplate>(std::move(resolved).value());
  if (announce) announce("tessera serve: chat template: " + tmpl->origin);
  if (!tmpl->note.empty()) log_warn("chat template: {}", tmpl->note);
  const std::string bos =
      tokenizer->bos_id() >= 0 ? std::string(tokenizer->token_text(tokenizer->bos_id())) : "";
  const std::string eos =
      tokenizer->eos_id() >= 0 ? std::string(tokenizer->token_text(tokenizer->eos_id())) : "";
  // The route encodes with the vocabulary's own BOS rule; when the template also writes BOS at
  // the start, drop that one so the prompt does not begin with two.
  const bool tokenizer_adds_bos = !tokenizer->encode("", true, false).empty() &&
                                  tokenizer->encode("", true, false).front() == tokenizer->bos_id();
  return [tmpl, bos, eos, tokenizer_adds_bos, limits](const std::vector<ChatTurn>& turns,
                                                      const nlohmann::ordered_json* tools)
             -> Result<RenderedChat> {
    std::vector<ChatMessage> messages;
    messages.reserve(turns.size());
    for (const auto& t : turns) {
      messages.push_back({t.role, t.content, t.tool_calls, t.tool_call_id, t.name});
    }
    bool used_fallback = false;
    TS_ASSIGN_OR_RETURN(std::string text,
                        render_model_chat(*tmpl, messages, true, bos, eos,
                                          model_chat_renderer::local_now(), &used_fallback, tools,
                                          limits));
    if (used_fallback) {
      log_warn("chat template: the interpreter refused a render; used the built-in {}",
               chat_template_name(*tmpl->builtin));
    }
    if (tokenizer_adds_bos && !bos.empty() && text.starts_with(bos)) text.erase(0, bos.size());
    return RenderedChat{std::move(text), tmpl->tool_syntax};
  };
}

ChatRenderer fleet_chat_renderer(const std::shared_ptr<fleet::FleetManager>& fleet,
                                 const std::string& name, const ChatTemplateOverride& override_spec,
                                 const ChatRenderLimits& limits, const OperatorLine& announce) {
  if (fleet->opened(name).is_ok()) {
    return make_chat_renderer(fleet->metadata(name), fleet->shared_tokenizer(name), override_spec,
                              limits, announce);
  }
  // The file did not open (the model is Failed; requests get 503 until a retry opens it): the
  // template comes from the file once it does.
  std::weak_ptr<fleet::FleetManager> weak = fleet;
  return [weak, name, tmpl = override_spec, limits, announce](
             const std::vector<ChatTurn>& turns,
             const nlohmann::ordered_json* tools) -> Result<RenderedChat> {
    auto f = weak.lock();
    if (!f) return Status(ErrorCode::kUnavailable, "the server is stopping");
    TS_RETURN_IF_ERROR(f->opened(name));
    ChatRenderer r = make_chat_renderer(f->metadata(name), f->shared_tokenizer(name), tmpl, limits,
                                        announce);
    if (!r) return invalid_argument("the model has no usable chat template");
    return r(turns, tools);
  };
}

}  // namespace tessera::serve
