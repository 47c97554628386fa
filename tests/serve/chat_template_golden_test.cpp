// Chat templates against golden renderings of the official templates.
//
// The expected strings below were produced outside this repository by rendering each family's
// official chat template (Jinja source as published in the models' tokenizer_config.json /
// GGUF metadata, gathered from public sources) with Python jinja2 3.1.6 configured as HF
// transformers' apply_chat_template does: ImmutableSandboxedEnvironment(trim_blocks=True,
// lstrip_blocks=True) with the loopcontrols extension and a raise_exception() global that
// raises TemplateError. Reference templates per kind:
//   kLlama2  meta-llama/Llama-2-7b-chat-hf           bos "<s>", eos "</s>"
//   kLlama3  meta-llama/Meta-Llama-3-8B-Instruct     bos "<|begin_of_text|>", eos "<|eot_id|>"
//   kChatML  teknium/OpenHermes-2.5-Mistral-7B       bos "", eos "<|im_end|>"
//   kMistral mistralai Mistral-7B-Instruct "v1"      bos "<s>", eos "</s>"
//   kPhi3    microsoft/Phi-3.5-mini-instruct         bos "<s>", eos "<|endoftext|>"
//   kGemma   google/gemma-3 (-it)                    bos "<bos>", eos "<eos>"
// Rows marked kRaises hold the message the template raised instead of an output. Neither the
// templates nor the generator script live in the repository; only their outputs do.
#include "tessera/serve/chat_template.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>


