// The built-in chat templates: turn a chat conversation (system / user / assistant messages) into
// the prompt text a model was tuned on, for six common families recognized in a GGUF
// `tokenizer.chat_template` by distinctive markers, rendered in C++ byte for byte as the family's
// official Jinja template renders under HF transformers (jinja2 with trim_blocks and
// lstrip_blocks). A model's own template normally goes through the Jinja interpreter instead
// (model_chat_template.h); these are `--chat-template NAME` and its fallbacks.
//
// The reference template of each kind (variants of a family map to it; see
// detect_chat_template in the .cpp for those that render differently):
//   llama2   Llama-2-chat          [INST] <<SYS>>...<</SYS>> ... [/INST], BOS before each user turn
//   llama3   Meta-Llama-3-Instruct <|start_header_id|>role<|end_header_id|>...<|eot_id|>
//   chatml   ChatML (Qwen, Hermes) <|im_start|>role ... <|im_end|>, no default system message
//   mistral  Mistral-Instruct "v1" system folded into the first [INST], BOS once
//   phi3     Phi-3.5-mini-instruct <|system|> <|user|> <|assistant|> ... <|end|>
//   gemma    Gemma 3               <start_of_turn>user/model, system folded into the first turn
//
// Thread-safety: pure functions over their arguments; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::serve {

// One message of a conversation. `role` is "system", "user" or "assistant"; `content` is UTF-8.
struct ChatMessage {
  std::string role;
  std::string content;
  // Rendered by Jinja templates only (the built-ins ignore them): an assistant turn's calls as
  // the request sent them (null: none), a tool turn's call id, a turn's optional name.
  nlohmann::ordered_json tool_calls = nullptr;
  std::string tool_call_id = {};
  std::string name = {};
};

enum class ChatTemplateKind { kLlama2, kLlama3, kChatML, kMistral, kPhi3, kGemma };

// "llama2", "llama3", "chatml", "mistral", "phi3", "gemma": the names --chat-template accepts.
std::string_view chat_template_name(ChatTemplateKind kind);

// The valid names joined by ", ", for messages that tell the user what to pass.
std::string_view chat_template_names();

// The kind named `name` (exactly one of chat_template_names()). kInvalidArgument listing the
// valid names otherwise.
Result<ChatTemplateKind> chat_template_from_name(std::string_view name);

// Recognizes the Jinja source of a chat template by its markers. Errors: kNotFound for an empty
// source; kUnsupported, naming what was seen when possible, for a template of another family
// (Phi-4, Mistral v7, Llama 4, DeepSeek, ...) or none recognized.
Result<ChatTemplateKind> detect_chat_template(std::string_view jinja_source);

// The template for a model: the kind named by `override_name` when it is non-empty, else the one
// recognized from the metadata's `tokenizer.chat_template`. Errors: kNotFound when the key is
// absent ("pass --chat-template NAME"), kInvalidArgument for a bad name or a non-string value,
// kUnsupported for an unrecognized template (also suggesting --chat-template).
Result<ChatTemplateKind> resolve_chat_template(const model::Metadata& metadata,
                                               std::string_view override_name);

// Whether the kind's template writes the BOS token text itself (llama2, llama3, mistral, gemma).
// Its output should then be tokenized with special tokens parsed and without adding another BOS.
bool chat_template_writes_bos(ChatTemplateKind kind);

// Renders `messages` as the kind's reference template does. `add_generation_prompt` appends the
// header that opens the assistant's reply (llama2 and mistral have none and ignore it; phi3
// appends EOS when it is false). `bos` and `eos` are the vocabulary's BOS/EOS token texts, used
// where the template uses bos_token/eos_token. Message contents are inserted verbatim (a content
// that spells a special token's text will tokenize as that token if special tokens are parsed).
// Errors, all kInvalidArgument: an empty message list; a role other than system, user and
// assistant; and, as the reference template raises them, a role order it rejects (llama2, mistral
// and gemma require user/assistant alternation after an optional leading system message; mistral
// takes no later system message).
Result<std::string> render_chat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                                bool add_generation_prompt, std::string_view bos,
                                std::string_view eos);

}  // namespace tessera::serve
