#include "tessera/serve/chat_template.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "tessera/jinja/builtins.h"

namespace tessera::serve {
namespace {

struct KindName {
  ChatTemplateKind kind;
  std::string_view name;
};
constexpr std::array<KindName, 6> kKindNames = {{
    {ChatTemplateKind::kLlama2, "llama2"},
    {ChatTemplateKind::kLlama3, "llama3"},
    {ChatTemplateKind::kChatML, "chatml"},
    {ChatTemplateKind::kMistral, "mistral"},
    {ChatTemplateKind::kPhi3, "phi3"},
    {ChatTemplateKind::kGemma, "gemma"},
}};
constexpr std::string_view kAllNames = "llama2, llama3, chatml, mistral, phi3, gemma";

constexpr std::string_view kSystem = "system";
constexpr std::string_view kUser = "user";
constexpr std::string_view kAssistant = "assistant";

// The texts the reference templates raise, kept so a client sees the message it would see
// from transformers.
constexpr std::string_view kAlternateError =
    "Conversation roles must alternate user/assistant/user/assistant/...";
constexpr std::string_view kMistralAlternateError =
    "After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...";
constexpr std::string_view kMistralRoleError =
    "Only user and assistant roles are supported, with the exception of an initial optional "
    "system message!";

// Python's str.strip(), which Jinja's `trim` filter and `.strip()` both call: the interpreter's.
std::string python_strip(std::string_view s) {
  return jinja::python_strip(s, jinja::Value::none(), true, true);
}

// --- Rendering: each function follows its reference template's control flow ------------------

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts) out.append(p);
  return out;
}

// The reference templates of llama2, mistral and gemma raise unless, after an optional leading
// system message, message k is a user message exactly when k is even (`loop.index0 % 2 == 0`).
bool alternates_at(const ChatMessage& m, size_t k) { return (m.role == kUser) == (k % 2 == 0); }

Result<std::string> render_llama2(std::span<const ChatMessage> msgs, std::string_view bos,
                                  std::string_view eos) {
  // The template sets system_message = false without a system message; a string (even an empty
  // one) compares unequal to false, so any leading system message is wrapped in <<SYS>>.
  const bool has_system = msgs.front().role == kSystem;
  const auto loop = has_system ? msgs.subspan(1) : msgs;
  std::string out;
  for (size_t k = 0; k < loop.size(); ++k) {
    const ChatMessage& m = loop[k];
    if (!alternates_at(m, k)) return invalid_argument(std::string(kAlternateError));
    const std::string content =
        k == 0 && has_system
            ? cat({"<<SYS>>\n", msgs.front().content, "\n<</SYS>>\n\n", m.content})
            : m.content;
    if (m.role == kUser) {
      out += cat({bos, "[INST] ", python_strip(content), " [/INST]"});
    } else if (m.role == kAssistant) {
      out += cat({" ", python_strip(content), " ", eos});
    }  // a later system message at an odd position passes the check and renders nothing
  }
  return out;
}

