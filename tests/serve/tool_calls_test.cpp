// Function calling: parsing outputs in each syntax, recognizing a template's syntax and whether it
// renders tools (on real templates from ../shared/templates), the forced-call schema, and
// rendering a conversation with tools and calls through a real template.
#include "tessera/serve/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tessera/engine/json_matcher.h"
#include "tessera/serve/model_chat_template.h"
#include "test_util.h"

namespace tessera::serve {
namespace tool_calls_test {

using ojson = nlohmann::ordered_json;

ToolRequest weather_tools(ToolChoice choice = ToolChoice::kAuto) {
  ToolRequest t;
  t.tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                    "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])");
  t.functions.push_back({"get_weather", t.tools[0]["function"]["parameters"]});
  t.functions.push_back({"get_time", ojson::object()});
  t.choice = choice;
  return t;
}

TEST(ToolCalls, HermesBlocksBecomeCallsAndTheRestContent) {
  const ToolRequest tools = weather_tools();
  auto p = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
      "{}}\n</tool_call>",
      ToolCallSyntax::kHermes, tools);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // the model's key order
  EXPECT_TRUE(p.calls[0].id.starts_with("call_"));
  EXPECT_EQ(p.calls[0].id.size(), 5u + 24u);
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_EQ(p.content, "Let me check.");
}

TEST(ToolCalls, HermesEdgeCases) {
  const ToolRequest tools = weather_tools();
  // An unclosed last block (stopped at EOS) still counts; arguments as JSON text are accepted.
  auto p = parse_tool_calls(
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}",
      ToolCallSyntax::kHermes, tools);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.content, "");
  // An undeclared function, broken JSON or non-object arguments are not calls: text stays.
  for (const char* bad :
       {"<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {</tool_call>",
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": [1]}</tool_call>",
        "<tool_call>[]</tool_call>", "plain text, no call"}) {
    auto q = parse_tool_calls(bad, ToolCallSyntax::kHermes, tools);
    EXPECT_TRUE(q.calls.empty()) << bad;
    EXPECT_EQ(q.content, bad);
  }
  // Without any block the whole output may still be a bare call (the marker was a special token).
  auto bare = parse_tool_calls(" {\"name\": \"get_time\", \"arguments\": {}} ", ToolCallSyntax::kHermes, tools);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].name, "get_time");
}

TEST(ToolCalls, MistralAndJsonSyntaxes) {
  const ToolRequest tools = weather_tools();
  auto m = parse_tool_calls(
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, "
      "{\"name\": \"get_time\", \"arguments\": {}}]",
      ToolCallSyntax::kMistral, tools);
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(m.content, "");
  // Llama 3.1 writes "parameters", sometimes after <|python_tag|>.
  auto j = parse_tool_calls("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}",
                            ToolCallSyntax::kJson, tools);
  ASSERT_EQ(j.calls.size(), 1u);
  EXPECT_EQ(j.calls[0].arguments, R"({"city":"Lima"})");
  // A JSON object that is not a call is content.
  auto text = parse_tool_calls("{\"answer\": 42}", ToolCallSyntax::kJson, tools);
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.content, "{\"answer\": 42}");
  // One bad element spoils an array: nothing is half-parsed.
  auto half = parse_tool_calls("[{\"name\": \"get_time\"}, {\"name\": \"nope\"}]", ToolCallSyntax::kJson, tools);
  EXPECT_TRUE(half.calls.empty());
}

