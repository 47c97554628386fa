// Chat templates: names, recognition of GGUF templates by their markers, argument checks, and
// resolution from model metadata (including the real vocabulary files in ../shared). The
// renderings themselves are checked against golden outputs in chat_template_golden_test.cpp.
#include "tessera/serve/chat_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/model/format/model_file.h"
#include "test_util.h"

namespace tessera::serve {
namespace chat_template_test {
TEST(ChatTemplate, NamesRoundTrip) {
  for (ChatTemplateKind kind :
       {ChatTemplateKind::kLlama2, ChatTemplateKind::kLlama3, ChatTemplateKind::kChatML,
        ChatTemplateKind::kMistral, ChatTemplateKind::kPhi3, ChatTemplateKind::kGemma}) {
    auto back = chat_template_from_name(chat_template_name(kind));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, kind);
    EXPECT_NE(chat_template_names().find(chat_template_name(kind)), std::string_view::npos);
  }
}

TEST(ChatTemplate, UnknownNameListsTheValidOnes) {
  for (std::string_view bad : {"", "Llama3", "qwen", "llama-3", "chatml "}) {
    auto r = chat_template_from_name(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("llama2, llama3, chatml, mistral, phi3, gemma"),
              std::string::npos)
        << r.status().message();
  }
}

// Detection sees only marker substrings, so short stand-ins carrying a family's markers (not the
// real templates, which stay out of the repository) exercise it; the real Phi-3 template is
// checked below from the shared vocabulary file.
TEST(ChatTemplate, DetectsFamiliesByTheirMarkers) {
  struct Case {
    std::string_view source;
    ChatTemplateKind kind;
  };
  const Case cases[] = {
      {"{{ '<|im_start|>' + message['role'] }}", ChatTemplateKind::kChatML},
      {"{{ bos_token + '[INST] ' }}{% set c = '<<SYS>>\\n' %}", ChatTemplateKind::kLlama2},
      {"{{ '[INST] ' + message['content'] + ' [/INST]' }}", ChatTemplateKind::kMistral},
      {"{{- ' [INST] ' + system_message }}", ChatTemplateKind::kMistral},
      {"{{- \"[AVAILABLE_TOOLS][\" }}{{- \"[INST]\" }}", ChatTemplateKind::kMistral},
      {"'<|start_header_id|>' + message['role'] + '<|end_header_id|>'", ChatTemplateKind::kLlama3},
      {"{{'<|user|>\\n'}}{{'<|assistant|>\\n'}}{{'<|end|>'}}", ChatTemplateKind::kPhi3},
      {"{{'<|' + message['role'] + '|>'}}{{'<|end|>'}}{{'<|assistant|>'}}",
       ChatTemplateKind::kPhi3},
      {"{{ '<start_of_turn>' + role }}", ChatTemplateKind::kGemma},
  };
  for (const Case& c : cases) {
    auto r = detect_chat_template(c.source);
    ASSERT_TRUE(r.is_ok()) << c.source << ": " << r.status().to_string();
    EXPECT_EQ(*r, c.kind) << c.source;
  }
}

TEST(ChatTemplate, RefusesOtherFamiliesWithAHint) {
  for (std::string_view source :
       {"{{'<|im_start|>system<|im_sep|>'}}",            // Phi-4
        "[SYSTEM_PROMPT]{{ '[INST] ' }}",                 // Mistral v7
        "<|header_start|>user<|header_end|>",             // Llama 4
        "{{ 'USER: ' + message['content'] }}",            // Vicuna
        "{{ message['content'] }}"}) {
    auto r = detect_chat_template(source);
    ASSERT_FALSE(r.is_ok()) << source;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(r.status().message().find("--chat-template"), std::string::npos);
  }
  auto empty = detect_chat_template("");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), ErrorCode::kNotFound);
}

TEST(ChatTemplate, RejectsEmptyConversationsAndUnknownRoles) {
  auto empty = render_chat(ChatTemplateKind::kChatML, {}, true, "", "");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);

  for (std::string_view role : {"tool", "function", "User", "", "model"}) {
    const std::vector<ChatMessage> msgs = {{"user", "hi"}, {std::string(role), "x"}};
    for (ChatTemplateKind kind : {ChatTemplateKind::kLlama3, ChatTemplateKind::kChatML,
                                  ChatTemplateKind::kPhi3, ChatTemplateKind::kGemma}) {
      auto r = render_chat(kind, msgs, true, "<s>", "</s>");
      ASSERT_FALSE(r.is_ok()) << role;
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("message 1 has role '" + std::string(role) + "'"),
                std::string::npos)
          << r.status().message();
    }
  }
}