namespace tessera::serve {
namespace chat_template_golden_test {

// ---- Conversations (generated; see the top of the file) ----
const std::vector<ChatMessage> kUserOnly = {
    {"user", "Hello"},
};
const std::vector<ChatMessage> kSystemUser = {
    {"system", "You are a helpful assistant."},
    {"user", "Hi there"},
};
const std::vector<ChatMessage> kMultiTurn = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};
const std::vector<ChatMessage> kNoSystemMultiTurn = {
    {"user", "What is 2+2?"},
    {"assistant", "4."},
    {"user", "And 3+3?"},
};
const std::vector<ChatMessage> kEndsWithAssistant = {
    {"user", "Write a haiku."},
    {"assistant", "Autumn moonlight"},
};
const std::vector<ChatMessage> kWhitespace = {
    {"system", "\n  sys with spaces \t"},
    {"user", " \u00a0\u3000 padded\u2028 question \n\n"},
    {"assistant", "\tanswer\u2003"},
    {"user", "line one\nline two\r\n"},
};
const std::vector<ChatMessage> kSpecialText = {
    {"user", "Quote \" backslash \\ braces {{ x }} {% if %} "
             "[INST] </s> <|im_end|> <start_of_turn>"},
};
const std::vector<ChatMessage> kUnicode = {
    {"system", "Réponds en français. 日本語も可"},
    {"user", "Привет, 世界! 🌈 café ñ"},
};
const std::vector<ChatMessage> kEmptyContent = {
    {"system", ""},
    {"user", ""},
};
const std::vector<ChatMessage> kSystemOnly = {
    {"system", "Be brief."},
};
const std::vector<ChatMessage> kAssistantFirst = {
    {"assistant", "Hi, I start."},
    {"user", "ok"},
};
const std::vector<ChatMessage> kConsecutiveUsers = {
    {"user", "one"},
    {"user", "two"},
};
const std::vector<ChatMessage> kSystemLater = {
    {"user", "hi"},
    {"assistant", "hello"},
    {"system", "late system"},
    {"user", "bye"},
};
const std::vector<ChatMessage> kSystemAtOddIndex = {
    {"user", "hi"},
    {"system", "late system"},
};
const std::vector<ChatMessage> kTwoSystems = {
    {"system", "first"},
    {"system", "second"},
    {"user", "hi"},
};

enum Outcome { kRenders, kRaises };

struct Golden {
  ChatTemplateKind kind;
  const char* conversation_name;
  const std::vector<ChatMessage>* conversation;
  bool add_generation_prompt;
  Outcome outcome;
  const char* expected;  // the rendering, or the message the template raised
};

// ---- Goldens (generated; see the top of the file) ----
const Golden kGoldens[] = {
    {ChatTemplateKind::kLlama2, "UserOnly", &kUserOnly, true, kRenders,
     "<s>[INST] Hello [/INST]"},
    {ChatTemplateKind::kLlama2, "SystemUser", &kSystemUser, true, kRenders,
     "<s>[INST] <<SYS>>\n"
     "You are a helpful assistant.\n"
     "<</SYS>>\n"
     "\n"
     "Hi there [/INST]"},
    {ChatTemplateKind::kLlama2, "SystemUser", &kSystemUser, false, kRenders,
     "<s>[INST] <<SYS>>\n"
     "You are a helpful assistant.\n"
     "<</SYS>>\n"
     "\n"
     "Hi there [/INST]"},
    {ChatTemplateKind::kLlama2, "MultiTurn", &kMultiTurn, true, kRenders,
     "<s>[INST] <<SYS>>\n"
     "You are a helpful assistant\n"
     "<</SYS>>\n"
     "\n"
     "Hello [/INST] Hi there </s><s>[INST] Who are you [/INST] I a"
     "m an assistant </s><s>[INST] Another question [/INST]"},
    {ChatTemplateKind::kLlama2, "MultiTurn", &kMultiTurn, false, kRenders,
     "<s>[INST] <<SYS>>\n"
     "You are a helpful assistant\n"
     "<</SYS>>\n"
     "\n"
     "Hello [/INST] Hi there </s><s>[INST] Who are you [/INST] I a"
     "m an assistant </s><s>[INST] Another question [/INST]"},
    {ChatTemplateKind::kLlama2, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<s>[INST] What is 2+2? [/INST] 4. </s><s>[INST] And 3+3? [/I"
     "NST]"},
    {ChatTemplateKind::kLlama2, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<s>[INST] Write a haiku. [/INST] Autumn moonlight </s>"},
    {ChatTemplateKind::kLlama2, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<s>[INST] Write a haiku. [/INST] Autumn moonlight </s>"},
    {ChatTemplateKind::kLlama2, "Whitespace", &kWhitespace, true, kRenders,
     "<s>[INST] <<SYS>>\n"
     "\n"
     "  sys with spaces \t\n"
     "<</SYS>>\n"
     "\n"
     " \u00a0\u3000 padded\u2028 question [/INST] answer </s><s>[INST] line one\n"
     "line two [/INST]"},
    {ChatTemplateKind::kLlama2, "SpecialText", &kSpecialText, true, kRenders,
     "<s>[INST] Quote \" backslash \\ braces {{ x }} {% if %} [INST]"
     " </s> <|im_end|> <start_of_turn> [/INST]"},
    {ChatTemplateKind::kLlama2, "Unicode", &kUnicode, true, kRenders,
     "<s>[INST] <<SYS>>\n"
     "Réponds en français. 日本語も可\n"
     "<</SYS>>\n"
     "\n"
     "Привет, 世界! 🌈 café ñ [/INST]"},
    {ChatTemplateKind::kLlama2, "EmptyContent", &kEmptyContent, true, kRenders,
     "<s>[INST] <<SYS>>\n"
     "\n"
     "<</SYS>> [/INST]"},
    {ChatTemplateKind::kLlama2, "SystemOnly", &kSystemOnly, true, kRenders,
     ""},
    {ChatTemplateKind::kLlama2, "AssistantFirst", &kAssistantFirst, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kLlama2, "ConsecutiveUsers", &kConsecutiveUsers, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kLlama2, "SystemLater", &kSystemLater, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kLlama2, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRenders,
     "<s>[INST] hi [/INST]"},
    {ChatTemplateKind::kLlama2, "TwoSystems", &kTwoSystems, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kLlama3, "UserOnly", &kUserOnly, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Hello<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
     "\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SystemUser", &kSystemUser, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "You are a helpful assistant.<|eot_id|><|start_header_id|>use"
     "r<|end_header_id|>\n"
     "\n"
     "Hi there<|eot_id|><|start_header_id|>assistant<|end_header_i"
     "d|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SystemUser", &kSystemUser, false, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "You are a helpful assistant.<|eot_id|><|start_header_id|>use"
     "r<|end_header_id|>\n"
     "\n"
     "Hi there<|eot_id|>"},
    {ChatTemplateKind::kLlama3, "MultiTurn", &kMultiTurn, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "You are a helpful assistant<|eot_id|><|start_header_id|>user"
     "<|end_header_id|>\n"
     "\n"
     "Hello<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
     "\n"
     "\n"
     "Hi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Who are you<|eot_id|><|start_header_id|>assistant<|end_heade"
     "r_id|>\n"
     "\n"
     "I am an assistant<|eot_id|><|start_header_id|>user<|end_head"
     "er_id|>\n"
     "\n"
     "Another question<|eot_id|><|start_header_id|>assistant<|end_"
     "header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "MultiTurn", &kMultiTurn, false, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "You are a helpful assistant<|eot_id|><|start_header_id|>user"
     "<|end_header_id|>\n"
     "\n"
     "Hello<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
     "\n"
     "\n"
     "Hi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Who are you<|eot_id|><|start_header_id|>assistant<|end_heade"
     "r_id|>\n"
     "\n"
     "I am an assistant<|eot_id|><|start_header_id|>user<|end_head"
     "er_id|>\n"
     "\n"
     "Another question<|eot_id|>"},
    {ChatTemplateKind::kLlama3, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_head"
     "er_id|>\n"
     "\n"
     "4.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "And 3+3?<|eot_id|><|start_header_id|>assistant<|end_header_i"
     "d|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Write a haiku.<|eot_id|><|start_header_id|>assistant<|end_he"
     "ader_id|>\n"
     "\n"
     "Autumn moonlight<|eot_id|><|start_header_id|>assistant<|end_"
     "header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Write a haiku.<|eot_id|><|start_header_id|>assistant<|end_he"
     "ader_id|>\n"
     "\n"
     "Autumn moonlight<|eot_id|>"},
    {ChatTemplateKind::kLlama3, "Whitespace", &kWhitespace, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "sys with spaces<|eot_id|><|start_header_id|>user<|end_header"
     "_id|>\n"
     "\n"
     "padded\u2028 question<|eot_id|><|start_header_id|>assistant<|end_"
     "header_id|>\n"
     "\n"
     "answer<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "line one\n"
     "line two<|eot_id|><|start_header_id|>assistant<|end_header_i"
     "d|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SpecialText", &kSpecialText, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Quote \" backslash \\ braces {{ x }} {% if %} [INST] </s> <|im"
     "_end|> <start_of_turn><|eot_id|><|start_header_id|>assistant"
     "<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "Unicode", &kUnicode, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "Réponds en français. 日本語も可<|eot_id|><|start_header_id|>user<"
     "|end_header_id|>\n"
     "\n"
     "Привет, 世界! 🌈 café ñ<|eot_id|><|start_header_id|>assistant<|"
     "end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "EmptyContent", &kEmptyContent, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SystemOnly", &kSystemOnly, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "Be brief.<|eot_id|><|start_header_id|>assistant<|end_header_"
     "id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "AssistantFirst", &kAssistantFirst, true, kRenders,
     "<|begin_of_text|><|start_header_id|>assistant<|end_header_id"
     "|>\n"
     "\n"
     "Hi, I start.<|eot_id|><|start_header_id|>user<|end_header_id"
     "|>\n"
     "\n"
     "ok<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "ConsecutiveUsers", &kConsecutiveUsers, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "one<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "two<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SystemLater", &kSystemLater, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "hello<|eot_id|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "late system<|eot_id|><|start_header_id|>user<|end_header_id|"
     ">\n"
     "\n"
     "bye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRenders,
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "hi<|eot_id|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "late system<|eot_id|><|start_header_id|>assistant<|end_heade"
     "r_id|>\n"
     "\n"},
    {ChatTemplateKind::kLlama3, "TwoSystems", &kTwoSystems, true, kRenders,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "first<|eot_id|><|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "second<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {ChatTemplateKind::kChatML, "UserOnly", &kUserOnly, true, kRenders,
     "<|im_start|>user\n"
     "Hello<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SystemUser", &kSystemUser, true, kRenders,
     "<|im_start|>system\n"
     "You are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\n"
     "Hi there<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SystemUser", &kSystemUser, false, kRenders,
     "<|im_start|>system\n"
     "You are a helpful assistant.<|im_end|>\n"
     "<|im_start|>user\n"
     "Hi there<|im_end|>\n"},
    {ChatTemplateKind::kChatML, "MultiTurn", &kMultiTurn, true, kRenders,
     "<|im_start|>system\n"
     "You are a helpful assistant<|im_end|>\n"
     "<|im_start|>user\n"
     "Hello<|im_end|>\n"
     "<|im_start|>assistant\n"
     "Hi there<|im_end|>\n"
     "<|im_start|>user\n"
     "Who are you<|im_end|>\n"
     "<|im_start|>assistant\n"
     "   I am an assistant   <|im_end|>\n"
     "<|im_start|>user\n"
     "Another question<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "MultiTurn", &kMultiTurn, false, kRenders,
     "<|im_start|>system\n"
     "You are a helpful assistant<|im_end|>\n"
     "<|im_start|>user\n"
     "Hello<|im_end|>\n"
     "<|im_start|>assistant\n"
     "Hi there<|im_end|>\n"
     "<|im_start|>user\n"
     "Who are you<|im_end|>\n"
     "<|im_start|>assistant\n"
     "   I am an assistant   <|im_end|>\n"
     "<|im_start|>user\n"
     "Another question<|im_end|>\n"},
    {ChatTemplateKind::kChatML, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<|im_start|>user\n"
     "What is 2+2?<|im_end|>\n"
     "<|im_start|>assistant\n"
     "4.<|im_end|>\n"
     "<|im_start|>user\n"
     "And 3+3?<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<|im_start|>user\n"
     "Write a haiku.<|im_end|>\n"
     "<|im_start|>assistant\n"
     "Autumn moonlight<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<|im_start|>user\n"
     "Write a haiku.<|im_end|>\n"
     "<|im_start|>assistant\n"
     "Autumn moonlight<|im_end|>\n"},
    {ChatTemplateKind::kChatML, "Whitespace", &kWhitespace, true, kRenders,
     "<|im_start|>system\n"
     "\n"
     "  sys with spaces \t<|im_end|>\n"
     "<|im_start|>user\n"
     " \u00a0\u3000 padded\u2028 question \n"
     "\n"
     "<|im_end|>\n"
     "<|im_start|>assistant\n"
     "\tanswer\u2003<|im_end|>\n"
     "<|im_start|>user\n"
     "line one\n"
     "line two\r\n"
     "<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SpecialText", &kSpecialText, true, kRenders,
     "<|im_start|>user\n"
     "Quote \" backslash \\ braces {{ x }} {% if %} [INST] </s> <|im"
     "_end|> <start_of_turn><|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "Unicode", &kUnicode, true, kRenders,
     "<|im_start|>system\n"
     "Réponds en français. 日本語も可<|im_end|>\n"
     "<|im_start|>user\n"
     "Привет, 世界! 🌈 café ñ<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "EmptyContent", &kEmptyContent, true, kRenders,
     "<|im_start|>system\n"
     "<|im_end|>\n"
     "<|im_start|>user\n"
     "<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SystemOnly", &kSystemOnly, true, kRenders,
     "<|im_start|>system\n"
     "Be brief.<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "AssistantFirst", &kAssistantFirst, true, kRenders,
     "<|im_start|>assistant\n"
     "Hi, I start.<|im_end|>\n"
     "<|im_start|>user\n"
     "ok<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "ConsecutiveUsers", &kConsecutiveUsers, true, kRenders,
     "<|im_start|>user\n"
     "one<|im_end|>\n"
     "<|im_start|>user\n"
     "two<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SystemLater", &kSystemLater, true, kRenders,
     "<|im_start|>user\n"
     "hi<|im_end|>\n"
     "<|im_start|>assistant\n"
     "hello<|im_end|>\n"
     "<|im_start|>system\n"
     "late system<|im_end|>\n"
     "<|im_start|>user\n"
     "bye<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRenders,
     "<|im_start|>user\n"
     "hi<|im_end|>\n"
     "<|im_start|>system\n"
     "late system<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kChatML, "TwoSystems", &kTwoSystems, true, kRenders,
     "<|im_start|>system\n"
     "first<|im_end|>\n"
     "<|im_start|>system\n"
     "second<|im_end|>\n"
     "<|im_start|>user\n"
     "hi<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatTemplateKind::kMistral, "UserOnly", &kUserOnly, true, kRenders,
     "<s> [INST] Hello [/INST]"},
    {ChatTemplateKind::kMistral, "SystemUser", &kSystemUser, true, kRenders,
     "<s> [INST] You are a helpful assistant.\n"
     "\n"
     "Hi there [/INST]"},
    {ChatTemplateKind::kMistral, "SystemUser", &kSystemUser, false, kRenders,
     "<s> [INST] You are a helpful assistant.\n"
     "\n"
     "Hi there [/INST]"},
    {ChatTemplateKind::kMistral, "MultiTurn", &kMultiTurn, true, kRenders,
     "<s> [INST] You are a helpful assistant\n"
     "\n"
     "Hello [/INST] Hi there</s> [INST] Who are you [/INST]    I a"
     "m an assistant   </s> [INST] Another question [/INST]"},
    {ChatTemplateKind::kMistral, "MultiTurn", &kMultiTurn, false, kRenders,
     "<s> [INST] You are a helpful assistant\n"
     "\n"
     "Hello [/INST] Hi there</s> [INST] Who are you [/INST]    I a"
     "m an assistant   </s> [INST] Another question [/INST]"},
    {ChatTemplateKind::kMistral, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<s> [INST] What is 2+2? [/INST] 4.</s> [INST] And 3+3? [/INS"
     "T]"},
    {ChatTemplateKind::kMistral, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<s> [INST] Write a haiku. [/INST] Autumn moonlight</s>"},
    {ChatTemplateKind::kMistral, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<s> [INST] Write a haiku. [/INST] Autumn moonlight</s>"},
    {ChatTemplateKind::kMistral, "Whitespace", &kWhitespace, true, kRenders,
     "<s> [INST] \n"
     "  sys with spaces \t\n"
     "\n"
     " \u00a0\u3000 padded\u2028 question \n"
     "\n"
     " [/INST] \tanswer\u2003</s> [INST] line one\n"
     "line two\r\n"
     " [/INST]"},
    {ChatTemplateKind::kMistral, "SpecialText", &kSpecialText, true, kRenders,
     "<s> [INST] Quote \" backslash \\ braces {{ x }} {% if %} [INST"
     "] </s> <|im_end|> <start_of_turn> [/INST]"},
    {ChatTemplateKind::kMistral, "Unicode", &kUnicode, true, kRenders,
     "<s> [INST] Réponds en français. 日本語も可\n"
     "\n"
     "Привет, 世界! 🌈 café ñ [/INST]"},
    {ChatTemplateKind::kMistral, "EmptyContent", &kEmptyContent, true, kRenders,
     "<s> [INST] \n"
     "\n"
     " [/INST]"},
    {ChatTemplateKind::kMistral, "SystemOnly", &kSystemOnly, true, kRenders,
     "<s>"},
    {ChatTemplateKind::kMistral, "AssistantFirst", &kAssistantFirst, true, kRaises,
     "After the optional system message, conversation roles must a"
     "lternate user/assistant/user/assistant/..."},
    {ChatTemplateKind::kMistral, "ConsecutiveUsers", &kConsecutiveUsers, true, kRaises,
     "After the optional system message, conversation roles must a"
     "lternate user/assistant/user/assistant/..."},
    {ChatTemplateKind::kMistral, "SystemLater", &kSystemLater, true, kRaises,
     "After the optional system message, conversation roles must a"
     "lternate user/assistant/user/assistant/..."},
    {ChatTemplateKind::kMistral, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRaises,
     "Only user and assistant roles are supported, with the except"
     "ion of an initial optional system message!"},
    {ChatTemplateKind::kMistral, "TwoSystems", &kTwoSystems, true, kRaises,
     "After the optional system message, conversation roles must a"
     "lternate user/assistant/user/assistant/..."},
    {ChatTemplateKind::kPhi3, "UserOnly", &kUserOnly, true, kRenders,
     "<|user|>\n"
     "Hello<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SystemUser", &kSystemUser, true, kRenders,
     "<|system|>\n"
     "You are a helpful assistant.<|end|>\n"
     "<|user|>\n"
     "Hi there<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SystemUser", &kSystemUser, false, kRenders,
     "<|system|>\n"
     "You are a helpful assistant.<|end|>\n"
     "<|user|>\n"
     "Hi there<|end|>\n"
     "<|endoftext|>"},
    {ChatTemplateKind::kPhi3, "MultiTurn", &kMultiTurn, true, kRenders,
     "<|system|>\n"
     "You are a helpful assistant<|end|>\n"
     "<|user|>\n"
     "Hello<|end|>\n"
     "<|assistant|>\n"
     "Hi there<|end|>\n"
     "<|user|>\n"
     "Who are you<|end|>\n"
     "<|assistant|>\n"
     "   I am an assistant   <|end|>\n"
     "<|user|>\n"
     "Another question<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "MultiTurn", &kMultiTurn, false, kRenders,
     "<|system|>\n"
     "You are a helpful assistant<|end|>\n"
     "<|user|>\n"
     "Hello<|end|>\n"
     "<|assistant|>\n"
     "Hi there<|end|>\n"
     "<|user|>\n"
     "Who are you<|end|>\n"
     "<|assistant|>\n"
     "   I am an assistant   <|end|>\n"
     "<|user|>\n"
     "Another question<|end|>\n"
     "<|endoftext|>"},
    {ChatTemplateKind::kPhi3, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<|user|>\n"
     "What is 2+2?<|end|>\n"
     "<|assistant|>\n"
     "4.<|end|>\n"
     "<|user|>\n"
     "And 3+3?<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<|user|>\n"
     "Write a haiku.<|end|>\n"
     "<|assistant|>\n"
     "Autumn moonlight<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<|user|>\n"
     "Write a haiku.<|end|>\n"
     "<|assistant|>\n"
     "Autumn moonlight<|end|>\n"
     "<|endoftext|>"},
    {ChatTemplateKind::kPhi3, "Whitespace", &kWhitespace, true, kRenders,
     "<|system|>\n"
     "\n"
     "  sys with spaces \t<|end|>\n"
     "<|user|>\n"
     " \u00a0\u3000 padded\u2028 question \n"
     "\n"
     "<|end|>\n"
     "<|assistant|>\n"
     "\tanswer\u2003<|end|>\n"
     "<|user|>\n"
     "line one\n"
     "line two\r\n"
     "<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SpecialText", &kSpecialText, true, kRenders,
     "<|user|>\n"
     "Quote \" backslash \\ braces {{ x }} {% if %} [INST] </s> <|im"
     "_end|> <start_of_turn><|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "Unicode", &kUnicode, true, kRenders,
     "<|system|>\n"
     "Réponds en français. 日本語も可<|end|>\n"
     "<|user|>\n"
     "Привет, 世界! 🌈 café ñ<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "EmptyContent", &kEmptyContent, true, kRenders,
     "<|user|>\n"
     "<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SystemOnly", &kSystemOnly, true, kRenders,
     "<|system|>\n"
     "Be brief.<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "AssistantFirst", &kAssistantFirst, true, kRenders,
     "<|assistant|>\n"
     "Hi, I start.<|end|>\n"
     "<|user|>\n"
     "ok<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "ConsecutiveUsers", &kConsecutiveUsers, true, kRenders,
     "<|user|>\n"
     "one<|end|>\n"
     "<|user|>\n"
     "two<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SystemLater", &kSystemLater, true, kRenders,
     "<|user|>\n"
     "hi<|end|>\n"
     "<|assistant|>\n"
     "hello<|end|>\n"
     "<|system|>\n"
     "late system<|end|>\n"
     "<|user|>\n"
     "bye<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRenders,
     "<|user|>\n"
     "hi<|end|>\n"
     "<|system|>\n"
     "late system<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kPhi3, "TwoSystems", &kTwoSystems, true, kRenders,
     "<|system|>\n"
     "first<|end|>\n"
     "<|system|>\n"
     "second<|end|>\n"
     "<|user|>\n"
     "hi<|end|>\n"
     "<|assistant|>\n"},
    {ChatTemplateKind::kGemma, "UserOnly", &kUserOnly, true, kRenders,
     "<bos><start_of_turn>user\n"
     "Hello<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "SystemUser", &kSystemUser, true, kRenders,
     "<bos><start_of_turn>user\n"
     "You are a helpful assistant.\n"
     "\n"
     "Hi there<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "SystemUser", &kSystemUser, false, kRenders,
     "<bos><start_of_turn>user\n"
     "You are a helpful assistant.\n"
     "\n"
     "Hi there<end_of_turn>\n"},
    {ChatTemplateKind::kGemma, "MultiTurn", &kMultiTurn, true, kRenders,
     "<bos><start_of_turn>user\n"
     "You are a helpful assistant\n"
     "\n"
     "Hello<end_of_turn>\n"
     "<start_of_turn>model\n"
     "Hi there<end_of_turn>\n"
     "<start_of_turn>user\n"
     "Who are you<end_of_turn>\n"
     "<start_of_turn>model\n"
     "I am an assistant<end_of_turn>\n"
     "<start_of_turn>user\n"
     "Another question<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "MultiTurn", &kMultiTurn, false, kRenders,
     "<bos><start_of_turn>user\n"
     "You are a helpful assistant\n"
     "\n"
     "Hello<end_of_turn>\n"
     "<start_of_turn>model\n"
     "Hi there<end_of_turn>\n"
     "<start_of_turn>user\n"
     "Who are you<end_of_turn>\n"
     "<start_of_turn>model\n"
     "I am an assistant<end_of_turn>\n"
     "<start_of_turn>user\n"
     "Another question<end_of_turn>\n"},
    {ChatTemplateKind::kGemma, "NoSystemMultiTurn", &kNoSystemMultiTurn, true, kRenders,
     "<bos><start_of_turn>user\n"
     "What is 2+2?<end_of_turn>\n"
     "<start_of_turn>model\n"
     "4.<end_of_turn>\n"
     "<start_of_turn>user\n"
     "And 3+3?<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "EndsWithAssistant", &kEndsWithAssistant, true, kRenders,
     "<bos><start_of_turn>user\n"
     "Write a haiku.<end_of_turn>\n"
     "<start_of_turn>model\n"
     "Autumn moonlight<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "EndsWithAssistant", &kEndsWithAssistant, false, kRenders,
     "<bos><start_of_turn>user\n"
     "Write a haiku.<end_of_turn>\n"
     "<start_of_turn>model\n"
     "Autumn moonlight<end_of_turn>\n"},
    {ChatTemplateKind::kGemma, "Whitespace", &kWhitespace, true, kRenders,
     "<bos><start_of_turn>user\n"
     "\n"
     "  sys with spaces \t\n"
     "\n"
     "padded\u2028 question<end_of_turn>\n"
     "<start_of_turn>model\n"
     "answer<end_of_turn>\n"
     "<start_of_turn>user\n"
     "line one\n"
     "line two<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "SpecialText", &kSpecialText, true, kRenders,
     "<bos><start_of_turn>user\n"
     "Quote \" backslash \\ braces {{ x }} {% if %} [INST] </s> <|im"
     "_end|> <start_of_turn><end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "Unicode", &kUnicode, true, kRenders,
     "<bos><start_of_turn>user\n"
     "Réponds en français. 日本語も可\n"
     "\n"
     "Привет, 世界! 🌈 café ñ<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "EmptyContent", &kEmptyContent, true, kRenders,
     "<bos><start_of_turn>user\n"
     "\n"
     "\n"
     "<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "SystemOnly", &kSystemOnly, true, kRenders,
     "<bos><start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "AssistantFirst", &kAssistantFirst, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kGemma, "ConsecutiveUsers", &kConsecutiveUsers, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kGemma, "SystemLater", &kSystemLater, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
    {ChatTemplateKind::kGemma, "SystemAtOddIndex", &kSystemAtOddIndex, true, kRenders,
     "<bos><start_of_turn>user\n"
     "hi<end_of_turn>\n"
     "<start_of_turn>system\n"
     "late system<end_of_turn>\n"
     "<start_of_turn>model\n"},
    {ChatTemplateKind::kGemma, "TwoSystems", &kTwoSystems, true, kRaises,
     "Conversation roles must alternate user/assistant/user/assist"
     "ant/..."},
};

void PrintTo(const Golden& g, std::ostream* os) {
  *os << chat_template_name(g.kind) << "/" << g.conversation_name
      << (g.add_generation_prompt ? "" : " without generation prompt");
}

// The BOS/EOS texts the goldens were rendered with.
std::pair<std::string_view, std::string_view> special_texts(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kLlama2: return {"<s>", "</s>"};
    case ChatTemplateKind::kLlama3: return {"<|begin_of_text|>", "<|eot_id|>"};
    case ChatTemplateKind::kChatML: return {"", "<|im_end|>"};
    case ChatTemplateKind::kMistral: return {"<s>", "</s>"};
    case ChatTemplateKind::kPhi3: return {"<s>", "<|endoftext|>"};
    case ChatTemplateKind::kGemma: return {"<bos>", "<eos>"};
  }
  return {};
}

class ChatTemplateGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(ChatTemplateGolden, MatchesTheOfficialTemplate) {
  const Golden& g = GetParam();
  const auto [bos, eos] = special_texts(g.kind);
  auto rendered = render_chat(g.kind, *g.conversation, g.add_generation_prompt, bos, eos);
  if (g.outcome == kRenders) {
    ASSERT_TRUE(rendered.is_ok()) << rendered.status().to_string();
    EXPECT_EQ(*rendered, g.expected);
  } else {
    ASSERT_FALSE(rendered.is_ok()) << "rendered instead of raising: " << *rendered;
    EXPECT_EQ(rendered.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(rendered.status().message(), g.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Official, ChatTemplateGolden, ::testing::ValuesIn(kGoldens),
    [](const ::testing::TestParamInfo<Golden>& p) {
      return std::string(chat_template_name(p.param.kind)) + "_" +
             p.param.conversation_name + (p.param.add_generation_prompt ? "" : "_NoGenPrompt");
    });

TEST(ChatTemplate, EveryKindHasAGoldenForEveryConversation) {
  for (ChatTemplateKind kind :
       {ChatTemplateKind::kLlama2, ChatTemplateKind::kLlama3, ChatTemplateKind::kChatML,
        ChatTemplateKind::kMistral, ChatTemplateKind::kPhi3, ChatTemplateKind::kGemma}) {
    int n = 0;
    for (const Golden& g : kGoldens) n += g.kind == kind ? 1 : 0;
    EXPECT_EQ(n, 18) << chat_template_name(kind);
  }
}

}  // namespace chat_template_golden_test
}  // namespace tessera::serve
