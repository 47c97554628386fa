// Which chat template a model is served with (its own Jinja template, a --chat-template NAME or
// FILE, the built-in fallbacks) and rendering through it.
#include "tessera/serve/model_chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "test_util.h"

namespace tessera::serve {
namespace model_chat_template_test {

// TinyLlama-1.1B-Chat's (zephyr-style) template, which no built-in family matches.
constexpr const char* kZephyr =
    "{% for message in messages %}\n"
    "{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
    "{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n"
    "{{ '<|assistant|>' }}\n"
    "{% endif %}\n"
    "{% endfor %}";

model::Metadata with_template(const std::string& source) {
  model::Metadata md;
  md.set("tokenizer.chat_template", model::GgufValue::string(source));
  return md;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ModelChatTemplate, TheModelsOwnTemplateIsRendered) {
  auto t = resolve_model_chat_template(with_template(kZephyr), {});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_TRUE(t->jinja != nullptr);
  EXPECT_FALSE(t->builtin.has_value());
  EXPECT_TRUE(t->note.empty());
  auto text = render_model_chat(*t, kConversation, true, "<s>", "</s>", std::tm{});
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  // As jinja2 renders it with HF's settings (checked with /usr/bin/python3 + python3-jinja2).
  EXPECT_EQ(*text,
            "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello.</s>\n"
            "<|user|>\nBye</s>\n<|assistant|>\n");
}

TEST(ModelChatTemplate, OverridesWin) {
  const auto md = with_template(kZephyr);
  ChatTemplateOverride by_name;
  by_name.name = "chatml";
  auto t = resolve_model_chat_template(md, by_name);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->jinja, nullptr);
  EXPECT_EQ(t->builtin, ChatTemplateKind::kChatML);
  EXPECT_EQ(*render_model_chat(*t, kConversation, true, "", "", std::tm{}),
            *render_chat(ChatTemplateKind::kChatML, kConversation, true, "", ""));

  ChatTemplateOverride file;
  file.file = "x.jinja";
  file.jinja_source = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}";
  t = resolve_model_chat_template(model::Metadata(), file);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->origin, "file x.jinja");
  EXPECT_EQ(*render_model_chat(*t, kConversation, true, "", "", std::tm{}),
            "[system:Be brief.][user:Hi][assistant:Hello.][user:Bye]");

  file.jinja_source = "ok\n{% if x %}never closed";
  auto bad = resolve_model_chat_template(md, file);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("x.jinja"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();

  ChatTemplateOverride bad_name;
  bad_name.name = "gpt";
  EXPECT_EQ(resolve_model_chat_template(md, bad_name).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(ModelChatTemplate, NoTemplateAsksForTheFlag) {
  auto t = resolve_model_chat_template(model::Metadata(), {});
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(t.status().message().find("--chat-template NAME|FILE"), std::string::npos);
}

TEST(ModelChatTemplate, RefusedTemplatesFallBackToTheRecognizedFamily) {
  // A ChatML template with a statement outside the subset: refused at parse, rendered as chatml.
  const std::string refused_at_parse =
      "{% include 'x' %}{% for m in messages %}{{ '<|im_start|>' + m.role }}{% endfor %}";
  auto t = resolve_model_chat_template(with_template(refused_at_parse), {});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->jinja, nullptr);
  EXPECT_EQ(t->builtin, ChatTemplateKind::kChatML);
  EXPECT_NE(t->note.find("include"), std::string::npos) << t->note;

  // Refused at render (a filter outside the subset): the fallback renders that request.
  const std::string refused_at_render =
      "{% for m in messages %}{{ '<|im_start|>' + m.role | truncate(3) }}{% endfor %}";
  t = resolve_model_chat_template(with_template(refused_at_render), {});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_NE(t->jinja, nullptr);
  bool used_fallback = false;
  auto text = render_model_chat(*t, kConversation, true, "", "", std::tm{}, &used_fallback);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_TRUE(used_fallback);
  EXPECT_EQ(*text, *render_chat(ChatTemplateKind::kChatML, kConversation, true, "", ""));

  // Refused and of no known family: an error naming the construct.
  auto none = resolve_model_chat_template(with_template("{% include 'x' %}"), {});
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(none.status().message().find("include"), std::string::npos);
}

TEST(ModelChatTemplate, TemplateErrorsReachTheCaller) {
  auto t = resolve_model_chat_template(
      with_template("{{ raise_exception('Conversation roles must alternate') }}"), {});
  ASSERT_TRUE(t.is_ok());
  auto text = render_model_chat(*t, kConversation, true, "", "", std::tm{});
  ASSERT_FALSE(text.is_ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("Conversation roles must alternate"), std::string::npos);
}

// Two independent renderers of one template must agree: the interpreter over the official
// Phi-3.5-mini template and the hand-written phi3 family (golden-tested against jinja2).
TEST(ModelChatTemplate, InterpreterAgreesWithTheBuiltinOnPhi35) {
  TS_SKIP_WITHOUT_SHARED(path, "templates/microsoft-Phi-3.5-mini-instruct.jinja");
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  auto t = resolve_model_chat_template(with_template(ss.str()), {});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_NE(t->jinja, nullptr);
  for (bool gen : {true, false}) {
    auto a = render_model_chat(*t, kConversation, gen, "<s>", "<|endoftext|>", std::tm{});
    auto b = render_chat(ChatTemplateKind::kPhi3, kConversation, gen, "<s>", "<|endoftext|>");
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_EQ(*a, *b);
  }
}

}  // namespace model_chat_template_test
}  // namespace tessera::serve