TEST(ToolCalls, ForcedSchemaAcceptsOnlyCallsOfTheChosenFunction) {
  auto accepts = [](const std::shared_ptr<const engine::JsonSchema>& s, std::string_view doc) {
    engine::JsonMatcher m(s);
    return m.feed(doc) && m.complete();
  };
  ToolRequest named = weather_tools(ToolChoice::kFunction);
  named.function = "get_weather";
  auto s = forced_call_schema(named);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_TRUE(accepts(*s, R"({"name": "get_weather", "arguments": {"city": "Oslo"}})"));
  EXPECT_TRUE(accepts(*s, R"({"arguments": {"city": "Oslo", "unit": "f"}, "name": "get_weather"})"));
  EXPECT_FALSE(accepts(*s, R"({"name": "get_time", "arguments": {"city": "Oslo"}})"));
  EXPECT_FALSE(accepts(*s, R"({"name": "get_weather", "arguments": {"unit": "c"}})"));  // city required
  EXPECT_FALSE(accepts(*s, R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "k"}})"));
  EXPECT_FALSE(accepts(*s, R"({"name": "get_weather"})"));

  // "required" with two tools: either name, any object as arguments (checked afterwards).
  auto r = forced_call_schema(weather_tools(ToolChoice::kRequired));
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(accepts(*r, R"({"name": "get_time", "arguments": {}})"));
  EXPECT_TRUE(accepts(*r, R"({"name": "get_weather", "arguments": {"x": 1}})"));
  EXPECT_FALSE(accepts(*r, R"({"name": "other", "arguments": {}})"));
  const ToolRequest t = weather_tools();
  EXPECT_TRUE(arguments_match(t.functions[0], R"({"city": "Oslo"})"));
  EXPECT_FALSE(arguments_match(t.functions[0], R"({"x": 1})"));
  EXPECT_TRUE(arguments_match(t.functions[1], R"({"x": 1})"));

  // Parameters the subset cannot enforce are refused for a forced call, naming the tool.
  ToolRequest pattern = weather_tools(ToolChoice::kFunction);
  pattern.function = "get_weather";
  pattern.functions[0].parameters = ojson::parse(R"({"type": "object", "properties": {"city": {"type": "string", "not": {"const": "x"}}}})");
  auto bad = forced_call_schema(pattern);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("tools[0].function.parameters"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("'not'"), std::string::npos) << bad.status().message();
}

TEST(ToolCalls, TemplateReadsToolsLooksAtCodeOnly) {
  EXPECT_TRUE(template_reads_tools("{% if tools %}{{ tools | tojson }}{% endif %}"));
  EXPECT_TRUE(template_reads_tools("{%- for t in tools -%}x{%- endfor %}"));
  EXPECT_FALSE(template_reads_tools("{{ 'You have no tools' }} tools <tools>"));
  EXPECT_FALSE(template_reads_tools("{{ message.tools }}{{ my_tools }}"));
  EXPECT_FALSE(template_reads_tools("{% for m in messages %}{{ m.content }}{% endfor %}"));
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolCalls, FunctionTagBlocks) {
  const ToolRequest tools = weather_tools();
  auto p = parse_tool_calls(
      "Checking.<function=get_weather>{\"city\": \"Rome\"}</function><function=get_time>{}</function>",
      ToolCallSyntax::kFunctionTag, tools);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.content, "Checking.");
  // Unclosed last block; an undeclared function and a non-object body stay text.
  auto q = parse_tool_calls("<function=get_weather>{\"city\": \"Oslo\"}", ToolCallSyntax::kFunctionTag, tools);
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.content, "");
  for (const char* bad : {"<function=nope>{}</function>", "<function=get_time>[1]</function>",
                          "<function=get_time {}</function>"}) {
    auto r = parse_tool_calls(bad, ToolCallSyntax::kFunctionTag, tools);
    EXPECT_TRUE(r.calls.empty()) << bad;
    EXPECT_EQ(r.content, bad);
  }
  // No block at all: the JSON fallback.
  auto j = parse_tool_calls(R"({"name": "get_time", "arguments": {}})", ToolCallSyntax::kFunctionTag, tools);
  EXPECT_EQ(j.calls.size(), 1u);
}