std::string render_llama3(std::span<const ChatMessage> msgs, bool add_generation_prompt,
                          std::string_view bos) {
  std::string out(bos);  // the template prefixes BOS to the first message, which always exists
  for (const ChatMessage& m : msgs) {
    out += cat({"<|start_header_id|>", m.role, "<|end_header_id|>\n\n", python_strip(m.content),
                "<|eot_id|>"});
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_chatml(std::span<const ChatMessage> msgs, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : msgs) {
    out += cat({"<|im_start|>", m.role, "\n", m.content, "<|im_end|>\n"});
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

Result<std::string> render_mistral(std::span<const ChatMessage> msgs, std::string_view bos,
                                   std::string_view eos) {
  const bool has_system = msgs.front().role == kSystem;
  const auto loop = has_system ? msgs.subspan(1) : msgs;
  std::string out(bos);
  for (size_t k = 0; k < loop.size(); ++k) {
    const ChatMessage& m = loop[k];
    if (!alternates_at(m, k)) return invalid_argument(std::string(kMistralAlternateError));
    if (m.role == kUser) {
      if (k == 0 && has_system) {
        out += cat({" [INST] ", msgs.front().content, "\n\n", m.content, " [/INST]"});
      } else {
        out += cat({" [INST] ", m.content, " [/INST]"});
      }
    } else if (m.role == kAssistant) {
      out += cat({" ", m.content, eos});
    } else {
      return invalid_argument(std::string(kMistralRoleError));
    }
  }
  return out;
}

std::string render_phi3(std::span<const ChatMessage> msgs, bool add_generation_prompt,
                        std::string_view eos) {
  std::string out;
  for (const ChatMessage& m : msgs) {
    // The template skips a system message whose content is empty.
    if (m.role == kSystem && m.content.empty()) continue;
    out += cat({"<|", m.role, "|>\n", m.content, "<|end|>\n"});
  }
  out += add_generation_prompt ? std::string_view("<|assistant|>\n") : eos;
  return out;
}

Result<std::string> render_gemma(std::span<const ChatMessage> msgs, bool add_generation_prompt,
                                 std::string_view bos) {
  // Gemma has no system turn: a leading system message, untrimmed, opens the first turn.
  const bool has_system = msgs.front().role == kSystem;
  const auto loop = has_system ? msgs.subspan(1) : msgs;
  std::string out(bos);
  for (size_t k = 0; k < loop.size(); ++k) {
    const ChatMessage& m = loop[k];
    if (!alternates_at(m, k)) return invalid_argument(std::string(kAlternateError));
    const std::string_view role = m.role == kAssistant ? std::string_view("model") : m.role;
    out += cat({"<start_of_turn>", role, "\n"});
    if (k == 0 && has_system) out += cat({msgs.front().content, "\n\n"});
    out += cat({python_strip(m.content), "<end_of_turn>\n"});
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

Status unsupported_template(std::string_view what) {
  return unsupported("chat template " + std::string(what) +
                     " is not one Tessera renders; pass --chat-template NAME (one of " +
                     std::string(kAllNames) + ") to use one of the supported formats");
}

}  // namespace

std::string_view chat_template_name(ChatTemplateKind kind) {
  for (const auto& kn : kKindNames) {
    if (kn.kind == kind) return kn.name;
  }
  TS_CHECK_MSG(false, "unknown ChatTemplateKind");
  return {};
}

std::string_view chat_template_names() { return kAllNames; }

Result<ChatTemplateKind> chat_template_from_name(std::string_view name) {
  for (const auto& kn : kKindNames) {
    if (kn.name == name) return kn.kind;
  }
  return invalid_argument("unknown chat template '" + std::string(name) + "'; expected one of " +
                          std::string(kAllNames));
}

// Markers are checked most specific first. A template that carries a family's markers gets that
// family's reference rendering; the variants known to differ from it:
//   chatml: Qwen 1.5/2/2.5 add a default system message when none is given; Tessera does not.
//   llama3: Llama 3.1-3.3 always open with a system header holding knowledge/today dates.
//   mistral: the pre-v1 template ('[INST] ' without the leading space, no system message) and
//            the v3/tekken ones (system message folded into the last user turn).
//   phi3: the original Phi-3-mini/medium templates (no system role, assistant header after
//         every user turn; mini also writes BOS), Phi-3-small (BOS first).
//   gemma: Gemma 1/2 raise on a system message where Gemma 3 folds it into the first turn.
// Fine-tunes that reuse a family's tokens (Hermes on ChatML, Qwen3's thinking blocks, functionary
// on Llama 3 headers) are recognized as that family too; --chat-template overrides.
Result<ChatTemplateKind> detect_chat_template(std::string_view src) {
  if (src.empty()) return not_found("the chat template is empty");
  if (contains(src, "<|im_start|>")) {
    if (contains(src, "<|im_sep|>")) return unsupported_template("'Phi-4' (<|im_sep|>)");
    if (contains(src, "<end_of_utterance>")) {
      return unsupported_template("'SmolVLM' (<end_of_utterance>)");
    }
    return ChatTemplateKind::kChatML;
  }
  if (contains(src, "[INST]")) {
    if (contains(src, "<<SYS>>")) return ChatTemplateKind::kLlama2;
    if (contains(src, "[SYSTEM_PROMPT]")) {
      return unsupported_template("'Mistral v7' ([SYSTEM_PROMPT])");
    }
    return ChatTemplateKind::kMistral;
  }
  if (contains(src, "<|start_header_id|>") && contains(src, "<|end_header_id|>")) {
    return ChatTemplateKind::kLlama3;
  }
  // Phi-3-small and -vision build '<|' + role + '|>', so "<|user|>" need not appear.
  if (contains(src, "<|assistant|>") && contains(src, "<|end|>")) {
    return ChatTemplateKind::kPhi3;
  }
  if (contains(src, "<start_of_turn>")) return ChatTemplateKind::kGemma;
  return unsupported_template("(no marker of a known family found)");
}

Result<ChatTemplateKind> resolve_chat_template(const model::Metadata& metadata,
                                               std::string_view override_name) {
  if (!override_name.empty()) return chat_template_from_name(override_name);
  constexpr std::string_view kKey = "tokenizer.chat_template";
  if (!metadata.contains(kKey)) {
    return not_found("model has no tokenizer.chat_template; pass --chat-template NAME (one of " +
                     std::string(kAllNames) + ")");
  }
  TS_ASSIGN_OR_RETURN(std::string source, metadata.get_string(kKey));
  auto kind = detect_chat_template(source);
  if (!kind.is_ok()) return kind.status().with_context("model's tokenizer.chat_template");
  return kind;
}

bool chat_template_writes_bos(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kLlama2:
    case ChatTemplateKind::kLlama3:
    case ChatTemplateKind::kMistral:
    case ChatTemplateKind::kGemma:
      return true;
    case ChatTemplateKind::kChatML:
    case ChatTemplateKind::kPhi3:
      return false;
  }
  TS_CHECK_MSG(false, "unknown ChatTemplateKind");
  return false;
}

Result<std::string> render_chat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                                bool add_generation_prompt, std::string_view bos,
                                std::string_view eos) {
  if (messages.empty()) return invalid_argument("the conversation has no messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != kSystem && role != kUser && role != kAssistant) {
      return invalid_argument("message " + std::to_string(i) + " has role '" + role +
                              "'; the " + std::string(chat_template_name(kind)) +
                              " template takes system, user and assistant");
    }
  }
  switch (kind) {
    case ChatTemplateKind::kLlama2:
      return render_llama2(messages, bos, eos);
    case ChatTemplateKind::kLlama3:
      return render_llama3(messages, add_generation_prompt, bos);
    case ChatTemplateKind::kChatML:
      return render_chatml(messages, add_generation_prompt);
    case ChatTemplateKind::kMistral:
      return render_mistral(messages, bos, eos);
    case ChatTemplateKind::kPhi3:
      return render_phi3(messages, add_generation_prompt, eos);
    case ChatTemplateKind::kGemma:
      return render_gemma(messages, add_generation_prompt, bos);
  }
  TS_CHECK_MSG(false, "unknown ChatTemplateKind");
  return internal_error("unreachable");
}

}  // namespace tessera::serve