TEST(ChatTemplate, ContentWithMalformedUtf8IsKeptAndTrimmedAroundIt) {
  // Python strings are never malformed, so there is no reference for this: the point is that
  // trimming stops at bytes that are not whitespace instead of reading past them.
  const std::vector<ChatMessage> msgs = {{"user", " \xe2\x80 \xff\t"}};
  auto r = render_chat(ChatTemplateKind::kLlama3, msgs, false, "", "");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "<|start_header_id|>user<|end_header_id|>\n\n\xe2\x80 \xff<|eot_id|>");
}

TEST(ChatTemplate, WritesBosForTheFamiliesWhoseTemplatesDo) {
  EXPECT_TRUE(chat_template_writes_bos(ChatTemplateKind::kLlama2));
  EXPECT_TRUE(chat_template_writes_bos(ChatTemplateKind::kLlama3));
  EXPECT_TRUE(chat_template_writes_bos(ChatTemplateKind::kMistral));
  EXPECT_TRUE(chat_template_writes_bos(ChatTemplateKind::kGemma));
  EXPECT_FALSE(chat_template_writes_bos(ChatTemplateKind::kChatML));
  EXPECT_FALSE(chat_template_writes_bos(ChatTemplateKind::kPhi3));
}

TEST(ResolveChatTemplate, MissingTemplateAsksForTheFlag) {
  model::Metadata md;
  md.set("general.architecture", model::GgufValue::string("llama"));
  auto r = resolve_chat_template(md, "");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "model has no tokenizer.chat_template; pass --chat-template NAME (one of llama2, "
            "llama3, chatml, mistral, phi3, gemma)");
}

TEST(ResolveChatTemplate, OverrideWinsOverTheFile) {
  model::Metadata md;
  md.set("tokenizer.chat_template", model::GgufValue::string("{{ '<|im_start|>' }}"));
  auto detected = resolve_chat_template(md, "");
  ASSERT_TRUE(detected.is_ok()) << detected.status().to_string();
  EXPECT_EQ(*detected, ChatTemplateKind::kChatML);
  auto forced = resolve_chat_template(md, "gemma");
  ASSERT_TRUE(forced.is_ok()) << forced.status().to_string();
  EXPECT_EQ(*forced, ChatTemplateKind::kGemma);
  // An override also works without any template in the file, and a bad one is refused.
  EXPECT_EQ(*resolve_chat_template(model::Metadata(), "llama3"), ChatTemplateKind::kLlama3);
  EXPECT_EQ(resolve_chat_template(md, "gpt").status().code(), ErrorCode::kInvalidArgument);
}

TEST(ResolveChatTemplate, BadValuesAreErrorsNamingTheKey) {
  model::Metadata md;
  md.set("tokenizer.chat_template", model::GgufValue::u32(7));
  auto wrong_type = resolve_chat_template(md, "");
  ASSERT_FALSE(wrong_type.is_ok());
  EXPECT_EQ(wrong_type.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong_type.status().message().find("tokenizer.chat_template"), std::string::npos);

  md.set("tokenizer.chat_template", model::GgufValue::string("{{ 'USER: ' }}"));
  auto unknown = resolve_chat_template(md, "");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(unknown.status().message().find("tokenizer.chat_template"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("--chat-template"), std::string::npos);
}

// The Phi-3 vocabulary from llama.cpp carries the original Phi-3-mini chat template.
TEST(ResolveChatTemplate, Phi3VocabularyFileIsRecognized) {
  TS_SKIP_WITHOUT_SHARED(path, "tokenizers/ggml-vocab-phi-3.gguf");
  auto file = model::open_model_file(path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  auto kind = resolve_chat_template(file->metadata, "");
  ASSERT_TRUE(kind.is_ok()) << kind.status().to_string();
  EXPECT_EQ(*kind, ChatTemplateKind::kPhi3);
}

// The other vocabularies have no template: the chat route must get the clear error.
TEST(ResolveChatTemplate, VocabulariesWithoutTemplateGiveTheClearError) {
  for (std::string_view name : {"llama-spm", "gpt-2", "falcon", "starcoder", "deepseek-coder"}) {
    const std::string rel = "tokenizers/ggml-vocab-" + std::string(name) + ".gguf";
    TS_SKIP_WITHOUT_SHARED(path, rel);
    auto file = model::open_model_file(path.string());
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    auto kind = resolve_chat_template(file->metadata, "");
    ASSERT_FALSE(kind.is_ok()) << name;
    EXPECT_EQ(kind.status().code(), ErrorCode::kNotFound) << name;
    EXPECT_NE(kind.status().message().find("--chat-template NAME"), std::string::npos);
  }
}

}  // namespace chat_template_test
}  // namespace tessera::serve