TEST(ToolCalls, XmlFunctionBlocksConvertValuesByTheDeclaredTypes) {
  ToolRequest tools = weather_tools();
  tools.functions.push_back({"book", ojson::parse(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "seats": {"type": "integer"}, "vip": {"type": "boolean"},
      "tags": {"type": "array"}, "note": {}}})")});
  auto p = parse_tool_calls(
      "I'll book it.\n<tool_call>\n<function=book>\n<parameter=name>\n42\n</parameter>\n"
      "<parameter=seats>\n3\n</parameter>\n<parameter=vip>\ntrue\n</parameter>\n"
      "<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n<parameter=note>\nwindow seat,\nplease\n"
      "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nSão Paulo\n</parameter>\n</function>\n</tool_call>",
      ToolCallSyntax::kXmlFunction, tools);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "book");
  // "42" stays a string (declared one); 3, true and the array are JSON; free text a string.
  EXPECT_EQ(p.calls[0].arguments,
            R"({"name":"42","seats":3,"vip":true,"tags":["a","b"],"note":"window seat,\nplease"})");
  EXPECT_EQ(p.calls[1].arguments, R"({"city":"São Paulo"})");
  EXPECT_EQ(p.content, "I'll book it.");
  // A stray text between parameters, or a repeated parameter, is no call.
  for (const char* bad : {"<function=get_weather>\nhello<parameter=city>\nx\n</parameter>\n</function>",
                          "<function=get_weather><parameter=city>a</parameter><parameter=city>b</parameter></function>"}) {
    auto r = parse_tool_calls(bad, ToolCallSyntax::kXmlFunction, tools);
    EXPECT_TRUE(r.calls.empty()) << bad;
  }
  // Cut off inside a parameter (no closing tags): still the call it spells.
  auto cut = parse_tool_calls("<tool_call>\n<function=get_weather>\n<parameter=city>\nLima",
                              ToolCallSyntax::kXmlFunction, tools);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].arguments, R"({"city":"Lima"})");
}

TEST(ToolCalls, FunctoolsList) {
  const ToolRequest tools = weather_tools();
  auto p = parse_tool_calls(
      "Sure. functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Kyiv\"}}, "
      "{\"name\": \"get_time\", \"arguments\": {}}]",
      ToolCallSyntax::kFunctools, tools);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Sure.");
  auto bad = parse_tool_calls("functools[{\"name\": \"nope\"}]", ToolCallSyntax::kFunctools, tools);
  EXPECT_TRUE(bad.calls.empty());
}

// The syntaxes of DeepSeek, Kimi, GLM, Apriel, Granite, Command R, LFM2 and Gemma 4 on hand-made
// outputs: text around the calls is content, a block naming an undeclared function stays text,
// an unclosed last block (stopped at EOS) still counts.
TEST(ToolCalls, MoreFamiliesSyntaxes) {
  const ToolRequest tools = weather_tools();
  struct Case {
    ToolCallSyntax syntax;
    std::string text;
    std::vector<std::string> names;
    std::string first_args;
    std::string content;
  };
  const std::vector<Case> cases = {
      {ToolCallSyntax::kDeepSeek,
       "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
       "```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>"
       "get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       {"get_weather", "get_time"}, R"({"city":"Oslo"})", "Let me check."},
      {ToolCallSyntax::kDeepSeek,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Oslo\"}",
       {"get_weather"}, R"({"city":"Oslo"})", ""},
      {ToolCallSyntax::kDsml,
       "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
       "name=\"city\" string=\"true\">New York</｜DSML｜parameter>\n<｜DSML｜parameter name=\"unit\" "
       "string=\"false\">\"f\"</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
       {"get_weather"}, R"({"city":"New York","unit":"f"})", ""},
      {ToolCallSyntax::kKimi,
       "ok <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
       "<|tool_call_argument_begin|>{\"city\": \"Rome\"}<|tool_call_end|><|tool_call_begin|>"
       "functions.nope:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
       {"get_weather"}, R"({"city":"Rome"})",
       "ok <|tool_call_begin|>functions.nope:1<|tool_call_argument_begin|>{}<|tool_call_end|>"},
      {ToolCallSyntax::kArgKey,
       "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>42</arg_value>\n</tool_call>",
       {"get_weather"}, R"({"city":"42"})", ""},  // declared a string: stays one
      {ToolCallSyntax::kToolCallsTag,
       "Sure.\n<tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>",
       {"get_time"}, "{}", "Sure."},
      {ToolCallSyntax::kGranite, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}}]",
       {"get_weather"}, R"({"city":"Bern"})", ""},
      {ToolCallSyntax::kCommandR,
       "I will look it up.\nAction: ```json\n[{\"tool_name\": \"get_weather\", \"parameters\": "
       "{\"city\": \"Lima\"}}]\n```",
       {"get_weather"}, R"({"city":"Lima"})", "I will look it up."},
      {ToolCallSyntax::kPythonic,
       "<|tool_call_start|>[get_weather(city='It\\'s here', unit=\"c\"), get_time()]<|tool_call_end|>done",
       {"get_weather", "get_time"}, R"({"city":"It's here","unit":"c"})", "done"},
      {ToolCallSyntax::kGemma4,
       "<|tool_call>call:get_weather{city:<|\"|>São Paulo, {x}<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>",
       {"get_weather"}, R"({"city":"São Paulo, {x}","unit":"c"})", ""},
  };
  for (const Case& c : cases) {
    const ParsedToolOutput p = parse_tool_calls(c.text, c.syntax, tools);
    ASSERT_EQ(p.calls.size(), c.names.size()) << tool_call_syntax_name(c.syntax) << ": " << c.text;
    for (size_t i = 0; i < c.names.size(); ++i) EXPECT_EQ(p.calls[i].name, c.names[i]);
    EXPECT_EQ(p.calls[0].arguments, c.first_args) << tool_call_syntax_name(c.syntax);
    EXPECT_EQ(p.content, c.content) << tool_call_syntax_name(c.syntax);
  }
  // Model output is untrusted: truncations and mutations of every case, parsed in every syntax,
  // never crash (the sanitizer builds run this) and never invent an undeclared function.
  std::mt19937 rng(3);
  for (const Case& c : cases) {
    for (int i = 0; i < 300; ++i) {
      std::string t = c.text;
      std::uniform_int_distribution<size_t> at(0, t.size());
      if (i % 3 == 0) {
        t.resize(at(rng));  // stopped anywhere
      } else if (i % 3 == 1) {
        t.erase(std::min(at(rng), t.size() - 1), 1);
      } else {
        const size_t a = at(rng), b = at(rng);
        t.insert(a, t.substr(b, 7));  // a piece repeated elsewhere
      }
      for (int s = 0; s <= static_cast<int>(ToolCallSyntax::kGigaChat); ++s) {
        const ParsedToolOutput p = parse_tool_calls(t, static_cast<ToolCallSyntax>(s), tools);
        for (const ToolCall& call : p.calls) {
          ASSERT_NE(tools.find(call.name), nullptr) << t;
          ASSERT_TRUE(ojson::parse(call.arguments).is_object()) << t;
        }
      }
    }
  }
  // No block: the JSON fallback; a malformed block stays text.
  EXPECT_EQ(parse_tool_calls("plain text", ToolCallSyntax::kKimi, tools).content, "plain text");
  const auto bad = parse_tool_calls("<|tool_call_start|>[get_weather(city=)]<|tool_call_end|>",
                                    ToolCallSyntax::kPythonic, tools);
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "<|tool_call_start|>[get_weather(city=)]<|tool_call_end|>");
}

TEST(ToolCalls, RealTemplatesSyntaxAndToolSupport) {
  TS_SKIP_WITHOUT_SHARED(dir, "templates");
  struct Case {
    const char* file;
    bool reads_tools;
    ToolCallSyntax syntax;
  };
  for (const Case& c : {Case{"Qwen-Qwen2.5-7B-Instruct.jinja", true, ToolCallSyntax::kHermes},
                        Case{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", true, ToolCallSyntax::kHermes},
                        Case{"Mistral-Small-3.2-24B-Instruct-2506.jinja", true, ToolCallSyntax::kMistral},
                        Case{"meta-llama-Llama-3.1-8B-Instruct.jinja", true, ToolCallSyntax::kJson},
                        Case{"meetkai-functionary-medium-v3.1.jinja", true, ToolCallSyntax::kFunctionTag},
                        Case{"Qwen3-Coder.jinja", true, ToolCallSyntax::kXmlFunction},
                        Case{"Qwen3.5-4B.jinja", true, ToolCallSyntax::kXmlFunction},
                        Case{"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", true, ToolCallSyntax::kXmlFunction},
                        Case{"fireworks-ai-llama-3-firefunction-v2.jinja", false, ToolCallSyntax::kFunctools},
                        Case{"Qwen-Qwen3-0.6B.jinja", true, ToolCallSyntax::kHermes},
                        Case{"google-gemma-2-2b-it.jinja", false, ToolCallSyntax::kJson},
                        Case{"deepseek-ai-DeepSeek-V3.1.jinja", false, ToolCallSyntax::kDeepSeek},
                        Case{"deepseek-ai-DeepSeek-V3.2.jinja", true, ToolCallSyntax::kDsml},
                        Case{"deepseek-ai-DeepSeek-V4.jinja", true, ToolCallSyntax::kDsml},
                        Case{"moonshotai-Kimi-K2.jinja", true, ToolCallSyntax::kKimi},
                        Case{"GLM-4.7-Flash.jinja", true, ToolCallSyntax::kArgKey},
                        Case{"Apriel-1.6-15b-Thinker-fixed.jinja", true, ToolCallSyntax::kToolCallsTag},
                        Case{"ibm-granite-granite-3.3-2B-Instruct.jinja", true, ToolCallSyntax::kGranite},
                        Case{"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", true, ToolCallSyntax::kCommandR},
                        Case{"LFM2.5-8B-A1B.jinja", true, ToolCallSyntax::kPythonic},
                        Case{"google-gemma-4-31B-it.jinja", true, ToolCallSyntax::kGemma4},
                        Case{"ByteDance-Seed-OSS.jinja", true, ToolCallSyntax::kXmlFunction}}) {
    const auto path = dir / c.file;
    if (!std::filesystem::exists(path)) continue;
    const std::string src = read_text(path);
    EXPECT_EQ(template_reads_tools(src), c.reads_tools) << c.file;
    EXPECT_EQ(detect_tool_call_syntax(src), c.syntax) << c.file;
  }
}

// Every real template that renders tools and calls, round trip: the assistant turn the template
// renders for two calls (what a model trained on it writes) parses back, in the syntax detected
// from the template, into the same two calls. The assistant's text is the full rendering less
// the part it shares with the rendering of the conversation before it with the generation prompt.
TEST(ToolCalls, EveryRealTemplatesRenderedCallsParseBack) {
  TS_SKIP_WITHOUT_SHARED(dir, "templates");
  ToolRequest tools = weather_tools();
  // Every field some template reads: descriptions, parameters (even empty ones).
  tools.tools[1]["function"]["description"] = "The time now";
  tools.tools[1]["function"]["parameters"] = ojson::parse(R"({"type": "object", "properties": {}})");
  std::vector<ChatMessage> before = {{"system", "You are helpful."},
                                     {"user", "Weather in Paris, and the time?"}};
  // Call ids of nine letters and digits (what Mistral's templates insist on).
  const ojson two_calls = ojson::parse(
      R"([{"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}},
          {"id": "call00002", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}])");
  // Templates that refuse or drop a second call (Llama 3.x, GigaChat) are checked with one.
  const std::vector<std::string> unsupported = {
      "MiniMax-M3.jinja",  // calls in namespace tokens (]<]minimax[>[...): not parsed, stay text
  };
  std::tm now{};
  int checked = 0;
  std::vector<std::string> not_checked, failed;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string file = entry.path().filename().string();
    ChatTemplateOverride o;
    o.file = entry.path().string();
    o.jinja_source = read_text(entry.path());
    auto t = resolve_model_chat_template(model::Metadata{}, o);
    if (!t.is_ok() || !t->reads_tools) continue;
    if (std::find(unsupported.begin(), unsupported.end(), file) != unsupported.end()) continue;
    auto prefix = render_model_chat(*t, before, true, "<s>", "</s>", now, nullptr, &tools.tools);
    if (!prefix.is_ok()) {
      not_checked.push_back(file + " (" + prefix.status().message() + ")");
      continue;
    }
    // The assistant turn with `calls`: the rendering past where it parts from the prompt's
    // (some templates render the last user turn or the header differently once an assistant
    // turn follows), not inside a tag (a generation prompt may open with the call's first
    // characters).
    auto turn_with = [&](const ojson& calls) -> Result<std::string> {
      std::vector<ChatMessage> after = before;
      after.push_back({"assistant", ""});
      after.back().tool_calls = calls;
      TS_ASSIGN_OR_RETURN(std::string full, render_model_chat(*t, after, false, "<s>", "</s>", now,
                                                              nullptr, &tools.tools));
      size_t common = 0;
      while (common < prefix->size() && common < full.size() && (*prefix)[common] == full[common]) {
        ++common;
      }
      while (common > 0 && full[common - 1] != '\n' && full[common - 1] != '>') --common;
      return full.substr(common);
    };
    size_t n_calls = 2;
    Result<std::string> rendered = turn_with(two_calls);
    if (!rendered.is_ok() || rendered->find("get_time") == std::string::npos) {
      n_calls = 1;  // the template refuses or drops a second call
      rendered = turn_with(ojson::array({two_calls[0]}));
    }
    if (!rendered.is_ok()) {
      not_checked.push_back(file + " (" + rendered.status().message() + ")");
      continue;
    }
    const std::string turn = *rendered;
    if (turn.find("get_weather") == std::string::npos) {
      not_checked.push_back(file);  // the template drops the calls of a turn
      continue;
    }
    ++checked;
    const ParsedToolOutput p = parse_tool_calls(turn, t->tool_syntax, tools);
    const bool same =
        p.calls.size() == n_calls && p.calls[0].name == "get_weather" &&
        ojson::parse(p.calls[0].arguments) == ojson::parse(R"({"city": "Paris", "unit": "c"})") &&
        (n_calls == 1 ||
         (p.calls[1].name == "get_time" && ojson::parse(p.calls[1].arguments) == ojson::object()));
    if (!same) {
      failed.push_back(file + " (" + std::string(tool_call_syntax_name(t->tool_syntax)) + "): " +
                       std::to_string(p.calls.size()) + " calls from:\n" + turn);
    }
  }
  std::string skipped;
  for (const auto& f : not_checked) skipped += " " + f;
  std::printf("%d templates round-tripped; not checked:%s\n", checked, skipped.c_str());
  EXPECT_GE(checked, 35);
  for (const auto& f : failed) ADD_FAILURE() << f;
}

// A conversation with tools, an assistant call (arguments as the JSON text OpenAI clients send)
// and the tool's answer, through Qwen2.5's own template: the call is rendered with its arguments
// as an object (HF's convention), as jinja2 renders it (this text is the template's own format).
TEST(ToolCalls, QwenTemplateRendersToolsAndCalls) {
  TS_SKIP_WITHOUT_SHARED(path, "templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  ChatTemplateOverride o;
  o.file = path.string();
  o.jinja_source = read_text(path);
  auto t = resolve_model_chat_template(model::Metadata{}, o);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_TRUE(t->reads_tools);
  EXPECT_EQ(t->tool_syntax, ToolCallSyntax::kHermes);
  const ToolRequest tools = weather_tools();
  std::vector<ChatMessage> messages = {{"user", "Weather in Paris?"}, {"assistant", ""}, {"tool", "18 C"}};
  messages[1].tool_calls = ojson::parse(
      R"([{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}])");
  messages[2].tool_call_id = "call_1";
  std::tm now{};
  auto text = render_model_chat(*t, messages, true, "", "<|im_end|>", now, nullptr, &tools.tools);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_NE(text->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                       "\"description\": \"Weather in a city\""),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<tool_response>\n18 C\n</tool_response>"), std::string::npos) << *text;
  EXPECT_TRUE(text->ends_with("<|im_start|>assistant\n")) << *text;

  // A template that does not read tools refuses them instead of dropping them.
  ChatTemplateOverride plain;
  plain.file = "plain.jinja";
  plain.jinja_source = "{% for m in messages %}{{ m.content }}{% endfor %}";
  auto p = resolve_model_chat_template(model::Metadata{}, plain);
  ASSERT_TRUE(p.is_ok());
  auto refused = render_model_chat(*p, messages, true, "", "", now, nullptr, &tools.tools);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("does not render tools"), std::string::npos);
}

}  // namespace tool_calls_test
}  // namespace tessera::serve
